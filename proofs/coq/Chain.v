(** * Speculative decoding with gamma drafts and the bonus token is lossless.

    The target [p c] and the draft [q c] are next-token distributions that
    depend on the prefix [c] (a sequence of tokens).  One step of speculative
    decoding from prefix [c] drafts [gamma] tokens [x1 ... x_gamma], each from
    the draft given the prefix and the drafts before it; then verifies them in
    order with the one-position verifier of [OnePosition] (target and draft
    given the prefix so far); at the first rejection it emits a token drawn
    from the residual and the step ends; if all [gamma] drafts are accepted it
    emits a bonus token drawn from the target.  The next step starts from the
    extended prefix.

    Theorem [speculative_lossless]: for every [gamma] and every [n], the first
    [n] emitted tokens have the target's joint law; in particular
    ([first_block_lossless]) the first [gamma + 1] do.  The proof is by
    induction over the prefix tree (on [n], for every prefix). *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Chain.
Variable R : numFieldType.
Variable T : finType.

(** Target and draft next-token distributions given a prefix, and the
    fallback law used when a residual is empty. *)
Variables (p q fallback : seq T -> T -> R).

Variable gamma : nat.

(** The definitions are Spec.v's, for these [p], [q], [fallback] and [gamma]. *)
Local Notation target_law := (target_law p).
Local Notation draft := (draft q).
Local Notation verify := (verify p q fallback gamma).

Hypothesis p_dist : forall c, is_distribution (p c).
Hypothesis q_dist : forall c, is_distribution (q c).

(** Drafting is a weighted average with weights summing to 1, so it passes
    through affine maps of the continuation. *)
Lemma draft_affine k c (f g : seq T -> seq T -> R) s s' a b :
  (forall xs, f xs s = a * g xs s' + b) -> draft k c f s = a * draft k c g s' + b.
Proof.
elim: k c f g => [|k IH] c f g h /=; first exact: h.
rewrite /bind.
under eq_bigr => x _ do
  rewrite (IH (rcons c x) (fun xs => f (x :: xs)) (fun xs => g (x :: xs))
              (fun xs => h (x :: xs))) mulrDr mulrCA.
have [_ q1] := q_dist c.
by rewrite big_split /= -mulr_sumr -mulr_suml q1 mul1r.
Qed.

Lemma draft_const k c (d : seq T -> R) s : draft k c (fun _ => d) s = d s.
Proof.
by rewrite (@draft_affine k c _ (fun _ => d) s s 0 (d s)) ?mul0r ?add0r.
Qed.

Lemma draft_emit k c (f : seq T -> seq T -> R) x s :
  draft k c (fun xs => emit x (f xs)) s = emit x (draft k c f) s.
Proof.
case: s => [|y s] /=.
- rewrite (@draft_affine k c _ f [::] [::] 0 0) ?mul0r ?addr0 // => xs.
  by rewrite mul0r addr0.
- by rewrite (@draft_affine k c _ f (y :: s) s (x == y)%:R 0) ?addr0 // => xs; rewrite addr0.
Qed.

Lemma emit_ext x (d d' : seq T -> R) s :
  (forall s', d s' = d' s') -> emit x d s = emit x d' s.
Proof. by case: s => [|y s] //= h; rewrite h. Qed.

(** The invariant, by induction over the prefix tree: whatever drafts remain,
    drafting [k] more tokens and verifying yields the target's joint law. *)
Lemma draft_verify_target n : forall k c s,
  draft k c (verify n c) s = target_law n c s.
Proof.
elim: n => [|n IH] k c s.
  exact: (draft_const k c (ret R [::]) s).
have end_step y s' :
    emit y (draft gamma (rcons c y) (verify n (rcons c y))) s' =
    emit y (target_law n (rcons c y)) s'.
  by apply: emit_ext => s''; apply: IH.
case: k => [|k] /=.
  by rewrite /bind; apply: eq_bigr => y _; rewrite end_step.
rewrite /bind.
set a := accept_prob (p c) (q c).
set rejected := \sum_y resample (p c) (q c) (fallback c) y *
                  emit y (target_law n (rcons c y)) s.
have step x :
    draft k (rcons c x) (fun xs => verify n.+1 c (x :: xs)) s =
    a x * emit x (target_law n (rcons c x)) s + (1 - a x) * rejected.
  rewrite (@draft_affine k (rcons c x) _
             (fun xs => emit x (verify n (rcons c x) xs)) s s (a x)
             ((1 - a x) * rejected)).
  - by rewrite draft_emit (emit_ext x _ (IH k (rcons c x))).
  - move=> xs /=; rewrite /bind big_bool /=; congr (_ + _).
    by rewrite /rejected; congr (_ * _); apply: eq_bigr => y _; rewrite end_step.
under eq_bigr => x _ do rewrite step.
exact: (verifier_then (fallback c) (fun y => emit y (target_law n (rcons c y)) s)
          (p_dist c) (q_dist c)).
Qed.

End Chain.

(** Lossless: for every number of drafts [gamma], every prefix [c] and every
    [n], if the target and the draft give a distribution after every prefix,
    the first [n] tokens that speculative decoding emits after [c] have the
    target's joint law (for any fallback laws for empty residuals). *)
Theorem speculative_lossless (R : numFieldType) (T : finType)
    (p q fallback : seq T -> T -> R) (gamma n : nat) (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  forall s, speculative_law p q fallback gamma n c s = target_law p n c s.
Proof. by move=> p_dist q_dist s; apply: draft_verify_target. Qed.

(** In particular the first [gamma + 1] emitted tokens (one full step when
    every draft is accepted, the bonus token included) have the target's
    joint law. *)
Corollary first_block_lossless (R : numFieldType) (T : finType)
    (p q fallback : seq T -> T -> R) (gamma : nat) (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  forall s, speculative_law p q fallback gamma gamma.+1 c s = target_law p gamma.+1 c s.
Proof. exact: speculative_lossless. Qed.
