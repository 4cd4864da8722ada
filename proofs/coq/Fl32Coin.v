(** * The code's float32 coin: [u < fl32(p / q)], with Flocq.

    Engines compute the ratio [p / q] in float32 (rounded to nearest, ties to
    even) and accept when [u < fl32(p / q)] for a coin [u] on the grid
    [k * 2^-24], [0 <= k < 2^24] (FloatGrid.v: these are binary32 floats).  Here
    the engine's test is the float comparison itself ([Bcompare] of the grid
    float with Flocq's [Bdiv]), counted over the grid:

    - [fl32_count_bound]: for binary32 [p >= 0] and [q > 0] (finite, any
      magnitude: overflow of the quotient to +infinity included), writing
      [p = a 2^-149], [q = b 2^-149] ([a], [b] naturals), the number [c] of grid
      points [u] with [u < fl32(p / q)] is [2^24] when [b <= a] (so [p / q >= 1]),
      and otherwise [c b < 2^24 a + b] and [2^24 a < c b + b], that is
      [|c / 2^24 - p / q| < 2^-24].

    Fl32Verifier.v turns this into the coin's probability over any
    [numFieldType] and the per-position total variation bound.

    Over Coq's standard reals: [Print Assumptions] lists their axioms (and
    classical logic), and the check allows exactly those (FloatGrid.axioms). *)

From Coq Require Import Reals ZArith Lia Lra.
From Flocq Require Import Core IEEE754.BinarySingleNaN.
From SpecProof Require Import FloatGrid.

Open Scope R_scope.

(** The float32 quotient, rounded to nearest (ties to even), as engines
    compute [p / q]. *)
Definition fl32_div (p q : binary32) : binary32 :=
  @Bdiv 24 128 prec_gt_0_32 prec_lt_emax_32 mode_NE p q.

(** The float comparison [u < r] (false when either is NaN). *)
Definition fl32_lt (u r : binary32) : bool :=
  match Bcompare u r with Some Lt => true | _ => false end.

(** The engine's test at the [k]-th grid point of the coin. *)
Definition fl32_below (p q : binary32) (k : nat) : bool :=
  fl32_lt (grid_float (Z.of_nat k)) (fl32_div p q).

(** The number of [k < n] with [f k]. *)
Fixpoint count_below (f : nat -> bool) (n : nat) : nat :=
  match n with
  | O => O
  | S n' => (count_below f n' + (if f n' then 1 else 0))%nat
  end.

(** The grid's size, [2^24] (never computed in unary). *)
Definition grid_size : nat := Nat.pow 2 24.
Arguments grid_size : simpl never.

(** A finite binary32 value in units of the smallest subnormal [2^-149]. *)
Definition units (x : binary32) : Z :=
  match x with
  | B754_finite s m e _ => (cond_Zopp s (Zpos m) * 2 ^ (e + 149))%Z
  | _ => 0%Z
  end.

(** Finite, and non-negative or positive. *)
Definition nonneg_float (x : binary32) : Prop := is_finite x = true /\ 0 <= B2R x.
Definition pos_float (x : binary32) : Prop := is_finite x = true /\ 0 < B2R x.

Lemma count_below_le f n : (count_below f n <= n)%nat.
Proof. induction n as [|n IH]; simpl; [lia | destruct (f n); lia]. Qed.

Lemma count_below_all f n : (forall k, (k < n)%nat -> f k = true) -> count_below f n = n.
Proof.
induction n as [|n IH]; intros h; simpl; [reflexivity |].
rewrite IH by (intros k hk; apply h; lia). rewrite (h n) by lia. lia.
Qed.

Lemma count_below_upper f n b X :
  (0 < b)%nat -> (forall k, (k < n)%nat -> f k = true -> (k * b < X)%nat) ->
  (count_below f n * b < X + b)%nat.
Proof.
intros hb. induction n as [|n IH]; intros h; simpl; [lia |].
destruct (f n) eqn:fn.
- pose proof (h n (Nat.lt_succ_diag_r n) fn) as hn. pose proof (count_below_le f n).
  assert (count_below f n * b <= n * b)%nat by (apply Nat.mul_le_mono_r; lia). nia.
- rewrite Nat.add_0_r. apply IH. intros k hk; apply h; lia.
Qed.

Lemma count_below_lower f n b X :
  (forall k, (k < n)%nat -> (S k * b <= X)%nat -> f k = true) ->
  (X < S (count_below f n) * b)%nat \/ count_below f n = n.
Proof.
induction n as [|n IH]; intros h; simpl; [right; reflexivity |].
assert (IH' := IH (fun k hk => h k (Nat.lt_lt_succ_r _ _ hk))).
destruct (Nat.le_gt_cases (S n * b) X) as [le|gt].
- rewrite (h n (Nat.lt_succ_diag_r n) le). destruct IH' as [l|r]; [left; nia | right; lia].
- left. destruct IH' as [l|r].
  + destruct (f n); nia.
  + rewrite r. destruct (f n); nia.
Qed.

Lemma grid_size_pos : (0 < grid_size)%nat.
Proof. unfold grid_size. apply Nat.neq_0_lt_0, Nat.pow_nonzero. lia. Qed.

Lemma grid_size_Z : Z.of_nat grid_size = (2 ^ 24)%Z.
Proof. unfold grid_size. rewrite Nat2Z.inj_pow. reflexivity. Qed.

Lemma grid_size_R : INR grid_size = bpow radix2 24.
Proof. rewrite INR_IZR_INZ, grid_size_Z. reflexivity. Qed.

Lemma units_B2R x : is_finite x = true -> B2R x = IZR (units x) * bpow radix2 (-149).
Proof.
destruct x as [s|s| |s m e H]; simpl; try discriminate; intros _.
- lra.
- assert (emin : (-149 <= e)%Z).
  { unfold SpecFloat.bounded, SpecFloat.canonical_mantissa in H. apply andb_prop in H.
    destruct H as [H1 _]. apply Zeq_bool_eq in H1. unfold SpecFloat.fexp, SpecFloat.emin in H1. lia. }
  unfold F2R; simpl. rewrite mult_IZR.
  change (2 ^ (e + 149))%Z with (Zpower radix2 (e + 149)). rewrite IZR_Zpower by lia.
  assert (bpow radix2 e = bpow radix2 (e + 149) * bpow radix2 (-149)) as ->
    by (rewrite <- bpow_plus; f_equal; lia).
  change (/ IZR (Z.pow_pos 2 149)) with (bpow radix2 (-149)). ring.
Qed.

(** ** The rounding *)

Local Notation fexp32 := (SpecFloat.fexp 24 128).
Local Notation rnd := (round radix2 fexp32 (round_mode mode_NE)).
Local Instance prec_gt_0_32_inst : Prec_gt_0 24 := prec_gt_0_32.
Local Instance fexp32_valid : Valid_exp fexp32 := FLT_exp_valid (SpecFloat.emin 24 128) 24.

Lemma rnd_le x y : x <= y -> rnd x <= rnd y.
Proof.
intros h. exact (@round_le radix2 fexp32 fexp32_valid (round_mode mode_NE) (valid_rnd_round_mode mode_NE) x y h).
Qed.

Lemma format_1 : generic_format radix2 fexp32 1.
Proof.
apply generic_format_FLT, (FLT_spec _ _ _ _ (Float radix2 1 0)).
- unfold F2R; simpl; ring.
- simpl; lia.
- simpl; unfold SpecFloat.emin; lia.
Qed.

Lemma grid_value k : (0 <= k <= 2 ^ 24)%Z ->
  generic_format radix2 fexp32 (IZR k * bpow radix2 (-24)).
Proof.
intros hk. destruct (Z.eq_dec k (2 ^ 24)) as [->|ne].
- change (2 ^ 24)%Z with (Zpower radix2 24). rewrite IZR_Zpower by lia.
  rewrite <- bpow_plus. exact format_1.
- apply generic_format_FLT, (FLT_spec _ _ _ _ (Float radix2 k (-24))).
  + reflexivity.
  + simpl. rewrite Z.abs_eq by lia. lia.
  + simpl. unfold SpecFloat.emin. lia.
Qed.

Lemma pos_sign (x : binary32) : 0 < B2R x -> Bsign x = false.
Proof.
destruct x as [s|s| |s m e H]; simpl; intros h; try lra.
destruct s; [exfalso | reflexivity].
pose proof (F2R_lt_0 radix2 (Float radix2 (Zneg m) e) (Pos2Z.neg_is_neg m)) as n.
simpl in n, h. lra.
Qed.

Lemma grid_point k : (k < grid_size)%nat ->
  is_finite (grid_float (Z.of_nat k)) = true /\
  B2R (grid_float (Z.of_nat k)) = INR k / INR grid_size /\
  B2R (grid_float (Z.of_nat k)) < 1.
Proof.
intros hk. assert (hz : (0 <= Z.of_nat k < 2 ^ 24)%Z).
{ rewrite <- grid_size_Z. lia. }
destruct (float32_grid_exact _ hz) as [f [v r]]. split; [exact f | split; [| apply r]].
rewrite v, grid_size_R, <- INR_IZR_INZ. unfold Rdiv. f_equal.
Qed.

Lemma grid_format k : (k <= grid_size)%nat -> generic_format radix2 fexp32 (INR k / INR grid_size).
Proof.
intros hk. assert (hz : (0 <= Z.of_nat k <= 2 ^ 24)%Z) by (rewrite <- grid_size_Z; lia).
pose proof (grid_value _ hz) as g. rewrite <- INR_IZR_INZ in g.
rewrite grid_size_R. unfold Rdiv. rewrite <- (bpow_opp radix2 24). exact g.
Qed.

Section Div.
Variables p q : binary32.
Hypotheses (Hp : nonneg_float p) (Hq : pos_float q).

Let r := B2R p / B2R q.

Lemma r_ge0 : 0 <= r.
Proof. destruct Hp, Hq. unfold r, Rdiv. apply Rmult_le_pos; [assumption | left; apply Rinv_0_lt_compat; assumption]. Qed.

Lemma rnd_r_small : r < 1 -> 0 <= rnd r <= 1.
Proof.
intros h. split.
- rewrite <- (round_0 radix2 fexp32 (round_mode mode_NE)). apply rnd_le. exact r_ge0.
- rewrite <- (round_generic radix2 fexp32 (round_mode mode_NE) 1 format_1). apply rnd_le. lra.
Qed.

Lemma div_cases :
  (is_finite (fl32_div p q) = true /\ B2R (fl32_div p q) = rnd r) \/
  (1 <= r /\ B2SF (fl32_div p q) = SpecFloat.S754_infinity false).
Proof.
destruct Hp as [fp p0], Hq as [fq q0].
pose proof (Bdiv_correct 24 128 prec_gt_0_32 prec_lt_emax_32 mode_NE p q ltac:(lra)) as H.
fold r in H. destruct (Rlt_bool_spec (Rabs (rnd r)) (bpow radix2 128)) as [h|h].
- left. destruct H as [v [f _]]. unfold fl32_div. rewrite f. split; [exact fp | exact v].
- right. assert (r1 : 1 <= r).
  { destruct (Rle_or_lt 1 r) as [l|l]; [exact l |]. exfalso.
    pose proof (rnd_r_small l) as [a b]. rewrite Rabs_pos_eq in h by exact a.
    assert (1 < bpow radix2 128) by (change 1 with (bpow radix2 0); apply bpow_lt; lia). lra. }
  split; [exact r1 |]. unfold fl32_div. rewrite H.
  assert (pp : 0 < B2R p).
  { unfold r in r1. apply Rmult_lt_reg_r with (/ B2R q). apply Rinv_0_lt_compat; lra.
    rewrite Rmult_0_l. unfold Rdiv in r1. lra. }
  rewrite (pos_sign p pp), (pos_sign q q0). reflexivity.
Qed.

Lemma below_upper k : (k < grid_size)%nat -> fl32_below p q k = true -> INR k / INR grid_size < r.
Proof.
intros hk. destruct (grid_point k hk) as [gf [gv g1]]. unfold fl32_below, fl32_lt.
destruct div_cases as [[f v]|[r1 _]]; [| intros _; lra].
destruct (Bcompare (grid_float (Z.of_nat k)) (fl32_div p q)) as [[]|] eqn:E; try discriminate.
intros _. apply (float32_lt_is_real_lt _ _ gf f) in E. rewrite v, gv in E.
destruct (Rlt_or_le (INR k / INR grid_size) r) as [l|l]; [exact l | exfalso].
assert (rnd r <= INR k / INR grid_size).
{ rewrite <- (round_generic radix2 fexp32 (round_mode mode_NE) (INR k / INR grid_size)).
  - apply rnd_le. exact l.
  - apply grid_format. lia. }
lra.
Qed.

Lemma below_lower k : (k < grid_size)%nat -> INR (S k) / INR grid_size <= r -> fl32_below p q k = true.
Proof.
intros hk l. destruct (grid_point k hk) as [gf [gv g1]]. unfold fl32_below, fl32_lt.
assert (lt : INR k / INR grid_size < INR (S k) / INR grid_size).
{ unfold Rdiv. apply Rmult_lt_compat_r.
  - apply Rinv_0_lt_compat, lt_0_INR, grid_size_pos.
  - apply lt_INR. lia. }
destruct div_cases as [[f v]|[r1 ov]].
- rewrite (Bcompare_correct _ _ _ _ gf f), v, gv, Rcompare_Lt; [reflexivity |].
  apply Rlt_le_trans with (1 := lt).
  rewrite <- (round_generic radix2 fexp32 (round_mode mode_NE) (INR (S k) / INR grid_size)).
  + apply rnd_le. exact l.
  + apply grid_format. lia.
- unfold Bcompare. rewrite ov.
  destruct (grid_float (Z.of_nat k)) as [s|s| |s m e H]; simpl in gf; try discriminate; reflexivity.
Qed.

End Div.

Lemma div_lt_cross x y z w : 0 < z -> 0 < w -> x / z < y / w -> x * w < y * z.
Proof.
intros hz hw h.
assert (e1 : x * w = (x / z) * (z * w)) by (field; lra).
assert (e2 : y * z = (y / w) * (z * w)) by (field; lra).
rewrite e1, e2. apply Rmult_lt_compat_r; [apply Rmult_lt_0_compat |]; assumption.
Qed.

Lemma div_le_cross x y z w : 0 < z -> 0 < w -> x * w <= y * z -> x / z <= y / w.
Proof.
intros hz hw h.
assert (e1 : x / z = (x * w) * / (z * w)) by (field; lra).
assert (e2 : y / w = (y * z) * / (z * w)) by (field; lra).
rewrite e1, e2. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, Rmult_lt_0_compat |]; assumption.
Qed.

(** The engine's count of grid points below [fl32(p / q)], against the exact
    ratio [p / q = a / b]. *)
Theorem fl32_count_bound p q : nonneg_float p -> pos_float q ->
  let a := Z.to_nat (units p) in let b := Z.to_nat (units q) in
  let c := count_below (fl32_below p q) grid_size in
  (0 < b)%nat /\ ((b <= a)%nat -> c = grid_size) /\
  ((a < b)%nat -> (c * b < grid_size * a + b)%nat /\ (grid_size * a < c * b + b)%nat).
Proof.
intros Hp Hq a b c. pose proof Hp as [fp p0]. pose proof Hq as [fq q0].
pose proof (bpow_gt_0 radix2 (-149)) as s0.
rewrite (units_B2R p fp) in p0. rewrite (units_B2R q fq) in q0.
assert (up : (0 <= units p)%Z).
{ apply le_IZR. apply Rmult_le_reg_r with (1 := s0). lra. }
assert (uq : (0 < units q)%Z).
{ apply lt_IZR. apply Rmult_lt_reg_r with (1 := s0). lra. }
assert (ea : INR a = IZR (units p)) by (unfold a; rewrite INR_IZR_INZ, Z2Nat.id by lia; reflexivity).
assert (eb : INR b = IZR (units q)) by (unfold b; rewrite INR_IZR_INZ, Z2Nat.id by lia; reflexivity).
assert (b0 : (0 < b)%nat) by (unfold b; lia).
assert (bR : 0 < INR b) by (apply lt_0_INR; exact b0).
assert (NR : 0 < INR grid_size) by (apply lt_0_INR, grid_size_pos).
assert (er : B2R p / B2R q = INR a / INR b).
{ assert (uqR : 0 < IZR (units q)) by (apply IZR_lt; exact uq).
  rewrite (units_B2R p fp), (units_B2R q fq), ea, eb. field. split; lra. }
assert (U : forall k, (k < grid_size)%nat -> fl32_below p q k = true -> (k * b < grid_size * a)%nat).
{ intros k hk h. pose proof (below_upper p q Hp Hq k hk h) as u. rewrite er in u.
  apply div_lt_cross in u; [| exact NR | exact bR].
  apply INR_lt. rewrite !mult_INR. lra. }
assert (L : forall k, (k < grid_size)%nat -> (S k * b <= grid_size * a)%nat -> fl32_below p q k = true).
{ intros k hk h. apply (below_lower p q Hp Hq k hk). rewrite er.
  apply div_le_cross; [exact NR | exact bR |].
  apply le_INR in h. rewrite !mult_INR in h. lra. }
pose proof grid_size_pos as N0.
split; [exact b0 | split].
- intros ba. apply count_below_all. intros k hk. apply L; [exact hk |]. nia.
- intros ab. split.
  + apply count_below_upper; [exact b0 |]. exact U.
  + destruct (count_below_lower (fl32_below p q) grid_size b (grid_size * a) L) as [l|e];
      fold c in l || fold c in e; nia.
Qed.

Lemma pos_of_units x : nonneg_float x -> (0 < Z.to_nat (units x))%nat -> pos_float x.
Proof.
intros [f x0] u. split; [exact f |]. rewrite (units_B2R x f).
apply Rmult_lt_0_compat; [apply IZR_lt; lia | apply bpow_gt_0].
Qed.

Lemma pow2_R n : INR (Nat.pow 2 n) = bpow radix2 (Z.of_nat n).
Proof.
rewrite INR_IZR_INZ, Nat2Z.inj_pow. change (Z.of_nat 2) with (radix2 : Z).
rewrite IZR_Zpower by lia. reflexivity.
Qed.

Lemma fl32_div_nonneg p q : nonneg_float p -> pos_float q ->
  is_finite (fl32_div p q) = true -> 0 <= B2R (fl32_div p q).
Proof.
intros Hp Hq f. destruct (div_cases p q Hp Hq) as [[_ ->]|[_ ov]].
- rewrite <- (round_0 radix2 fexp32 (round_mode mode_NE)). apply rnd_le. apply r_ge0; assumption.
- rewrite <- is_finite_SF_B2SF, ov in f. discriminate.
Qed.

(** When [fl32(p / q)] is finite, the engine's test at the [k]-th grid point
    is [k 2^-24 < fl32(p / q)] on the values: [k 2^125 < units(fl32(p / q))]. *)
Lemma below_units p q k : nonneg_float p -> pos_float q ->
  is_finite (fl32_div p q) = true -> (k < grid_size)%nat ->
  fl32_below p q k = true <-> (k * Nat.pow 2 125 < Z.to_nat (units (fl32_div p q)))%nat.
Proof.
intros Hp Hq f hk. destruct (grid_point k hk) as [gf [gv _]].
pose proof (fl32_div_nonneg p q Hp Hq f) as d0.
pose proof (units_B2R _ f) as ud.
assert (u0 : (0 <= units (fl32_div p q))%Z).
{ apply le_IZR. apply Rmult_le_reg_r with (bpow radix2 (-149)); [apply bpow_gt_0 | lra]. }
assert (key : B2R (grid_float (Z.of_nat k)) < B2R (fl32_div p q) <->
              INR (k * Nat.pow 2 125) < INR (Z.to_nat (units (fl32_div p q)))).
{ rewrite gv, ud, mult_INR, pow2_R, (INR_IZR_INZ (Z.to_nat _)), Z2Nat.id by exact u0.
  rewrite grid_size_R. change (Z.of_nat 125) with 125%Z.
  pose proof (bpow_gt_0 radix2 149) as b149.
  assert (e1 : INR k / bpow radix2 24 * bpow radix2 149 = INR k * bpow radix2 125).
  { unfold Rdiv. rewrite <- bpow_opp, Rmult_assoc, <- bpow_plus. reflexivity. }
  assert (e2 : IZR (units (fl32_div p q)) * bpow radix2 (-149) * bpow radix2 149 =
               IZR (units (fl32_div p q))).
  { rewrite Rmult_assoc, <- bpow_plus. simpl. ring. }
  split; intros h.
  - rewrite <- e1, <- e2. apply Rmult_lt_compat_r; assumption.
  - apply Rmult_lt_reg_r with (1 := b149). rewrite e1, e2. exact h. }
unfold fl32_below, fl32_lt. split.
- intros h. apply INR_lt, key, (float32_lt_is_real_lt _ _ gf f).
  destruct (Bcompare (grid_float (Z.of_nat k)) (fl32_div p q)) as [[]|]; try discriminate. reflexivity.
- intros h. apply lt_INR, key, (float32_lt_is_real_lt _ _ gf f) in h. rewrite h. reflexivity.
Qed.
