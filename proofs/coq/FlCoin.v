(** * The code's float coin for any binary format: [u < fl(p / q)] and [u <= fl(p / q)], with Flocq.

    Fl32Coin.v counts, for binary32 and the float32 grid [k 2^-24], the grid
    floats that pass the engine's test [u < fl32(p / q)].  Here the same count
    for any binary format [binary_float prec emax] and any coin grid [k 2^-g],
    [0 <= k < 2^g], whose points are floats of the format ([g <= prec] and
    [emin <= -g]), for both tests engines write:

    - [u < fl(p / q)] (PyTorch samplers, SGLang): [fl_count_bound], the same
      bound as Fl32Coin.v's [fl32_count_bound];
    - [u <= fl(p / q)], that is [fl(p / q) >= u] (vLLM's test, with a float64
      coin): [fl_count_bound_le]: the count [c] of passing grid points is [2^g]
      when [p >= q], and otherwise [2^g a < c b < 2^g a + 2 b]: the coin accepts
      more often than [p / q], by less than two grid steps (one for the [<=]
      at a grid point, one for the rounding of the ratio up to a grid point).

    [p = a 2^emin], [q = b 2^emin] with [a], [b] naturals ([emin] the format's
    smallest exponent: [-149] for binary32, [-1074] for binary64).  The
    quotient is Flocq's [Bdiv] rounded to nearest, ties to even; overflow to
    +infinity is included.  Fl64Verifier.v instantiates these for binary64 and
    the float64 grid [k 2^-53] ([torch.rand] in float64).

    Over Coq's standard reals: [Print Assumptions] lists their axioms (and
    classical logic), and the check allows exactly those (FloatGrid.axioms). *)

From Coq Require Import Reals ZArith Lia Lra.
From Flocq Require Import Core IEEE754.BinarySingleNaN.
From SpecProof Require Import FloatGrid Fl32Coin.

Open Scope R_scope.

Section Format.

(** The format: [prec] bits of precision, maximal exponent [emax]; the coin's
    grid: the [2^g] points [k 2^-g]. *)
Variables prec emax : Z.
Variable Hprec : Prec_gt_0 prec.
Variable Hemax : Prec_lt_emax prec emax.
Variable g : nat.

(** The grid's points are floats of the format. *)
Hypothesis Hg : (Z.of_nat g <= prec)%Z.
Hypothesis Hemin : (SpecFloat.emin prec emax <= - Z.of_nat g)%Z.

(** The [k]-th point of the coin's grid, [k 2^-g], as a float of the format. *)
Definition fl_grid (k : nat) : binary_float prec emax :=
  binary_normalize prec emax Hprec Hemax mode_NE (Z.of_nat k) (- Z.of_nat g) false.

(** The quotient, rounded to nearest (ties to even), as engines compute [p / q]. *)
Definition fl_div (p q : binary_float prec emax) : binary_float prec emax :=
  @Bdiv prec emax Hprec Hemax mode_NE p q.

(** The float comparisons [u < r] and [u <= r] (false when either is NaN). *)
Definition fl_lt (u r : binary_float prec emax) : bool :=
  match Bcompare u r with Some Lt => true | _ => false end.
Definition fl_le (u r : binary_float prec emax) : bool :=
  match Bcompare u r with Some Lt | Some Eq => true | _ => false end.

(** The engine's tests at the [k]-th grid point: [u < fl(p / q)], and
    [u <= fl(p / q)] (written [fl(p / q) >= u] by vLLM). *)
Definition fl_below (p q : binary_float prec emax) (k : nat) : bool :=
  fl_lt (fl_grid k) (fl_div p q).
Definition fl_below_le (p q : binary_float prec emax) (k : nat) : bool :=
  fl_le (fl_grid k) (fl_div p q).

(** The grid's size, [2^g] (never computed in unary). *)
Definition fl_grid_size : nat := Nat.pow 2 g.

(** A finite value in units of the smallest subnormal [2^emin]. *)
Definition fl_units (x : binary_float prec emax) : Z :=
  match x with
  | B754_finite s m e _ => (cond_Zopp s (Zpos m) * 2 ^ (e - SpecFloat.emin prec emax))%Z
  | _ => 0%Z
  end.

(** Finite, and non-negative or positive. *)
Definition fl_nonneg (x : binary_float prec emax) : Prop := is_finite x = true /\ 0 <= B2R x.
Definition fl_pos (x : binary_float prec emax) : Prop := is_finite x = true /\ 0 < B2R x.

Local Notation fexp := (SpecFloat.fexp prec emax).
Local Notation rnd := (round radix2 fexp (round_mode mode_NE)).
Local Instance fexp_valid : Valid_exp fexp := FLT_exp_valid (SpecFloat.emin prec emax) prec.

Lemma prec_pos : (0 < prec)%Z.
Proof. exact Hprec. Qed.

Lemma emax_gt_prec : (prec < emax)%Z.
Proof. exact Hemax. Qed.

Lemma fl_grid_size_pos : (0 < fl_grid_size)%nat.
Proof. unfold fl_grid_size. apply Nat.neq_0_lt_0, Nat.pow_nonzero. lia. Qed.

Lemma fl_grid_size_Z : Z.of_nat fl_grid_size = (2 ^ Z.of_nat g)%Z.
Proof. unfold fl_grid_size. rewrite Nat2Z.inj_pow. reflexivity. Qed.

Lemma fl_grid_size_R : INR fl_grid_size = bpow radix2 (Z.of_nat g).
Proof.
rewrite INR_IZR_INZ, fl_grid_size_Z. change 2%Z with (radix2 : Z).
rewrite IZR_Zpower by lia. reflexivity.
Qed.

Lemma fl_units_B2R x : is_finite x = true ->
  B2R x = IZR (fl_units x) * bpow radix2 (SpecFloat.emin prec emax).
Proof.
destruct x as [s|s| |s m e H]; simpl; try discriminate; intros _.
- lra.
- assert (emin : (SpecFloat.emin prec emax <= e)%Z).
  { unfold SpecFloat.bounded, SpecFloat.canonical_mantissa in H. apply andb_prop in H.
    destruct H as [H1 _]. apply Zeq_bool_eq in H1. unfold SpecFloat.fexp in H1. lia. }
  unfold F2R; simpl. rewrite mult_IZR.
  change 2%Z with (radix2 : Z). rewrite IZR_Zpower by lia.
  assert (bpow radix2 e = bpow radix2 (e - SpecFloat.emin prec emax) * bpow radix2 (SpecFloat.emin prec emax))
    as -> by (rewrite <- bpow_plus; f_equal; lia).
  ring.
Qed.

Lemma fl_rnd_le x y : x <= y -> rnd x <= rnd y.
Proof.
intros h. exact (@round_le radix2 fexp fexp_valid (round_mode mode_NE) (valid_rnd_round_mode mode_NE) x y h).
Qed.

Lemma fl_grid_value k : (k <= fl_grid_size)%nat ->
  generic_format radix2 fexp (INR k / INR fl_grid_size).
Proof.
intros hk. rewrite fl_grid_size_R. unfold Rdiv. rewrite <- bpow_opp, INR_IZR_INZ.
pose proof prec_pos as pp. pose proof emax_gt_prec as ep.
assert (hz : (Z.of_nat k <= 2 ^ Z.of_nat g)%Z) by (rewrite <- fl_grid_size_Z; lia).
destruct (Z.eq_dec (Z.of_nat k) (2 ^ Z.of_nat g)) as [e|ne].
- rewrite e. change 2%Z with (radix2 : Z). rewrite IZR_Zpower by lia.
  rewrite <- bpow_plus, Z.add_opp_diag_r.
  apply generic_format_FLT, (FLT_spec _ _ _ _ (Float radix2 1 0)).
  + unfold F2R; simpl; ring.
  + simpl. change 1%Z with (2 ^ 0)%Z. apply Z.pow_lt_mono_r; lia.
  + simpl. unfold SpecFloat.emin in *. lia.
- apply generic_format_FLT, (FLT_spec _ _ _ _ (Float radix2 (Z.of_nat k) (- Z.of_nat g))).
  + reflexivity.
  + simpl. rewrite Z.abs_eq by lia.
    apply Z.lt_le_trans with (2 ^ Z.of_nat g)%Z; [lia |].
    apply Z.pow_le_mono_r; lia.
  + simpl. lia.
Qed.

Lemma fl_grid_point k : (k < fl_grid_size)%nat ->
  is_finite (fl_grid k) = true /\ B2R (fl_grid k) = INR k / INR fl_grid_size /\ B2R (fl_grid k) < 1.
Proof.
intros hk. pose proof prec_pos as pp. pose proof emax_gt_prec as ep.
pose proof (lt_0_INR _ fl_grid_size_pos) as N0.
assert (range : 0 <= INR k / INR fl_grid_size < 1).
{ split.
  - unfold Rdiv. apply Rmult_le_pos; [apply pos_INR | left; apply Rinv_0_lt_compat, N0].
  - apply Rmult_lt_reg_r with (INR fl_grid_size); [exact N0 |].
    unfold Rdiv. rewrite Rmult_assoc, Rinv_l by lra. rewrite Rmult_1_r, Rmult_1_l.
    apply lt_INR, hk. }
pose proof (binary_normalize_correct prec emax Hprec Hemax mode_NE (Z.of_nat k) (- Z.of_nat g) false)
  as H.
cbv zeta in H.
assert (ex : F2R (Float radix2 (Z.of_nat k) (- Z.of_nat g)) = INR k / INR fl_grid_size).
{ unfold F2R; simpl. rewrite fl_grid_size_R, INR_IZR_INZ. unfold Rdiv. rewrite bpow_opp. reflexivity. }
rewrite ex in H.
rewrite round_generic in H; [| apply valid_rnd_round_mode | apply fl_grid_value; lia].
rewrite Rlt_bool_true in H.
- destruct H as [Hr [Hf _]]. unfold fl_grid. rewrite Hr.
  split; [exact Hf | split; [reflexivity | apply range]].
- rewrite Rabs_pos_eq by apply range.
  apply Rlt_le_trans with 1; [apply range |].
  change 1 with (bpow radix2 0). apply bpow_le. lia.
Qed.

Lemma fl_pos_sign (x : binary_float prec emax) : 0 < B2R x -> Bsign x = false.
Proof.
destruct x as [s|s| |s m e H]; simpl; intros h; try lra.
destruct s; [exfalso | reflexivity].
pose proof (F2R_lt_0 radix2 (Float radix2 (Zneg m) e) (Pos2Z.neg_is_neg m)) as n.
simpl in n, h. lra.
Qed.

Section Div.
Variables p q : binary_float prec emax.
Hypotheses (Hp : fl_nonneg p) (Hq : fl_pos q).

Let r := B2R p / B2R q.

Lemma fl_r_ge0 : 0 <= r.
Proof.
destruct Hp, Hq. unfold r, Rdiv. apply Rmult_le_pos; [assumption | left; apply Rinv_0_lt_compat; assumption].
Qed.

Lemma fl_one_format : generic_format radix2 fexp 1.
Proof.
pose proof (fl_grid_value fl_grid_size (le_n _)) as h. unfold Rdiv in h.
rewrite Rinv_r in h; [exact h |]. pose proof (lt_0_INR _ fl_grid_size_pos). lra.
Qed.

Lemma fl_div_cases :
  (is_finite (fl_div p q) = true /\ B2R (fl_div p q) = rnd r) \/
  (1 <= r /\ B2SF (fl_div p q) = SpecFloat.S754_infinity false).
Proof.
destruct Hp as [fp p0], Hq as [fq q0].
pose proof (Bdiv_correct prec emax Hprec Hemax mode_NE p q ltac:(lra)) as H.
fold r in H. destruct (Rlt_bool_spec (Rabs (rnd r)) (bpow radix2 emax)) as [h|h].
- left. destruct H as [v [f _]]. unfold fl_div. rewrite f. split; [exact fp | exact v].
- right. assert (r1 : 1 <= r).
  { destruct (Rle_or_lt 1 r) as [l|l]; [exact l |]. exfalso.
    assert (a : 0 <= rnd r).
    { rewrite <- (round_0 radix2 fexp (round_mode mode_NE)). apply fl_rnd_le, fl_r_ge0. }
    assert (b : rnd r <= 1).
    { rewrite <- (round_generic radix2 fexp (round_mode mode_NE) 1 fl_one_format). apply fl_rnd_le. lra. }
    rewrite Rabs_pos_eq in h by exact a.
    assert (1 < bpow radix2 emax).
    { change 1 with (bpow radix2 0); apply bpow_lt. pose proof prec_pos. pose proof emax_gt_prec. lia. }
    lra. }
  split; [exact r1 |]. unfold fl_div. rewrite H.
  assert (pp : 0 < B2R p).
  { unfold r in r1. apply Rmult_lt_reg_r with (/ B2R q). apply Rinv_0_lt_compat; lra.
    rewrite Rmult_0_l. unfold Rdiv in r1. lra. }
  rewrite (fl_pos_sign p pp), (fl_pos_sign q q0). reflexivity.
Qed.

Lemma fl_below_upper k : (k < fl_grid_size)%nat -> fl_below p q k = true ->
  INR k / INR fl_grid_size < r.
Proof.
intros hk. destruct (fl_grid_point k hk) as [gf [gv g1]]. unfold fl_below, fl_lt.
destruct fl_div_cases as [[f v]|[r1 _]]; [| intros _; lra].
rewrite (Bcompare_correct _ _ _ _ gf f), v, gv.
destruct (Rlt_or_le (INR k / INR fl_grid_size) r) as [l|l]; [intros _; exact l |].
assert (rnd r <= INR k / INR fl_grid_size).
{ rewrite <- (round_generic radix2 fexp (round_mode mode_NE) (INR k / INR fl_grid_size)).
  - apply fl_rnd_le. exact l.
  - apply fl_grid_value. lia. }
destruct (Rcompare_spec (INR k / INR fl_grid_size) (rnd r)); try discriminate; lra.
Qed.

Lemma fl_grid_lt k : INR k / INR fl_grid_size < INR (S k) / INR fl_grid_size.
Proof.
unfold Rdiv. apply Rmult_lt_compat_r.
- apply Rinv_0_lt_compat, lt_0_INR, fl_grid_size_pos.
- apply lt_INR. lia.
Qed.

Lemma fl_below_lower k : (k < fl_grid_size)%nat -> INR (S k) / INR fl_grid_size <= r ->
  fl_below p q k = true.
Proof.
intros hk l. destruct (fl_grid_point k hk) as [gf [gv g1]]. unfold fl_below, fl_lt.
pose proof (fl_grid_lt k) as lt.
destruct fl_div_cases as [[f v]|[r1 ov]].
- rewrite (Bcompare_correct _ _ _ _ gf f), v, gv, Rcompare_Lt; [reflexivity |].
  apply Rlt_le_trans with (1 := lt).
  rewrite <- (round_generic radix2 fexp (round_mode mode_NE) (INR (S k) / INR fl_grid_size)).
  + apply fl_rnd_le. exact l.
  + apply fl_grid_value. lia.
- unfold Bcompare. rewrite ov.
  destruct (fl_grid k) as [s|s| |s m e H]; simpl in gf; try discriminate; reflexivity.
Qed.

(** The [<=] test passes at every grid point at most [r]... *)
Lemma fl_below_le_lower k : (k < fl_grid_size)%nat -> INR k / INR fl_grid_size <= r ->
  fl_below_le p q k = true.
Proof.
intros hk l. destruct (fl_grid_point k hk) as [gf [gv g1]]. unfold fl_below_le, fl_le.
destruct fl_div_cases as [[f v]|[r1 ov]].
- rewrite (Bcompare_correct _ _ _ _ gf f), v, gv.
  assert (INR k / INR fl_grid_size <= rnd r).
  { rewrite <- (round_generic radix2 fexp (round_mode mode_NE) (INR k / INR fl_grid_size)).
    + apply fl_rnd_le. exact l.
    + apply fl_grid_value. lia. }
  destruct (Rcompare_spec (INR k / INR fl_grid_size) (rnd r)); try reflexivity; lra.
- unfold Bcompare. rewrite ov.
  destruct (fl_grid k) as [s|s| |s m e H]; simpl in gf; try discriminate; reflexivity.
Qed.

(** ... and at the grid point [S j 2^-g] only if [j 2^-g < r]. *)
Lemma fl_below_le_upper j : (S j < fl_grid_size)%nat -> fl_below_le p q (S j) = true ->
  INR j / INR fl_grid_size < r.
Proof.
intros hk. destruct (fl_grid_point (S j) hk) as [gf [gv g1]]. unfold fl_below_le, fl_le.
destruct fl_div_cases as [[f v]|[r1 _]].
- rewrite (Bcompare_correct _ _ _ _ gf f), v, gv.
  destruct (Rlt_or_le (INR j / INR fl_grid_size) r) as [l|l]; [intros _; exact l |].
  assert (rnd r <= INR j / INR fl_grid_size).
  { rewrite <- (round_generic radix2 fexp (round_mode mode_NE) (INR j / INR fl_grid_size)).
    - apply fl_rnd_le. exact l.
    - apply fl_grid_value. lia. }
  pose proof (fl_grid_lt j).
  destruct (Rcompare_spec (INR (S j) / INR fl_grid_size) (rnd r)); try discriminate; lra.
- intros _. apply Rlt_le_trans with 1; [| exact r1].
  rewrite gv in g1. apply Rle_lt_trans with (INR (S j) / INR fl_grid_size); [left; apply fl_grid_lt | apply g1].
Qed.

End Div.

Lemma fl_units_facts p q : fl_nonneg p -> fl_pos q ->
  let a := Z.to_nat (fl_units p) in let b := Z.to_nat (fl_units q) in
  (0 < b)%nat /\ B2R p / B2R q = INR a / INR b.
Proof.
intros [fp p0] [fq q0] a b.
pose proof (bpow_gt_0 radix2 (SpecFloat.emin prec emax)) as s0.
rewrite (fl_units_B2R p fp) in p0 |- *. rewrite (fl_units_B2R q fq) in q0 |- *.
assert (up : (0 <= fl_units p)%Z).
{ apply le_IZR. apply Rmult_le_reg_r with (1 := s0). lra. }
assert (uq : (0 < fl_units q)%Z).
{ apply lt_IZR. apply Rmult_lt_reg_r with (1 := s0). lra. }
assert (ea : INR a = IZR (fl_units p)) by (unfold a; rewrite INR_IZR_INZ, Z2Nat.id by lia; reflexivity).
assert (eb : INR b = IZR (fl_units q)) by (unfold b; rewrite INR_IZR_INZ, Z2Nat.id by lia; reflexivity).
split; [unfold b; lia |].
assert (uqR : 0 < IZR (fl_units q)) by (apply IZR_lt; exact uq).
rewrite ea, eb. field. split; lra.
Qed.

(** The test [u < fl(p / q)]: the number of passing grid points, against the
    exact ratio [p / q = a / b]. *)
Theorem fl_count_bound p q : fl_nonneg p -> fl_pos q ->
  let a := Z.to_nat (fl_units p) in let b := Z.to_nat (fl_units q) in
  let c := count_below (fl_below p q) fl_grid_size in
  (0 < b)%nat /\ ((b <= a)%nat -> c = fl_grid_size) /\
  ((a < b)%nat -> (c * b < fl_grid_size * a + b)%nat /\ (fl_grid_size * a < c * b + b)%nat).
Proof.
intros Hp Hq a b c. destruct (fl_units_facts p q Hp Hq) as [b0 er]. fold a b in b0, er.
assert (bR : 0 < INR b) by (apply lt_0_INR; exact b0).
assert (NR : 0 < INR fl_grid_size) by (apply lt_0_INR, fl_grid_size_pos).
assert (U : forall k, (k < fl_grid_size)%nat -> fl_below p q k = true -> (k * b < fl_grid_size * a)%nat).
{ intros k hk h. pose proof (fl_below_upper p q Hp Hq k hk h) as u. rewrite er in u.
  apply div_lt_cross in u; [| exact NR | exact bR].
  apply INR_lt. rewrite !mult_INR. lra. }
assert (L : forall k, (k < fl_grid_size)%nat -> (S k * b <= fl_grid_size * a)%nat -> fl_below p q k = true).
{ intros k hk h. apply (fl_below_lower p q Hp Hq k hk). rewrite er.
  apply div_le_cross; [exact NR | exact bR |].
  apply le_INR in h. rewrite !mult_INR in h. lra. }
pose proof fl_grid_size_pos as N0.
split; [exact b0 | split].
- intros ba. apply count_below_all. intros k hk. apply L; [exact hk |]. nia.
- intros ab. split.
  + apply count_below_upper; [exact b0 |]. exact U.
  + destruct (count_below_lower (fl_below p q) fl_grid_size b (fl_grid_size * a) L) as [l|e];
      fold c in l || fold c in e; nia.
Qed.

(** The test [u <= fl(p / q)] (vLLM's [fl(p / q) >= u]): every grid point
    passes when [p >= q]; otherwise the count [c] has [c / 2^g] strictly
    between [p / q] and [p / q + 2 / 2^g]. *)
Theorem fl_count_bound_le p q : fl_nonneg p -> fl_pos q ->
  let a := Z.to_nat (fl_units p) in let b := Z.to_nat (fl_units q) in
  let c := count_below (fl_below_le p q) fl_grid_size in
  (0 < b)%nat /\ ((b <= a)%nat -> c = fl_grid_size) /\
  ((a < b)%nat -> (fl_grid_size * a < c * b)%nat /\ (c * b < fl_grid_size * a + 2 * b)%nat).
Proof.
intros Hp Hq a b c. destruct (fl_units_facts p q Hp Hq) as [b0 er]. fold a b in b0, er.
assert (bR : 0 < INR b) by (apply lt_0_INR; exact b0).
assert (NR : 0 < INR fl_grid_size) by (apply lt_0_INR, fl_grid_size_pos).
assert (U : forall k, (k < fl_grid_size)%nat -> fl_below_le p q k = true ->
          (k * b < fl_grid_size * a + b)%nat).
{ intros [|j] hk h; [lia |].
  pose proof (fl_below_le_upper p q Hp Hq j hk h) as u. rewrite er in u.
  apply div_lt_cross in u; [| exact NR | exact bR].
  assert (j * b < fl_grid_size * a)%nat by (apply INR_lt; rewrite !mult_INR; lra). nia. }
assert (L : forall k, (k < fl_grid_size)%nat -> (S k * b <= fl_grid_size * a + b)%nat ->
          fl_below_le p q k = true).
{ intros k hk h. apply (fl_below_le_lower p q Hp Hq k hk). rewrite er.
  apply div_le_cross; [exact NR | exact bR |].
  assert (h' : (k * b <= fl_grid_size * a)%nat) by nia.
  apply le_INR in h'. rewrite !mult_INR in h'. lra. }
pose proof fl_grid_size_pos as N0.
split; [exact b0 | split].
- intros ba. apply count_below_all. intros k hk. apply L; [exact hk |]. nia.
- intros ab. split.
  + destruct (count_below_lower (fl_below_le p q) fl_grid_size b (fl_grid_size * a + b) L) as [l|e];
      fold c in l || fold c in e; nia.
  + pose proof (count_below_upper (fl_below_le p q) fl_grid_size b (fl_grid_size * a + b) b0 U) as h.
    fold c in h. lia.
Qed.

Lemma fl_pos_of_units x : fl_nonneg x -> (0 < Z.to_nat (fl_units x))%nat -> fl_pos x.
Proof.
intros [f x0] u. split; [exact f |]. rewrite (fl_units_B2R x f).
apply Rmult_lt_0_compat; [apply IZR_lt; lia | apply bpow_gt_0].
Qed.

End Format.

Arguments fl_units {prec emax}.
Arguments fl_nonneg {prec emax}.
Arguments fl_pos {prec emax}.
Arguments fl_below {prec emax}.
Arguments fl_below_le {prec emax}.
Arguments fl_count_bound {prec emax} Hprec Hemax {g} Hg Hemin {p q}.
Arguments fl_count_bound_le {prec emax} Hprec Hemax {g} Hg Hemin {p q}.

Arguments fl_pos_of_units {prec emax} g {x}.
