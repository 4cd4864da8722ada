(** * The textbook verifier accepts as often as any lossless verifier can.

    A single-draft verifier is a kernel [K]: given the drafted token [x] (drawn
    from [q]) it emits a token drawn from [K x].  It is lossless when the
    emitted law [bind q K] is the target [p], and it accepts the draft when it
    emits the drafted token itself, with probability [sum_x q x * K x x].

    - [lossless_acceptance_le_alpha]: every lossless verifier accepts with
      probability at most [alpha p q = sum_x min(p x, q x) = 1 - TV(p, q)];
    - [verifier_kernel_attains]: the textbook verifier (OnePosition.v), as a
      kernel, is lossless and accepts with probability exactly [alpha p q].

    So [1 - TV(p, q)] is the largest acceptance probability of any lossless
    single-draft verifier (the maximal coupling of [q] and [p]), and the
    textbook verifier attains it.  Closed under the global context. *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition FloatCoin.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section Optimal.
Variable R : numFieldType.
Variable T : finType.
Implicit Types (p q fallback : T -> R) (K : T -> T -> R).

Lemma le_min_real (a b c : R) :
  b \is Num.real -> c \is Num.real -> a <= b -> a <= c -> a <= Num.min b c.
Proof. by move=> rb rc hb hc; case: (real_leP rb rc). Qed.

(** Any lossless verifier accepts with probability at most [alpha p q]. *)
Theorem lossless_acceptance_le_alpha p q K :
  is_distribution p -> is_distribution q -> (forall x, is_distribution (K x)) ->
  (forall y, bind q K y = p y) ->
  kernel_acceptance q K <= alpha p q.
Proof.
move=> [p_ge0 _] [q_ge0 _] K_dist lossless.
apply: ler_sum => x _; apply: le_min_real; rewrite ?ger0_real //.
- rewrite -lossless /bind (bigD1 x) //= ler_addl.
  by apply: sumr_ge0 => y _; rewrite mulr_ge0 //; case: (K_dist y).
- rewrite -[X in _ <= X]mulr1; apply: ler_wpmul2l => //.
  have [K_ge0 K1] := K_dist x; rewrite -K1 (bigD1 x) //= ler_addl.
  by apply: sumr_ge0.
Qed.

(** Hence at most [1 - TV(p, q)]. *)
Corollary lossless_acceptance_le_1_minus_TV p q K :
  is_distribution p -> is_distribution q -> (forall x, is_distribution (K x)) ->
  (forall y, bind q K y = p y) ->
  kernel_acceptance q K <= 1 - TV p q.
Proof.
move=> Hp Hq HK lossless; rewrite -alpha_eq_1_minus_TV //.
exact: lossless_acceptance_le_alpha.
Qed.

Section Attains.
Variables p q fallback : T -> R.
Hypotheses (Hp : is_distribution p) (Hq : is_distribution q)
           (Hf : is_distribution fallback).

Lemma accept_prob_le1 x : accept_prob p q x <= 1.
Proof.
have [p_ge0 _] := Hp; have [q_ge0 _] := Hq.
rewrite /accept_prob; case: (real_leP (real1 R) (ger0_real (divr_ge0 (p_ge0 x) (q_ge0 x)))) => //.
by move/ltW.
Qed.

Lemma accept_prob_ge0 x : 0 <= accept_prob p q x.
Proof.
have [p_ge0 _] := Hp; have [q_ge0 _] := Hq.
rewrite /accept_prob; case: (real_leP (real1 R) (ger0_real (divr_ge0 (p_ge0 x) (q_ge0 x)))) => //.
by rewrite divr_ge0.
Qed.

Lemma verifier_kernel_dist x : is_distribution (verifier_kernel p q fallback x).
Proof.
have a0 := accept_prob_ge0 x; have a1 := accept_prob_le1 x.
split=> [y|].
  rewrite /verifier_kernel /bind big_bool /= /ret addr_ge0 ?mulr_ge0 ?ler0n ?subr_ge0 //.
  exact: resample_ge0.
rewrite /verifier_kernel /bind exchange_big big_bool /= -!mulr_sumr resample_sum //.
rewrite (bigD1 x) //= /ret eqxx big1 ?addr0 ?mulr1; first by rewrite addrC subrK.
by move=> y /negbTE; rewrite eq_sym => ->.
Qed.

(** The rejection branch never emits the drafted token itself: where it has
    mass, the draft is always accepted. *)
Lemma rejection_misses_draft x :
  q x * ((1 - accept_prob p q x) * resample p q fallback x) = 0.
Proof.
have [p_ge0 _] := Hp; have [q_ge0 _] := Hq.
have [->|qx0] := eqVneq (q x) 0; first by rewrite mul0r.
have qpos : 0 < q x by rewrite lt_def qx0 q_ge0.
have rp := ger0_real (p_ge0 x); have rq := ger0_real (q_ge0 x).
case: (real_leP rq rp) => [qp|pq].
  have -> : accept_prob p q x = 1.
    rewrite /accept_prob; case: (real_leP (real1 R) (ger0_real (divr_ge0 (p_ge0 x) (q_ge0 x)))) => // h.
    by move: h; rewrite ltr_pdivr_mulr // mul1r => /(le_lt_trans qp); rewrite ltxx.
  by rewrite subrr !mul0r mulr0.
have res0 : residual p q x = 0.
  by rewrite /residual; case: (real_ge0P (realB rp rq)) => //; rewrite subr_ge0 => /(lt_le_trans pq); rewrite ltxx.
rewrite /resample; case: eqP => [Z0|_]; last by rewrite res0 mul0r !mulr0.
(* Z = 0: then q <= p everywhere, against p x < q x *)
have := residual_mass_sym Hp Hq; rewrite -residual_mass_eq // Z0 => sym0.
have nn y : 0 <= Num.max (q y - p y) 0.
  by case: (real_ge0P (realB (ger0_real (q_ge0 y)) (ger0_real (p_ge0 y)))).
have := sum_nonneg_eq0 nn sym0 x.
case: (real_ge0P (realB rq rp)) => h; last first.
  by move: h; rewrite subr_lt0 => /(lt_trans pq); rewrite ltxx.
by move/eqP; rewrite subr_eq0 => /eqP qp; move: pq; rewrite qp ltxx.
Qed.

(** The textbook verifier, as a kernel, is lossless and accepts with
    probability [alpha p q]: the bound is attained. *)
Theorem verifier_kernel_attains :
  (forall x, is_distribution (verifier_kernel p q fallback x)) /\
  (forall y, bind q (verifier_kernel p q fallback) y = p y) /\
  kernel_acceptance q (verifier_kernel p q fallback) = alpha p q.
Proof.
split; first exact: verifier_kernel_dist.
split; first by move=> y; rewrite -(verifier_lossless fallback Hp Hq y).
rewrite -acceptance_prob_eq // /kernel_acceptance /acceptance_prob.
apply: eq_bigr => x _; rewrite /verifier_kernel /bind big_bool /= /ret eqxx mulr1.
by rewrite mulrDr rejection_misses_draft addr0.
Qed.

End Attains.
End Optimal.
