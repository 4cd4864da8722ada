(** * The float floor: a grid coin, the float32 coin, and the error they cause.

    Engines accept a draft when [u < r], [r = p x / q x], for a coin [u] that
    PyTorch's [torch.rand] in float32 draws uniformly from the [2^24] multiples
    of [2^-24] in [0, 1) (FloatGrid.v shows, with Flocq, that these are exactly
    binary32 values and that float comparison is real comparison).  Such a coin
    accepts with probability [ceil(r 2^24) / 2^24] rather than [min(1, r)]:

    - [grid_coin_bound]: for a coin uniform on the [N] points [k / N] of [0, 1),
      [min(1, r) <= P(u < r) < min(1, r) + 1 / N] for every [r >= 0];
    - [float32_coin_bound]: the same with [N = 2^24];
    - [coin_error_TV]: a verifier whose accept probabilities are off by
      [delta x] emits a law within total variation [sum_x q x * delta x] of [p];
    - [float32_verifier_TV]: with the float32 coin, one position's emitted law
      is within total variation [2^-24] of [p] (strictly less).

    Over any [numFieldType], like OnePosition.v; closed under the global
    context. *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section GridCoin.
Variable R : numFieldType.

(** Counting the grid points [k < N] below [t]: the count [c] is [N] (then
    [N - 1 < t]), or [t <= c] and [c - 1 < t] (so [c = ceil t]). *)
Lemma count_below (t : R) : 0 <= t -> forall N,
  let c := \sum_(0 <= k < N) ((k%:R < t)%R%:R : R) in
  (c = N%:R /\ N%:R - 1 < t) \/ (c < N%:R /\ t <= c /\ c - 1 < t).
Proof.
move=> t0; elim=> [|N IH] /=.
  left; rewrite big_geq // sub0r; split=> //.
  by apply: (lt_le_trans _ t0); rewrite oppr_lt0 ltr01.
rewrite big_nat_recr //=.
case: IH => [[-> hN] | [hlt [hle hm1]]].
- have [h|h] := boolP (N%:R < t).
  + by left; rewrite /= -natrD addn1; split=> //; rewrite mulrSr addrK.
  + right; rewrite /= addr0; split; first by rewrite ltr_nat.
    split=> //; have rt : t \is Num.real by apply: ger0_real.
    by case: (real_ltP (realn R N) rt) h.
- have h : (N%:R < t) = false.
    by apply: lt_gtF; apply: (le_lt_trans hle).
  right; rewrite h /= addr0; split=> //.
  by apply: (lt_trans hlt); rewrite ltr_nat.
Qed.

Lemma min1_real (r : R) : 0 <= r -> Num.min 1 r = if 1 <= r then 1 else r.
Proof.
by move=> r0; case: (real_leP (real1 R) (ger0_real r0)).
Qed.

(** The grid coin's acceptance probability exceeds [min(1, r)] by less than
    one grid step [1 / N]. *)
Theorem grid_coin_bound (N : nat) (r : R) :
  (0 < N)%N -> 0 <= r ->
  Num.min 1 r <= grid_coin N r < Num.min 1 r + N%:R^-1.
Proof.
move=> N0 r0; have Npos : 0 < N%:R :> R by rewrite ltr0n.
have rN0 : 0 <= r * N%:R by rewrite mulr_ge0 // ltW.
have -> : grid_coin N r = N%:R^-1 * \sum_(0 <= k < N) ((k%:R < r * N%:R)%R%:R : R).
  by rewrite /grid_coin mulr_sumr; apply: eq_bigr => k _; rewrite ltr_pdivr_mulr.
rewrite min1_real //.
case: (count_below rN0 N) => [[-> hN] | [hlt [hle hm1]]].
- rewrite mulVf ?lt0r_neq0 //.
  have Ninv : 0 < N%:R^-1 :> R by rewrite invr_gt0.
  case: ifP => [_|/negbT]; first by rewrite lexx /= ltr_addl.
  move=> nr1; have r1 : r < 1 by rewrite real_ltNge ?real1 ?ger0_real.
  rewrite ltW //=.
  rewrite -ltr_subl_addr -[X in X - _](divff (lt0r_neq0 Npos)) -[X in _ - X]mul1r.
  rewrite -mulrBl.
  by rewrite ltr_pdivr_mulr.
- set c := \sum_(0 <= k < N) _ in hlt hle hm1 *.
  have lo : r <= N%:R^-1 * c by rewrite mulrC ler_pdivl_mulr.
  have r1 : (1 <= r) = false.
    apply: lt_geF; apply: (le_lt_trans lo).
    by rewrite mulrC ltr_pdivr_mulr // mul1r.
  rewrite r1 lo /= -ltr_subl_addr -[X in _ - X]mulr1 -mulrBr mulrC.
  by rewrite ltr_pdivr_mulr.
Qed.

(** For the float32 coin: less than [2^-24] above [min(1, r)]. *)
Theorem float32_coin_bound (r : R) :
  0 <= r -> Num.min 1 r <= float32_coin r < Num.min 1 r + 2 ^- 24.
Proof.
move=> r0; have := @grid_coin_bound (2 ^ 24) r.
by rewrite natrX expn_gt0; apply.
Qed.

(** The [<=] coin's exact extra mass: [P(u <= r) - P(u < r)] is the mass of
    the grid points equal to [r] ([1 / N] when [r] is one, 0 otherwise). *)
Theorem grid_coin_le_extra (N : nat) (r : R) : 0 <= r ->
  grid_coin_le N r - grid_coin N r = N%:R^-1 * \sum_(0 <= k < N) (k%:R / N%:R == r)%:R.
Proof.
move=> r0; rewrite /grid_coin_le /grid_coin -sumrB mulr_sumr; apply: eq_bigr => k _.
rewrite -mulrBr; congr (_ * _).
have rk : k%:R / N%:R \is @Num.real R by apply: ger0_real; rewrite divr_ge0 ?ler0n.
rewrite le_eqVlt; case: eqP => [->|_] /=; first by rewrite ltxx subr0.
by rewrite subrr.
Qed.

(** At [r = 0] (a draft with [p x = 0]) the [<] coin never accepts and the
    [<=] coin accepts with probability [1 / N] (the grid point 0). *)
Corollary grid_coin_le_at_zero (N : nat) : (0 < N)%N ->
  grid_coin N (0 : R) = 0 /\ grid_coin_le N (0 : R) = N%:R^-1.
Proof.
move=> N0.
have lt0 : grid_coin N (0 : R) = 0.
  rewrite /grid_coin big1 // => k _.
  have : 0 <= k%:R / N%:R :> R by rewrite divr_ge0 ?ler0n.
  by move/le_gtF => ->; rewrite mulr0.
split=> //.
have := grid_coin_le_extra N (lexx (0 : R)); rewrite lt0 subr0 => ->.
rewrite -[RHS]mulr1; congr (_ * _); clear lt0; case: N N0 => // n _.
rewrite big_nat_recl //= mul0r eqxx big1 ?addr0 // => k _.
by rewrite mulf_eq0 invr_eq0 !pnatr_eq0.
Qed.

End GridCoin.

Section CoinError.
Variable R : numFieldType.
Variable T : finType.
Implicit Types (p q fallback acc : T -> R).

Lemma verifier_with_exact p q fallback y :
  verifier_with (accept_prob p q) p q fallback y = verifier p q fallback y.
Proof. by []. Qed.

Lemma verifier_with_unfold acc p q fallback y :
  verifier_with acc p q fallback y =
  q y * acc y + (\sum_x q x * (1 - acc x)) * resample p q fallback y.
Proof.
rewrite /verifier_with /bind.
under eq_bigr do rewrite big_bool /= /ret mulrDr.
rewrite big_split /= mulr_suml; congr (_ + _).
  rewrite (bigD1 y) //= eqxx mulr1 big1 ?addr0 // => x /negbTE ->.
  by rewrite mulr0 mulr0.
by apply: eq_bigr => x _; rewrite mulrA.
Qed.

Section WithDistributions.
Variables p q fallback : T -> R.
Hypotheses (Hp : is_distribution p) (Hq : is_distribution q)
           (Hf : is_distribution fallback).

Lemma resample_ge0 y : 0 <= resample p q fallback y.
Proof.
rewrite /resample; case: eqP => _; first by case: Hf.
apply: divr_ge0; first exact: residual_ge0.
by apply: sumr_ge0 => x _; apply: residual_ge0.
Qed.

Lemma resample_sum : \sum_y resample p q fallback y = 1.
Proof.
have [Z0|Zn0] := eqVneq (residual_mass p q) 0.
  by under eq_bigr => y _ do rewrite /resample Z0 eqxx; case: Hf.
under eq_bigr => y _ do rewrite /resample (negbTE Zn0).
by rewrite -mulr_suml divff.
Qed.

Lemma sub_sub_same (a b c : R) : (a - c) - (b - c) = a - b.
Proof. by rewrite opprB addrA subrK. Qed.

(** Changing the accept probabilities by [acc x - accept_prob p q x] moves the
    emitted law by at most [sum_x q x * |acc x - accept_prob p q x|] in total
    variation. *)
Theorem coin_error_TV acc :
  TV (verifier_with acc p q fallback) p <=
  \sum_x q x * `|acc x - accept_prob p q x|.
Proof.
have [q_ge0 _] := Hq.
set a := accept_prob p q; set res := resample p q fallback.
set D := \sum_x q x * `|acc x - a x|.
set D' := \sum_x q x * (acc x - a x).
have S' : \sum_x q x * (1 - acc x) = rejection_prob p q - D'.
  rewrite /rejection_prob /D' -sumrB; apply: eq_bigr => x _.
  by rewrite -mulrBr sub_sub_same.
have diff y : verifier_with acc p q fallback y - p y = q y * (acc y - a y) - D' * res y.
  rewrite verifier_with_unfold -(verifier_lossless fallback Hp Hq y) verifier_unfold S'.
  rewrite mulrBl mulrBr opprD addrACA.
  by rewrite [X in _ + X]addrAC subrr add0r.
have bound y : `|verifier_with acc p q fallback y - p y| <=
               q y * `|acc y - a y| + `|D'| * res y.
  rewrite diff; apply: (le_trans (ler_norm_sub _ _)).
  by rewrite !normrM (ger0_norm (q_ge0 y)) (ger0_norm (resample_ge0 y)).
have D'D : `|D'| <= D.
  apply: (le_trans (ler_norm_sum _ _ _)); apply: ler_sum => x _.
  by rewrite normrM (ger0_norm (q_ge0 x)).
rewrite /TV ler_pdivr_mulr ?ltr0n // mulr_natr mulr2n.
apply: (le_trans (ler_sum _ (fun y _ => bound y))).
rewrite big_split /= -mulr_sumr resample_sum mulr1.
by rewrite ler_add2l.
Qed.

(** One position with the float32 coin: the emitted law is within total
    variation [2^-24] of the target (strictly). *)
Theorem float32_verifier_TV : TV (float32_verifier p q fallback) p < 2 ^- 24.
Proof.
have [p_ge0 _] := Hp; have [q_ge0 q1] := Hq.
set eps : R := 2 ^- 24.
pose delta x := `|float32_coin (p x / q x) - accept_prob p q x|.
have delta_lt x : delta x < eps.
  have r0 : 0 <= p x / q x by rewrite divr_ge0.
  have [lo hi] := andP (float32_coin_bound r0).
  rewrite /delta /accept_prob ger0_norm ?subr_ge0 //.
  by rewrite ltr_subl_addr addrC.
apply: (le_lt_trans (coin_error_TV _)); rewrite -/(delta _) -subr_gt0.
have -> : eps - \sum_x q x * delta x = \sum_x q x * (eps - delta x).
  by rewrite -[X in X - _]mul1r -q1 mulr_suml -sumrB; apply: eq_bigr => x _; rewrite mulrBr.
rewrite lt0r sumr_ge0 ?andbT => [|x _]; last first.
  by rewrite mulr_ge0 // subr_ge0 ltW.
apply/eqP => sum0.
have nn x : 0 <= q x * (eps - delta x) by rewrite mulr_ge0 // subr_ge0 ltW.
have all0 := sum_nonneg_eq0 nn sum0.
have q0 x : q x = 0.
  have /eqP := all0 x; rewrite mulf_eq0 => /orP [/eqP //|].
  by rewrite subr_eq0 => /eqP h; move: (delta_lt x); rewrite h ltxx.
move: q1; rewrite big1 => [/esym/eqP|x _]; last exact: q0.
by rewrite oner_eq0.
Qed.

(** A coin within [eps] of [min(1, p x / q x)] at every token the draft can
    propose gives a law within total variation [eps] of [p] (strictly). *)
Theorem coin_TV_lt acc (eps : R) :
  (forall x, 0 < q x -> `|acc x - accept_prob p q x| < eps) ->
  TV (verifier_with acc p q fallback) p < eps.
Proof.
move=> close; have [q_ge0 q1] := Hq.
pose delta x := `|acc x - accept_prob p q x|.
apply: (le_lt_trans (coin_error_TV _)); rewrite -/(delta _) -subr_gt0.
have -> : eps - \sum_x q x * delta x = \sum_x q x * (eps - delta x).
  by rewrite -[X in X - _]mul1r -q1 mulr_suml -sumrB; apply: eq_bigr => x _; rewrite mulrBr.
have nn x : 0 <= q x * (eps - delta x).
  have [->|qx0] := eqVneq (q x) 0; first by rewrite mul0r.
  by rewrite mulr_ge0 // subr_ge0 ltW // close // lt_def qx0 q_ge0.
rewrite lt0r sumr_ge0 ?andbT => [|x _]; last exact: nn.
apply/eqP => sum0.
have all0 := sum_nonneg_eq0 nn sum0.
have q0 x : q x = 0.
  have [//|qx0] := eqVneq (q x) 0.
  have /eqP := all0 x; rewrite mulf_eq0 (negbTE qx0) /= subr_eq0 => /eqP h.
  by move: (close x); rewrite lt_def qx0 q_ge0 -/(delta x) -h ltxx => /(_ isT).
move: q1; rewrite big1 => [/esym/eqP|x _]; last exact: q0.
by rewrite oner_eq0.
Qed.

End WithDistributions.
End CoinError.
