(** * The code's float32 coin over any field, and one position's law.

    Fl32Coin.v counts, with Flocq, the grid points [u = k 2^-24] that pass the
    engine's float test [u < fl32(p / q)].  Here, over any [numFieldType] [F]
    (the rationals, the reals, ...), with [f32_val x] the exact value of a
    non-negative binary32 float:

    - [fl32_ratio_coin_bound]: for binary32 [p >= 0] and [q > 0], a coin uniform
      on the float32 grid passes [u < fl32(p / q)] with probability within
      [2^-24] (strictly) of [min(1, p / q)], the exact ratio of the values;
    - [fl32_ratio_coin_is_grid_coin]: when [fl32(p / q)] is finite, that
      probability is FloatCoin.v's [float32_coin] at the value of [fl32(p / q)]
      (the link between the Flocq model and the grid coin);
    - [fl32_verifier_TV]: the textbook verifier on binary32 rows whose values
      are distributions, with that test as its coin, emits a law within total
      variation [2^-24] (strictly) of the target.

    The float rows are taken at their exact values: that the rows sum to 1, and
    the float residual and its sum, are not modelled.  The theorems rest on
    Fl32Coin.v, hence on the standard reals' axioms (FloatGrid.axioms). *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition FloatCoin FloatGrid Fl32Coin.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Fl32.
Variable F : numFieldType.

(** The value of a non-negative binary32 float, [units x * 2^-149] (0 for a
    negative one, which no hypothesis below allows). *)
Definition f32_val (x : binary32) : F := (BinInt.Z.to_nat (units x))%:R / (2 ^ 149)%N%:R.

(** The probability that a coin uniform on the float32 grid passes the
    engine's test [u < fl32(p / q)], computed on floats. *)
Definition fl32_ratio_coin (p q : binary32) : F :=
  \sum_(0 <= k < 2 ^ 24) (2 ^ 24)%N%:R^-1 * (fl32_below p q k)%:R.

Lemma expn_pow m n : (m ^ n)%N = Nat.pow m n.
Proof. by elim: n => [|n IH] //; rewrite expnS IH. Qed.

Lemma expn_2_24 : (2 ^ 24)%N = grid_size.
Proof. exact: expn_pow. Qed.

Lemma sum_count (f : nat -> bool) n : \sum_(0 <= k < n) (f k)%:R = (count_below f n)%:R :> F.
Proof.
elim: n => [|n IH]; first by rewrite big_geq.
have -> : count_below f n.+1 = (count_below f n + f n)%N by [].
by rewrite big_nat_recr //= IH -natrD.
Qed.

(** Rewriting near [(2 ^ 24)%:R] or the count must never make Coq unfold
    them (a natural number's [%:R] is an iterated sum): the lemmas below keep
    them abstract and conclude by unification. *)
Lemma fl32_ratio_coin_count p q :
  fl32_ratio_coin p q = (count_below (fl32_below p q) grid_size)%:R / grid_size%:R.
Proof.
rewrite /fl32_ratio_coin -mulr_sumr sum_count -expn_2_24.
exact: mulrC.
Qed.

Lemma two_exp_24 : 2 ^- 24 = grid_size%:R^-1 :> F.
Proof. by rewrite -expn_2_24 natrX. Qed.

Lemma val_ratio (u v s : nat) : (0 < s)%N -> (u%:R / s%:R) / (v%:R / s%:R) = u%:R / v%:R :> F.
Proof.
move=> s0; have s0' : s%:R != 0 :> F by rewrite pnatr_eq0 -lt0n.
by rewrite invf_div mulf_div [s%:R * _]mulrC -mulf_div divff ?mulr1.
Qed.

Lemma f32_ratio p q :
  f32_val p / f32_val q = (BinInt.Z.to_nat (units p))%:R / (BinInt.Z.to_nat (units q))%:R :> F.
Proof. by rewrite /f32_val; apply: val_ratio; rewrite expn_gt0. Qed.

Lemma nat_ratio_close (c N a b : nat) : (0 < N)%N -> (0 < b)%N ->
  (c * b < N * a + b)%N -> (N * a < c * b + b)%N ->
  `|c%:R / N%:R - a%:R / b%:R| < N%:R^-1 :> F.
Proof.
move=> N0 b0 hi lo.
have N0' : N%:R != 0 :> F by rewrite pnatr_eq0 -lt0n.
have b0' : b%:R != 0 :> F by rewrite pnatr_eq0 -lt0n.
have -> : c%:R / N%:R - a%:R / b%:R = ((c * b)%:R - (N * a)%:R) / (N * b)%:R :> F.
  rewrite !natrM invfM mulrBl mulrACA divff // mulr1.
  by rewrite [N%:R * _ * _]mulrACA divff // mul1r.
have Nb : 0 < (N * b)%:R :> F by rewrite ltr0n muln_gt0 N0 b0.
rewrite normrM [`|(N * b)%:R^-1|]ger0_norm ?invr_ge0 ?ltW // ltr_pdivr_mulr //.
rewrite [(N * b)%:R]natrM mulrA mulVf // mul1r.
rewrite real_ltr_norml ?realB ?realn //.
rewrite ltr_subr_addl ltr_subl_addr -!natrD !ltr_nat lo /=.
by rewrite ltr_subl_addr -natrD ltr_nat addnC.
Qed.

(** A count [c] of [N] grid points as [fl32_count_bound] bounds it is within
    [1 / N] of [min(1, a / b)]. *)
Lemma coin_close (c N a b : nat) : (0 < N)%N -> (0 < b)%N ->
  ((b <= a)%N -> c = N) -> ((a < b)%N -> (c * b < N * a + b)%N /\ (N * a < c * b + b)%N) ->
  `|c%:R / N%:R - Num.min 1 (a%:R / b%:R)| < N%:R^-1 :> F.
Proof.
move=> N0 b0 ge lt.
have b0' : 0 < b%:R :> F by rewrite ltr0n.
have rab : a%:R / b%:R \is @Num.real F by apply: ger0_real; rewrite divr_ge0 ?ler0n.
case: (leqP b a) => [ba|ab].
- rewrite ge // divff ?pnatr_eq0 -?lt0n //.
  have -> : Num.min 1 (a%:R / b%:R) = 1 :> F.
    case: (real_leP (real1 F) rab) => // h; move: h.
    by rewrite ltr_pdivr_mulr // mul1r ltr_nat ltnNge ba.
  by rewrite subrr normr0 invr_gt0 ltr0n.
- have [hi lo] := lt ab.
  have -> : Num.min 1 (a%:R / b%:R) = a%:R / b%:R :> F.
    case: (real_leP (real1 F) rab) => // h; move: h.
    by rewrite ler_pdivl_mulr // mul1r ler_nat leqNgt ab.
  exact: nat_ratio_close.
Qed.

(** The code's coin: for binary32 [p >= 0] and [q > 0], a coin uniform on the
    float32 grid passes the engine's test [u < fl32(p / q)] with a probability
    within [2^-24] (strictly) of [min(1, p / q)], the exact ratio of the values. *)
Theorem fl32_ratio_coin_bound p q : nonneg_float p -> pos_float q ->
  `|fl32_ratio_coin p q - Num.min 1 (f32_val p / f32_val q)| < 2 ^- 24.
Proof.
move=> Hp Hq; have [b0 [ge lt]] := fl32_count_bound p q Hp Hq.
rewrite two_exp_24 f32_ratio fl32_ratio_coin_count.
(* no [//] here: [done] would try to decide [0 < 2^24] by computing in unary *)
apply: coin_close.
- by apply/ltP; exact: grid_size_pos.
- exact/ltP.
- by move=> h; apply: ge; exact/leP.
- move=> h; have [x y] := lt (ltP h).
  by split; apply/ltP; [exact: x | exact: y].
Qed.

Lemma lt_scaled (k u A B : nat) : (0 < A)%N -> (0 < B)%N ->
  (k%:R / B%:R < u%:R / (A * B)%:R :> F) = (k * A < u)%N.
Proof.
move=> A0 B0; have AB0 : (0 < A * B)%N by rewrite muln_gt0 A0 B0.
rewrite ltr_pdivr_mulr ?ltr0n // mulrAC ltr_pdivl_mulr ?ltr0n //.
by rewrite -!natrM ltr_nat mulnA ltn_pmul2r.
Qed.

Lemma grid_lt_val (k u : nat) :
  (k%:R / (2 ^ 24)%N%:R < u%:R / (2 ^ 149)%N%:R :> F) = (k * 2 ^ 125 < u)%N.
Proof.
have -> : (2 ^ 149 = 2 ^ 125 * 2 ^ 24)%N by rewrite -expnD.
by apply: lt_scaled; rewrite expn_gt0.
Qed.

(** The link: when [fl32(p / q)] is finite, the probability that the engine's
    test passes is the grid coin of FloatCoin.v (over any [numFieldType]) at the
    value of [fl32(p / q)]. *)
Theorem fl32_ratio_coin_is_grid_coin p q :
  nonneg_float p -> pos_float q -> BinarySingleNaN.is_finite (fl32_div p q) = true ->
  fl32_ratio_coin p q = float32_coin (f32_val (fl32_div p q)).
Proof.
move=> Hp Hq f; rewrite /fl32_ratio_coin /float32_coin /grid_coin.
rewrite !big_nat; apply: eq_bigr => k /= hk; congr (_ * (nat_of_bool _)%:R).
have hk' : (k < grid_size)%coq_nat by apply/ltP; rewrite -expn_2_24.
rewrite /f32_val grid_lt_val expn_pow.
apply: Bool.eq_true_iff_eq; split => h.
- by apply/ltP; apply/(below_units p q k Hp Hq f hk').
- by apply/(below_units p q k Hp Hq f hk'); apply/ltP.
Qed.

Section Verifier.
Variable T : finType.
Variables (pf qf : T -> binary32) (fallback : T -> F).

(** The textbook verifier on binary32 rows [pf] (target) and [qf] (draft),
    accepting the draft [x] when the float32 coin is below [fl32(pf x / qf x)]. *)
Definition fl32_verifier : T -> F :=
  verifier_with (fun x => fl32_ratio_coin (pf x) (qf x))
    (fun x => f32_val (pf x)) (fun x => f32_val (qf x)) fallback.

Theorem fl32_verifier_TV :
  (forall x, nonneg_float (pf x)) -> (forall x, nonneg_float (qf x)) ->
  is_distribution (fun x => f32_val (pf x)) -> is_distribution (fun x => f32_val (qf x)) ->
  is_distribution fallback ->
  TV fl32_verifier (fun x => f32_val (pf x)) < 2 ^- 24.
Proof.
move=> p0 q0 Hp Hq Hf.
apply: coin_TV_lt => // x qpos.
apply: fl32_ratio_coin_bound; first exact: p0.
apply: pos_of_units; first exact: q0.
apply/ltP.
move: qpos; rewrite /f32_val pmulr_lgt0 ?invr_gt0 ?ltr0n ?expn_gt0 //.
Qed.

End Verifier.
End Fl32.
