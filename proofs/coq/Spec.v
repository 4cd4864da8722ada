(** * The specification: every definition the theorems are about, in one file.

    This file is the model.  The other files prove theorems about these
    definitions and define nothing of their own (FloatGrid.v and Fl32Coin.v add
    the binary32 definitions, over Flocq).  Each definition's text is pinned in
    spec.json; tests/test_coq.py fails when a definition here changes and the
    pinned text does not, so a definition cannot be weakened together with its
    proofs unnoticed.

    Notation (as in specproof's DESIGN.md): [p] is the target's next-token
    distribution, [q] the draft's (never swapped).

    The lemmas at the end show that the definitions are not vacuous: a
    distribution exists, a verifier that always accepts emits the draft's law
    [q], one that never accepts emits the normalized residual, and the target's
    joint law obeys the chain rule. *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

(** ** Laws and programs *)

Section Programs.
Variable R : numFieldType.

(** A finite distribution on [T]: non-negative masses that sum to 1. *)
Definition is_distribution (T : finType) (d : T -> R) : Prop :=
  (forall x, 0 <= d x) /\ \sum_x d x = 1.

(** Programs on distributions.  A law is a mass function [U -> R];
    [bind d k] draws [x] from [d] (a finite sum over the draws) and runs [k x]. *)
Definition ret (T : eqType) (x : T) : T -> R := fun y => (x == y)%:R.

Definition bind (T : finType) (U : Type) (d : T -> R) (k : T -> U -> R) : U -> R :=
  fun u => \sum_x d x * k x u.

(** A coin that comes up [true] with probability [a]. *)
Definition coin (a : R) : bool -> R := fun b => if b then a else 1 - a.

End Programs.

(** ** One verification step *)

Section OnePosition.
Variable R : numFieldType.
Variable T : finType.
Implicit Types (p q fallback acc : T -> R) (x y : T).

(** [min(1, p x / q x)]; where [q x = 0] the token is never drafted (and
    MathComp's [p x / 0 = 0] makes the value 0, which no law depends on). *)
Definition accept_prob p q x : R := Num.min 1 (p x / q x).

(** The residual [(p - q)+] and its mass [Z]. *)
Definition residual p q x : R := Num.max (p x - q x) 0.
Definition residual_mass p q : R := \sum_x residual p q x.

(** Draw from the residual normalized by [Z]; when [Z = 0] (that is, [p == q])
    the rejection branch has probability 0 and an arbitrary [fallback] law is
    used instead. *)
Definition resample p q fallback : T -> R := fun y =>
  if residual_mass p q == 0 then fallback y else residual p q y / residual_mass p q.

(** The verifier, as a program: draft [x] from [q]; accept it with probability
    [accept_prob p q x] and emit [x]; otherwise emit a draw from [resample]. *)
Definition verifier p q fallback : T -> R :=
  bind q (fun x =>
  bind (coin (accept_prob p q x)) (fun accepted =>
  if accepted then ret R x else resample p q fallback)).

(** Probability that the drafted token is accepted, and that it is rejected. *)
Definition acceptance_prob p q : R := \sum_x q x * accept_prob p q x.
Definition rejection_prob p q : R := \sum_x q x * (1 - accept_prob p q x).

Definition alpha p q : R := \sum_x Num.min (p x) (q x).
Definition TV p q : R := (\sum_x `|p x - q x|) / 2.

(** The verifier with the accept probability [acc x] in place of
    [min(1, p x / q x)]; the rest (draft from [q], residual) unchanged. *)
Definition verifier_with acc p q fallback : T -> R :=
  bind q (fun x =>
  bind (coin (acc x)) (fun accepted =>
  if accepted then ret R x else resample p q fallback)).

End OnePosition.

(** ** Single-draft verifiers as kernels (Optimal.v)

    A single-draft verifier is a kernel [K]: given the drafted token [x] it
    emits a token drawn from [K x]; it accepts the draft when it emits [x]. *)

Section Kernels.
Variable R : numFieldType.
Variable T : finType.
Implicit Types (p q fallback : T -> R) (K : T -> T -> R).

(** The probability that the verifier emits the token it was given. *)
Definition kernel_acceptance q K : R := \sum_x q x * K x x.

(** The textbook verifier as a kernel: given the draft [x], emit [x] with
    probability [accept_prob p q x], else a draw from the residual. *)
Definition verifier_kernel p q fallback (x : T) : T -> R :=
  bind (coin (accept_prob p q x)) (fun accepted =>
  if accepted then ret R x else resample p q fallback).

End Kernels.

(** ** The chain: gamma drafts per step and the bonus token *)

Section Chain.
Variable R : numFieldType.
Variable T : finType.

(** Target and draft next-token distributions given a prefix, and the
    fallback law used when a residual is empty. *)
Variables (p q fallback : seq T -> T -> R).

(** Laws over token sequences are mass functions [seq T -> R].
    [emit x d]: emit the token [x], then tokens distributed as [d]. *)
Definition emit (x : T) (d : seq T -> R) : seq T -> R := fun s =>
  if s is y :: s' then (x == y)%:R * d s' else 0.

(** The target's joint law of the next [n] tokens after prefix [c]. *)
Fixpoint target_law (n : nat) (c : seq T) : seq T -> R :=
  if n is n'.+1 then bind (p c) (fun y => emit y (target_law n' (rcons c y)))
  else ret R [::].

(** Draft [k] tokens after prefix [c], each from the draft given the prefix and
    the drafts before it, then continue with [cont drafts]. *)
Fixpoint draft (k : nat) (c : seq T) (cont : seq T -> seq T -> R) : seq T -> R :=
  if k is k'.+1 then bind (q c) (fun x => draft k' (rcons c x) (fun xs => cont (x :: xs)))
  else cont [::].

Variable gamma : nat.

(** [verify n c xs]: the law of the next [n] emitted tokens when the prefix is
    [c] and the drafts [xs] of the current step remain to be verified.  Every
    emitted token extends the prefix; after a residual or a bonus token a new
    step drafts [gamma] tokens. *)
Fixpoint verify (n : nat) (c : seq T) (xs : seq T) : seq T -> R :=
  if n is n'.+1 then
    let end_step y := emit y (draft gamma (rcons c y) (verify n' (rcons c y))) in
    if xs is x :: xs' then
      bind (coin (accept_prob (p c) (q c) x)) (fun accepted =>
      if accepted then emit x (verify n' (rcons c x) xs')
      else bind (resample (p c) (q c) (fallback c)) end_step)
    else bind (p c) end_step
  else ret R [::].

(** Speculative decoding from prefix [c]: the law of its first [n] tokens. *)
Definition speculative_law (n : nat) (c : seq T) : seq T -> R :=
  draft gamma c (verify n c).

(** The chain with the accept probability [acc c x] (prefix [c], draft [x]) in
    place of [min(1, p c x / q c x)]; the rest (drafts, residual, bonus token)
    as in [verify]. *)
Variable acc : seq T -> T -> R.

Fixpoint verify_with (n : nat) (c : seq T) (xs : seq T) : seq T -> R :=
  if n is n'.+1 then
    let end_step y := emit y (draft gamma (rcons c y) (verify_with n' (rcons c y))) in
    if xs is x :: xs' then
      bind (coin (acc c x)) (fun accepted =>
      if accepted then emit x (verify_with n' (rcons c x) xs')
      else bind (resample (p c) (q c) (fallback c)) end_step)
    else bind (p c) end_step
  else ret R [::].

Definition speculative_law_with (n : nat) (c : seq T) : seq T -> R :=
  draft gamma c (verify_with n c).

(** Total variation between two laws of the next [n] tokens, over the
    sequences of length [n] (where the laws above put all their mass). *)
Definition TV_tokens (n : nat) (d d' : seq T -> R) : R :=
  (\sum_(t : n.-tuple T) `|d t - d' t|) / 2.

End Chain.

(** ** Block verification (Sun et al. 2024, Algorithm 2)

    One step drafts [X_1 .. X_gamma] (each from the draft given the prefix and
    the drafts before it), with the weights [p_0 = 1] and
    [p_i = min(1, p_(i-1) M_b(X_i) / M_s(X_i))] ([M_b] the target [p], [M_s]
    the draft [q], given the prefix [X^(i-1)]); after [X^i] the residual is
    [(p_i M_b - M_s)+] with mass [S_i], and [h_i = S_i / (S_i + 1 - p_i)] (0
    when [S_i + 1 - p_i = 0]) for [i < gamma], [h_gamma = p_gamma].  With
    independent coins, tau is the largest [i] whose coin [eta_i <= h_i]
    passes (decided from the top; [tau = 0] when none passes); the step emits
    [X^tau] and a token [Y] drawn from the normalized residual after [X^tau]
    ([tau < gamma]) or from the target after [X^gamma] ([tau = gamma]).  As
    specproof's [block_verification_law], the stream continues by sampling the
    target up to [gamma + 1] tokens, which the lossless statement compares with
    the target's joint law. *)

Section Block.
Variable R : numFieldType.
Variable T : finType.
Variables (p q fallback : seq T -> T -> R).

(** The residual [(a p c - q c)+] after prefix [c] with weight [a], its mass,
    and a draw from it normalized ([fallback c] when it is empty). *)
Definition block_residual (a : R) (c : seq T) (y : T) : R := Num.max (a * p c y - q c y) 0.
Definition block_residual_mass (a : R) (c : seq T) : R := \sum_y block_residual a c y.
Definition block_resample (a : R) (c : seq T) : T -> R := fun y =>
  if block_residual_mass a c == 0 then fallback c y
  else block_residual a c y / block_residual_mass a c.

(** [h = S / (S + 1 - a)], 0 when [S + 1 - a = 0]. *)
Definition block_h (a : R) (c : seq T) : R :=
  if block_residual_mass a c + (1 - a) == 0 then 0
  else block_residual_mass a c / (block_residual_mass a c + (1 - a)).

Variable gamma : nat.

(** Emit the tokens [xs], then tokens distributed as [d]. *)
Fixpoint emits (xs : seq T) (d : seq T -> R) : seq T -> R :=
  if xs is x :: xs' then emit x (emits xs' d) else d.

(** The stream after tau = [size xs]: the accepted drafts [xs], a token [y]
    drawn from [d] after the prefix [c] (which ends with [xs]), then the target
    up to [gamma + 1] tokens. *)
Definition block_tail (xs c : seq T) (d : T -> R) : seq T -> R :=
  emits xs (bind d (fun y => emit y (target_law p (gamma - size xs) (rcons c y)))).

(** [block_draft k c xs a L]: [xs] drafted so far (prefix [c]), [a = p_(size xs)],
    [L] the law of the stream given tau < [size xs]; [k] drafts remain.  At the
    top ([k = 0]) the coin is [a]; below it, [h]. *)
Fixpoint block_draft (k : nat) (c xs : seq T) (a : R) (L : seq T -> R) : seq T -> R :=
  if k is k'.+1 then
    let L' := bind (coin (block_h a c)) (fun b => if b then block_tail xs c (block_resample a c) else L) in
    bind (q c) (fun x => block_draft k' (rcons c x) (rcons xs x) (Num.min 1 (a * p c x / q c x)) L')
  else bind (coin a) (fun b => if b then block_tail xs c (p c) else L).

(** One step of block verification from prefix [c], then the target: the law
    of the first [gamma + 1] tokens.  Level 0 is taken whenever no coin above
    passes (tau = 0: a draw from the first residual [(p c - q c)+]). *)
Definition block_law (c : seq T) : seq T -> R :=
  if gamma is g'.+1 then
    bind (q c) (fun x => block_draft g' (rcons c x) [:: x] (Num.min 1 (1 * p c x / q c x))
                           (block_tail [::] c (block_resample 1 c)))
  else block_tail [::] c (p c).

End Block.

(** ** The float coin's grid *)

Section GridCoin.
Variable R : numFieldType.

(** A coin [u] uniform on the grid [0, 1/N, ..., (N-1)/N] of [0, 1): the
    probability that [u < r]. *)
Definition grid_coin (N : nat) (r : R) : R :=
  \sum_(0 <= k < N) N%:R^-1 * (k%:R / N%:R < r)%R%:R.

(** The float32 coin: [N = 2^24]. *)
Definition float32_coin (r : R) : R := grid_coin (2 ^ 24) r.

(** The same coin with the test [u <= r] (a [<=] coin), as some engines
    write it. *)
Definition grid_coin_le (N : nat) (r : R) : R :=
  \sum_(0 <= k < N) N%:R^-1 * (k%:R / N%:R <= r)%R%:R.

End GridCoin.

(** The float32 verifier: accept [x] when the float32 coin is below the exact
    ratio [p x / q x]. *)
Definition float32_verifier (R : numFieldType) (T : finType) (p q fallback : T -> R) : T -> R :=
  verifier_with (fun x => float32_coin (p x / q x)) p q fallback.

(** ** The definitions are not vacuous *)

Section NonVacuity.
Variable R : numFieldType.
Variable T : finType.
Implicit Types (p q fallback : T -> R).

(** Distributions exist: a point mass is one. *)
Lemma ret_is_distribution (x : T) : is_distribution (ret R x).
Proof.
split=> [y|]; first by rewrite /ret ler0n.
by rewrite /ret (bigD1 x) //= eqxx big1 ?addr0 // => y /negbTE; rewrite eq_sym => ->.
Qed.

Lemma bind_ret_r p (y : T) : bind p (fun x => ret R x) y = p y.
Proof.
rewrite /bind /ret (bigD1 y) //= eqxx mulr1 big1 ?addr0 // => x /negbTE ->.
by rewrite mulr0.
Qed.

(** A verifier that always accepts emits the draft's law [q]. *)
Lemma always_accept_emits_q p q fallback y :
  verifier_with (fun _ => 1) p q fallback y = q y.
Proof.
rewrite -(bind_ret_r q y) /verifier_with /bind; apply: eq_bigr => x _.
by rewrite big_bool /= subrr !mul0r mul1r addr0.
Qed.

(** A verifier that never accepts emits the residual [(p - q)+] normalized by
    its mass (when the draft is a law and the residual is not empty). *)
Lemma never_accept_emits_residual p q fallback y :
  \sum_x q x = 1 -> residual_mass p q != 0 ->
  verifier_with (fun _ => 0) p q fallback y = residual p q y / residual_mass p q.
Proof.
move=> q1 Zn0; rewrite /verifier_with /bind.
under eq_bigr do rewrite big_bool /= subr0 mul0r add0r mul1r.
by rewrite -mulr_suml q1 mul1r /resample (negbTE Zn0).
Qed.

(** The target's joint law obeys the chain rule: the first token has law
    [p c], the rest the target's law after it. *)
Lemma target_law_chain_rule (p : seq T -> T -> R) n c y s :
  target_law p n.+1 c (y :: s) = p c y * target_law p n (rcons c y) s.
Proof.
rewrite /= /bind (bigD1 y) //= eqxx mul1r big1 ?addr0 // => x /negbTE ->.
by rewrite mul0r mulr0.
Qed.

Lemma target_law_nil (p : seq T -> T -> R) n c :
  target_law p n.+1 c [::] = 0.
Proof. by rewrite /= /bind big1 // => x _; rewrite mulr0. Qed.

End NonVacuity.
