(** * Block verification (Sun et al. 2024, Algorithm 2) is lossless for every gamma.

    [Spec.block_law p q fallback gamma c] is one step of block verification
    from prefix [c] (drafts, weights [p_i], residuals [(p_i M_b - M_s)+],
    thresholds [h_i], tau decided from the top), followed by the target up to
    [gamma + 1] tokens.  Proved here, for prefix-dependent rows that are
    distributions after every prefix and any fallback:

    - [block_draft_split] (the key lemma): below the level with accepted
      drafts [xs] and weight [a] in [0, 1], whatever law [L] the lower levels
      give, the rest of the step is [a] times the target continuing after [xs]
      plus [1 - a] times [L] (by induction on the drafts left: the next
      draft's acceptance mass [min(q, a p)] and the residual [(a p - q)+] add
      up to [a p], and [h]'s coin splits the rejected mass [S + 1 - a] into
      [S] for the residual and [1 - a] for the levels below);
    - [block_verification_lossless]: for every gamma, the first gamma + 1
      tokens have the target's joint law (Sun et al.'s Theorem 1);
    - [block_same_law_as_token_verification]: that law is token verification's
      (Chain.v) on the same tokens; [block_verification_lossless_le1] and
      [block_gamma1_is_token_verification] are the cases gamma <= 1, proved
      directly from the one-position verifier. *)

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

Section Every.
Variable R : numFieldType.
Variable T : finType.
Variables (p q fallback : seq T -> T -> R).
Hypotheses (Hp : forall c, is_distribution (p c)) (Hq : forall c, is_distribution (q c)).
Variable gamma : nat.

Lemma emits_rcons (xs : seq T) x (d : seq T -> R) s :
  emits xs (emit x d) s = emits (rcons xs x) d s.
Proof.
elim: xs s => [|y xs IH] s //=.
by case: s => [|z s] //=; rewrite IH.
Qed.

Lemma emits_sum (xs : seq T) (w : T -> R) (f : T -> seq T -> R) s :
  emits xs (fun t => \sum_x w x * f x t) s = \sum_x w x * emits xs (f x) s.
Proof.
elim: xs s => [|y xs IH] s //=.
case: s => [|z s] /=; first by rewrite big1 // => x _; rewrite mulr0.
by rewrite IH mulr_sumr; apply: eq_bigr => x _; rewrite mulrCA.
Qed.

Let G k c xs s x := emits xs (emit x (target_law p k (rcons c x))) s.

Lemma block_draft_split k : forall c xs a L s,
  0 <= a <= 1 -> (size xs + k = gamma)%N ->
  block_draft p q fallback gamma k c xs a L s =
    a * emits xs (target_law p k.+1 c) s + (1 - a) * L s.
Proof.
elim: k => [|k IH] c xs a L s /andP [a0 a1] sz.
  rewrite /= /bind big_bool /= /block_tail -sz addn0 subnn.
  by [].
have [p0 p1] := Hp c; have [q0 q1] := Hq c.
pose ap y := a * p c y.
have ap0 y : 0 <= ap y by rewrite mulr_ge0.
have apr y : ap y \is Num.real by apply: ger0_real.
have qr y : q c y \is Num.real by apply: ger0_real.
pose S := block_residual_mass p q a c.
pose h := block_h p q a c.
pose Tres := block_tail p gamma xs c (block_resample p q fallback a c).
rewrite /= /bind.
have acc x : 0 <= Num.min 1 (a * p c x / q c x) <= 1.
  have d0 : 0 <= a * p c x / q c x by apply: divr_ge0; [exact: ap0 | exact: q0].
  have r : a * p c x / q c x \is Num.real by apply: ger0_real.
  apply/andP; split.
    by case: (real_leP (real1 R) r).
  by case: (real_leP (real1 R) r) => // /ltW.
under eq_bigr => x _ do rewrite (IH _ _ _ _ _ (acc x)) ?size_rcons ?addSnnS //.
rewrite /= big_bool /=.
have qa x : q c x * Num.min 1 (a * p c x / q c x) = Num.min (ap x) (q c x).
  exact: (@accept_mass R T (fun y => a * p c y) (q c) x (ap0 x) (q0 x)).
under eq_bigr => x _ do rewrite mulrDr mulrA qa mulrA mulrBr mulr1 qa.
rewrite big_split /= -mulr_suml sumrB q1.
have sumap : \sum_x ap x = a by rewrite /ap -mulr_sumr p1 mulr1.
have beta : \sum_x Num.min (ap x) (q c x) = a - S.
  rewrite -sumap /S /block_residual_mass /block_residual -sumrB.
  apply: eq_bigr => x _.
  by rewrite (residual_eq (apr x) (qr x)) opprB addrC subrK.
rewrite beta opprB addrCA.
have gamk : (gamma - size xs = k.+1)%N by rewrite -sz addKn.
have Tres_eq : S * Tres s = \sum_y block_residual p q a c y * G k.+1 c xs s y.
  rewrite /Tres /block_tail gamk /bind emits_sum mulr_sumr.
  rewrite /block_resample -/S; case: eqP => [S0|/eqP S0].
    rewrite S0 [LHS]big1 => [|y _]; last by rewrite mul0r.
    symmetry; apply: big1 => y _.
    have -> : block_residual p q a c y = 0.
      apply: (sum_nonneg_eq0 _ S0) => z.
      by rewrite /block_residual; case: (real_ge0P (realB (apr z) (qr z))).
    by rewrite mul0r.
  by apply: eq_bigr => y _; rewrite mulrA mulrCA divff // mulr1.
have split_h : (S + (1 - a)) * (h * Tres s + (1 - h) * L s) = S * Tres s + (1 - a) * L s.
  rewrite /h /block_h -/S; case: eqP => [e|/eqP e].
    have S0 : S = 0.
      apply/eqP; rewrite eq_le; apply/andP; split; last first.
        by apply: sumr_ge0 => y _; rewrite /block_residual; case: (real_ge0P (realB (apr y) (qr y))).
      by rewrite -e ler_addl subr_ge0.
    have a1' : 1 - a = 0 by rewrite -e S0 add0r.
    by rewrite e S0 a1' !mul0r add0r.
  have e1 : (S + (1 - a)) * (S / (S + (1 - a))) = S by rewrite mulrC divfK.
  have e2 : (S + (1 - a)) * (1 - S / (S + (1 - a))) = 1 - a.
    by rewrite mulrBr mulr1 e1 addrAC subrr add0r.
  by rewrite mulrDr [(S + (1 - a)) * (_ * Tres s)]mulrA [(S + (1 - a)) * (_ * L s)]mulrA e1 e2.
rewrite split_h Tres_eq addrA; congr (_ + _).
rewrite -big_split /= emits_sum mulr_sumr.
apply: eq_bigr => x _.
rewrite /G emits_rcons -mulrDl addrC /block_residual.
rewrite mulrA; congr (_ * _).
by rewrite addrC (min_plus_residual (apr x) (qr x)).
Qed.

End Every.

Section Lossless.
Variable R : numFieldType.
Variable T : finType.
Variables (p q fallback : seq T -> T -> R).

(** Block verification is lossless for every gamma (Sun et al. 2024,
    Theorem 1): one step followed by the target emits the target's joint law
    of the first gamma + 1 tokens. *)
Theorem block_verification_lossless (gamma : nat) (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  forall s, block_law p q fallback gamma c s = target_law p gamma.+1 c s.
Proof.
move=> Hp Hq; case: gamma => [|g] s; first by [].
rewrite /block_law /bind.
pose K y := emit y (target_law p g.+1 (rcons c y)) s.
have -> : target_law p g.+2 c s = \sum_y p c y * K y by [].
rewrite -(verifier_then (fallback c) K (Hp c) (Hq c)).
apply: eq_bigr => x _; congr (_ * _).
have [p0 _] := Hp c; have [q0 _] := Hq c.
have a01 : 0 <= Num.min 1 (1 * p c x / q c x) <= 1.
  have d0 : 0 <= 1 * p c x / q c x by apply: divr_ge0; rewrite ?mul1r.
  have r : 1 * p c x / q c x \is Num.real by apply: ger0_real.
  apply/andP; split; first by case: (real_leP (real1 R) r).
  by case: (real_leP (real1 R) r) => // /ltW.
rewrite (@block_draft_split R T p q fallback Hp Hq g.+1 g (rcons c x) [:: x] _ _ s a01) ?add1n //.
rewrite mul1r -/(accept_prob (p c) (q c) x); congr (_ + _).
congr (_ * _); rewrite /block_tail /bind subn0; apply: eq_bigr => y _.
by rewrite block_resample_1.
Qed.

(** So block and token verification (Chain.v) emit the same law of the
    first gamma + 1 tokens (they differ in how many tokens a step emits). *)
Corollary block_same_law_as_token_verification (gamma : nat) (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  forall s, block_law p q fallback gamma c s = speculative_law p q fallback gamma gamma.+1 c s.
Proof.
move=> Hp Hq s.
by rewrite (block_verification_lossless _ _ Hp Hq) speculative_lossless.
Qed.

End Lossless.
