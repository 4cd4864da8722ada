(** * The code's float coin for any binary format over any field; binary64 and vLLM's [>=] test.

    FlCoin.v counts, with Flocq, for any binary format and any coin grid
    [k 2^-g] of floats of that format, the grid points that pass the engine's
    tests [u < fl(p / q)] and [u <= fl(p / q)].  Here, over any [numFieldType]
    [F], as Fl32Verifier.v does for binary32, with [fl_val x] the exact value of
    a non-negative float:

    - [fl_ratio_coin_bound]: the [<] coin is within [2^-g] (strictly) of
      [min(1, p / q)];
    - [fl_ratio_coin_le_bound]: the [<=] coin is at least [min(1, p / q)] and
      less than [min(1, p / q) + 2 2^-g];
    - [fl_verifier_TV], [fl_verifier_le_TV]: the textbook verifier on rows of
      the format whose values are distributions, with either test as its coin,
      is within total variation [2^-g] (the [<] test) or [2 2^-g] (the [<=]
      test) of the target;

    and instantiates them at binary64 (53 bits, emax 1024) with the float64
    coin [k 2^-53] ([torch.rand] in float64): [fl64_ratio_coin_bound],
    [fl64_ratio_coin_le_bound], [fl64_verifier_TV] ([< 2^-53]) and
    [fl64_verifier_le_TV] ([< 2^-52], vLLM's [fl(p / q) >= u]).

    As in Fl32Verifier.v the rows are taken at their exact values: that they
    sum to 1, and the float residual and its sum, are not modelled; the rows,
    the quotient and the coin are all in the one format (an engine that divides
    binary32 rows and compares with a float64 coin is not this model).  The
    theorems rest on the standard reals' axioms (FloatGrid.axioms). *)

From Coq Require Import BinInt.
From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition FloatCoin FloatGrid Fl32Coin Fl32Verifier FlCoin.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section FlVerifier.
Variable F : numFieldType.
Variables prec emax : BinNums.Z.
Variable Hprec : FLX.Prec_gt_0 prec.
Variable Hemax : BinarySingleNaN.Prec_lt_emax prec emax.
Variable g : nat.
Hypothesis Hg : BinInt.Z.le (BinInt.Z.of_nat g) prec.
Hypothesis Hemin : BinInt.Z.le (SpecFloat.emin prec emax) (BinInt.Z.opp (BinInt.Z.of_nat g)).

(** The value of a non-negative float of the format, [units x * 2^emin] (0
    for a negative one, which no hypothesis below allows). *)
Definition fl_val (x : BinarySingleNaN.binary_float prec emax) : F :=
  (BinInt.Z.to_nat (fl_units x))%:R / (2 ^ BinInt.Z.to_nat (BinInt.Z.opp (SpecFloat.emin prec emax)))%N%:R.

(** The probability that a coin uniform on the grid [k 2^-g] passes the
    engine's test [u < fl(p / q)], and the test [u <= fl(p / q)]. *)
Definition fl_ratio_coin (p q : BinarySingleNaN.binary_float prec emax) : F :=
  \sum_(0 <= k < 2 ^ g) (2 ^ g)%N%:R^-1 * (fl_below Hprec Hemax g p q k)%:R.
Definition fl_ratio_coin_le (p q : BinarySingleNaN.binary_float prec emax) : F :=
  \sum_(0 <= k < 2 ^ g) (2 ^ g)%N%:R^-1 * (fl_below_le Hprec Hemax g p q k)%:R.

Lemma expn_2_g : (2 ^ g)%N = fl_grid_size g.
Proof. exact: expn_pow. Qed.

Lemma fl_coin_count (f : nat -> bool) :
  \sum_(0 <= k < 2 ^ g) (2 ^ g)%N%:R^-1 * (f k)%:R = (count_below f (fl_grid_size g))%:R / (fl_grid_size g)%:R :> F.
Proof. rewrite -mulr_sumr sum_count -expn_2_g; exact: mulrC. Qed.

Lemma fl_ratio (p q : BinarySingleNaN.binary_float prec emax) :
  fl_val p / fl_val q = (BinInt.Z.to_nat (fl_units p))%:R / (BinInt.Z.to_nat (fl_units q))%:R :> F.
Proof. by rewrite /fl_val; apply: val_ratio; rewrite expn_gt0. Qed.

Lemma fl_grid_pos : (0 < fl_grid_size g)%N.
Proof. by apply/ltP; exact: fl_grid_size_pos. Qed.

(** The [<] coin is within [2^-g] of [min(1, p / q)]. *)
Theorem fl_ratio_coin_bound p q : fl_nonneg p -> fl_pos q ->
  `|fl_ratio_coin p q - Num.min 1 (fl_val p / fl_val q)| < (2 ^ g)%N%:R^-1.
Proof.
move=> Hp Hq; have [b0 [ge lt]] := fl_count_bound Hprec Hemax Hg Hemin Hp Hq.
rewrite /fl_ratio_coin fl_coin_count fl_ratio expn_2_g.
apply: coin_close.
- exact: fl_grid_pos.
- exact/ltP.
- by move=> h; apply: ge; exact/leP.
- move=> h; have [x y] := lt (ltP h).
  by split; apply/ltP; [exact: x | exact: y].
Qed.

Lemma nat_ratio_above (c N a b : nat) : (0 < N)%N -> (0 < b)%N ->
  (N * a < c * b)%N -> (c * b < N * a + 2 * b)%N ->
  ((a%:R : F) / b%:R < c%:R / N%:R) && ((c%:R : F) / N%:R < a%:R / b%:R + 2 * N%:R^-1).
Proof.
move=> N0 b0 lo hi.
have N0' : N%:R != 0 :> F by rewrite pnatr_eq0 -lt0n.
have b0' : b%:R != 0 :> F by rewrite pnatr_eq0 -lt0n.
have Nb : 0 < (N * b)%:R :> F by rewrite ltr0n muln_gt0 N0 b0.
have e : c%:R / N%:R - a%:R / b%:R = ((c * b)%:R - (N * a)%:R) / (N * b)%:R :> F.
  rewrite !natrM invfM mulrBl mulrACA divff // mulr1.
  by rewrite [N%:R * _ * _]mulrACA divff // mul1r.
rewrite -subr_gt0 e divr_gt0 ?subr_gt0 ?ltr_nat //=.
rewrite -ltr_subl_addl e ltr_pdivr_mulr //.
have -> : 2 * N%:R^-1 * (N * b)%:R = (2 * b)%:R :> F.
  by rewrite !natrM mulrA -[2%:R * _ * _]mulrA mulVf // mulr1.
by rewrite ltr_subl_addr -natrD ltr_nat addnC.
Qed.

Lemma coin_close_le (c N a b : nat) : (0 < N)%N -> (0 < b)%N ->
  ((b <= a)%N -> c = N) -> ((a < b)%N -> (N * a < c * b)%N /\ (c * b < N * a + 2 * b)%N) ->
  (Num.min (1 : F) (a%:R / b%:R) <= c%:R / N%:R) && ((c%:R : F) / N%:R < Num.min 1 (a%:R / b%:R) + 2 * N%:R^-1).
Proof.
move=> N0 b0 ge lt.
have N0' : 0 < N%:R :> F by rewrite ltr0n.
have step : 0 < 2 * N%:R^-1 :> F by rewrite mulr_gt0 ?ltr0n ?invr_gt0.
have rab : a%:R / b%:R \is @Num.real F by apply: ger0_real; rewrite divr_ge0 ?ler0n.
case: (leqP b a) => [ba|ab].
- rewrite ge //.
  have -> : Num.min 1 (a%:R / b%:R) = 1 :> F.
    case: (real_leP (real1 F) rab) => // h; move: h.
    by rewrite ltr_pdivr_mulr ?ltr0n // mul1r ltr_nat ltnNge ba.
  by rewrite divff ?gt_eqF // lexx ltr_addl.
- have [lo hi] := lt ab.
  have -> : Num.min 1 (a%:R / b%:R) = a%:R / b%:R :> F.
    case: (real_leP (real1 F) rab) => // h; move: h.
    by rewrite ler_pdivl_mulr ?ltr0n // mul1r ler_nat leqNgt ab.
  have /andP [l u] := nat_ratio_above N0 b0 lo hi.
  by rewrite (ltW l) u.
Qed.

(** The [<=] coin accepts at least as often as [min(1, p / q)], and by less
    than two grid steps more. *)
Theorem fl_ratio_coin_le_bound p q : fl_nonneg p -> fl_pos q ->
  Num.min 1 (fl_val p / fl_val q) <= fl_ratio_coin_le p q <
    Num.min 1 (fl_val p / fl_val q) + 2 * (2 ^ g)%N%:R^-1.
Proof.
move=> Hp Hq; have [b0 [ge lt]] := fl_count_bound_le Hprec Hemax Hg Hemin Hp Hq.
rewrite /fl_ratio_coin_le fl_coin_count fl_ratio expn_2_g.
apply: coin_close_le.
- exact: fl_grid_pos.
- exact/ltP.
- by move=> h; apply: ge; exact/leP.
- move=> h; have [x y] := lt (ltP h).
  by split; apply/ltP; [exact: x | exact: y].
Qed.

Section Rows.
Variable T : finType.
Variables (pf qf : T -> BinarySingleNaN.binary_float prec emax) (fallback : T -> F).

(** The textbook verifier on rows [pf] (target) and [qf] (draft) of the
    format, accepting the draft [x] when the grid coin passes [u < fl(pf x /
    qf x)], or [u <= fl(pf x / qf x)]. *)
Definition fl_verifier : T -> F :=
  verifier_with (fun x => fl_ratio_coin (pf x) (qf x))
    (fun x => fl_val (pf x)) (fun x => fl_val (qf x)) fallback.
Definition fl_verifier_le : T -> F :=
  verifier_with (fun x => fl_ratio_coin_le (pf x) (qf x))
    (fun x => fl_val (pf x)) (fun x => fl_val (qf x)) fallback.

Lemma fl_pos_val x : fl_nonneg (qf x) -> 0 < fl_val (qf x) -> fl_pos (qf x).
Proof.
move=> q0 qpos; apply: (fl_pos_of_units g); first exact: q0.
apply/ltP.
move: qpos; rewrite /fl_val pmulr_lgt0 ?invr_gt0 ?ltr0n ?expn_gt0 //.
Qed.

Theorem fl_verifier_TV :
  (forall x, fl_nonneg (pf x)) -> (forall x, fl_nonneg (qf x)) ->
  is_distribution (fun x => fl_val (pf x)) -> is_distribution (fun x => fl_val (qf x)) ->
  is_distribution fallback ->
  TV fl_verifier (fun x => fl_val (pf x)) < (2 ^ g)%N%:R^-1.
Proof.
move=> p0 q0 Hp Hq Hf.
apply: coin_TV_lt => // x qpos.
by apply: fl_ratio_coin_bound; [exact: p0 | exact: fl_pos_val].
Qed.

Theorem fl_verifier_le_TV :
  (forall x, fl_nonneg (pf x)) -> (forall x, fl_nonneg (qf x)) ->
  is_distribution (fun x => fl_val (pf x)) -> is_distribution (fun x => fl_val (qf x)) ->
  is_distribution fallback ->
  TV fl_verifier_le (fun x => fl_val (pf x)) < 2 * (2 ^ g)%N%:R^-1.
Proof.
move=> p0 q0 Hp Hq Hf.
apply: coin_TV_lt => // x qpos.
have [l u] := andP (fl_ratio_coin_le_bound (p0 x) (fl_pos_val (q0 x) qpos)).
rewrite /accept_prob ger0_norm ?subr_ge0 //.
by rewrite ltr_subl_addl.
Qed.

End Rows.
End FlVerifier.

(** ** binary64 and the float64 coin *)

(** binary64: 53 bits of precision, maximal exponent 1024. *)
Definition binary64 := BinarySingleNaN.binary_float 53%Z 1024%Z.

Lemma prec_gt_0_64 : FLX.Prec_gt_0 53%Z.
Proof. by []. Qed.

Lemma prec_lt_emax_64 : BinarySingleNaN.Prec_lt_emax 53%Z 1024%Z.
Proof. by []. Qed.

Lemma grid_in_64 : BinInt.Z.le (BinInt.Z.of_nat 53%N) 53%Z.
Proof. by []. Qed.

Lemma emin_64 : BinInt.Z.le (SpecFloat.emin 53%Z 1024%Z) (BinInt.Z.opp (BinInt.Z.of_nat 53%N)).
Proof. by []. Qed.

Section Fl64.
Variable F : numFieldType.

(** The value of a non-negative binary64 float, [units x * 2^-1074]. *)
Definition f64_val (x : binary64) : F := fl_val F x.

(** A coin uniform on the float64 grid [k 2^-53] ([torch.rand] in float64):
    the probability that it passes [u < fl64(p / q)], and [u <= fl64(p / q)]
    (vLLM's [fl64(p / q) >= u]). *)
Definition fl64_ratio_coin (p q : binary64) : F :=
  fl_ratio_coin F prec_gt_0_64 prec_lt_emax_64 53%N p q.
Definition fl64_ratio_coin_le (p q : binary64) : F :=
  fl_ratio_coin_le F prec_gt_0_64 prec_lt_emax_64 53%N p q.

Lemma two_exp_53 : (2 ^ 53)%N%:R^-1 = 2 ^- 53 :> F.
Proof. by rewrite natrX. Qed.

Theorem fl64_ratio_coin_bound (p q : binary64) : fl_nonneg p -> fl_pos q ->
  `|fl64_ratio_coin p q - Num.min 1 (f64_val p / f64_val q)| < 2 ^- 53.
Proof.
move=> Hp Hq; rewrite -two_exp_53.
exact: (fl_ratio_coin_bound F prec_gt_0_64 prec_lt_emax_64 grid_in_64 emin_64 Hp Hq).
Qed.

Theorem fl64_ratio_coin_le_bound (p q : binary64) : fl_nonneg p -> fl_pos q ->
  Num.min 1 (f64_val p / f64_val q) <= fl64_ratio_coin_le p q <
    Num.min 1 (f64_val p / f64_val q) + 2 ^- 52.
Proof.
move=> Hp Hq.
have -> : 2 ^- 52 = 2 * (2 ^ 53)%N%:R^-1 :> F.
  have -> : (2 ^ 53)%N%:R = 2 * 2 ^+ 52 :> F by rewrite natrX exprS.
  by rewrite [X in _ = 2 * X]invfM mulrA divff ?mul1r // pnatr_eq0.
exact: (fl_ratio_coin_le_bound F prec_gt_0_64 prec_lt_emax_64 grid_in_64 emin_64 Hp Hq).
Qed.

Section Rows64.
Variable T : finType.
Variables (pf qf : T -> binary64) (fallback : T -> F).

(** The textbook verifier on binary64 rows with the float64 coin and the
    test [u < fl64(p / q)], and with vLLM's test [fl64(p / q) >= u]. *)
Definition fl64_verifier : T -> F :=
  fl_verifier prec_gt_0_64 prec_lt_emax_64 53%N pf qf fallback.
Definition fl64_verifier_le : T -> F :=
  fl_verifier_le prec_gt_0_64 prec_lt_emax_64 53%N pf qf fallback.

Theorem fl64_verifier_TV :
  (forall x, fl_nonneg (pf x)) -> (forall x, fl_nonneg (qf x)) ->
  is_distribution (fun x => f64_val (pf x)) -> is_distribution (fun x => f64_val (qf x)) ->
  is_distribution fallback ->
  TV fl64_verifier (fun x => f64_val (pf x)) < 2 ^- 53.
Proof.
move=> p0 q0 Hp Hq Hf; rewrite -two_exp_53.
exact: (@fl_verifier_TV F 53%Z 1024%Z prec_gt_0_64 prec_lt_emax_64 53%N grid_in_64 emin_64 T pf qf fallback p0 q0 Hp Hq Hf).
Qed.

Theorem fl64_verifier_le_TV :
  (forall x, fl_nonneg (pf x)) -> (forall x, fl_nonneg (qf x)) ->
  is_distribution (fun x => f64_val (pf x)) -> is_distribution (fun x => f64_val (qf x)) ->
  is_distribution fallback ->
  TV fl64_verifier_le (fun x => f64_val (pf x)) < 2 ^- 52.
Proof.
move=> p0 q0 Hp Hq Hf.
have -> : 2 ^- 52 = 2 * (2 ^ 53)%N%:R^-1 :> F.
  have -> : (2 ^ 53)%N%:R = 2 * 2 ^+ 52 :> F by rewrite natrX exprS.
  by rewrite [X in _ = 2 * X]invfM mulrA divff ?mul1r // pnatr_eq0.
exact: (@fl_verifier_le_TV F 53%Z 1024%Z prec_gt_0_64 prec_lt_emax_64 53%N grid_in_64 emin_64 T pf qf fallback p0 q0 Hp Hq Hf).
Qed.

End Rows64.
End Fl64.
