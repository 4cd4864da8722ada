(** * Block verification (Sun et al. 2024, Algorithm 2): the first cases.

    [Spec.block_law p q fallback gamma c] is one step of block verification
    from prefix [c] (drafts, weights [p_i], residuals [(p_i M_b - M_s)+],
    thresholds [h_i], tau decided from the top), followed by the target up to
    [gamma + 1] tokens.  Proved here, for prefix-dependent rows that are
    distributions after every prefix:

    - [block_verification_lossless_le1]: for gamma <= 1, the first gamma + 1
      tokens have the target's joint law (gamma = 0 is sampling the target;
      gamma = 1 is the textbook verifier with its bonus token);
    - [block_gamma1_is_token_verification]: at gamma = 1 block verification
      and token verification (Chain.v's [speculative_law]) emit the same law
      of the first two tokens.

    Lossless for every gamma (Sun et al.'s Theorem 1) is not proved here. *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition Chain.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Block.
Variable R : numFieldType.
Variable T : finType.
Variables (p q fallback : seq T -> T -> R).

(** With weight 1 the block residual is the textbook residual. *)
Lemma block_resample_1 c y :
  block_resample p q fallback 1 c y = resample (p c) (q c) (fallback c) y.
Proof.
have e : forall y, block_residual p q 1 c y = residual (p c) (q c) y.
  by move=> z; rewrite /block_residual /residual mul1r.
rewrite /block_resample /block_residual_mass /resample /residual_mass.
by rewrite (eq_bigr _ (fun y _ => e y)) e.
Qed.

Theorem block_verification_lossless_le1 (gamma : nat) (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  (gamma <= 1)%N ->
  forall s, block_law p q fallback gamma c s = target_law p gamma.+1 c s.
Proof.
move=> Hp Hq; case: gamma => [_|[|//] _] s; first by [].
rewrite /block_law /= /bind.
pose K y := emit y (target_law p 1 (rcons c y)) s.
have -> : \sum_x p c x * emit x (bind (p (rcons c x))
            (fun y => emit y (target_law p 0 (rcons (rcons c x) y)))) s = \sum_y p c y * K y by [].
rewrite -(verifier_then (fallback c) K (Hp c) (Hq c)).
apply: eq_bigr => x _; congr (_ * _).
rewrite big_bool /= mul1r -/(accept_prob (p c) (q c) x); congr (_ + _).
congr (_ * _); apply: eq_bigr => y _.
by rewrite block_resample_1.
Qed.

Corollary block_gamma1_is_token_verification (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  forall s, block_law p q fallback 1 c s = speculative_law p q fallback 1 2 c s.
Proof.
move=> Hp Hq s.
by rewrite (block_verification_lossless_le1 _ Hp Hq) // speculative_lossless.
Qed.

End Block.
