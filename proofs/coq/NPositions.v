(** * n positions: total variation through a two-stage law, and the n-token bound.

    - [TV_bind]: for laws over finite types, the total variation between two
      two-stage laws [bind d1 k1] and [bind d2 k2] (a first draw, then a
      kernel) is at most the total variation of the first stages plus the
      [d1]-expected total variation of the kernels; [TV_bind_le]: plus the
      largest total variation of the kernels.
    - [speculative_TV_tokens]: over Spec.v's chain with the accept probability
      [acc c x] in place of [min(1, p c x / q c x)] ([verify_with],
      [speculative_law_with]: gamma drafts per step, residual at the first
      rejection, bonus token), if every position's verifier
      [verifier_with (acc c) (p c) (q c) (fallback c)] is within total
      variation [eps] of the target's row [p c], the first [n] emitted tokens
      are within total variation [n eps] of the target's joint law
      ([TV_tokens]: over the sequences of length [n]).  The proof is by
      induction over the prefix tree, like Chain.v's.
    - [float32_speculative_TV_tokens]: with the float32 coin ([u < p c x / q c x],
      [u] on the [2^24]-point grid; FloatCoin.v's per-position bound [2^-24]):
      within [n 2^-24].
    - [speculative_law_with_exact]: with the exact accept probability
      [min(1, p/q)] the chain with a coin is Chain.v's, hence lossless.

    Over any [numFieldType]; closed under the global context. *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec OnePosition Chain FloatCoin.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section TVBind.
Variable R : numFieldType.
Variables T U : finType.

Lemma TV_ge0 (d d' : U -> R) : 0 <= TV d d'.
Proof. by rewrite /TV divr_ge0 ?ler0n // sumr_ge0. Qed.

(** The total variation of a two-stage law: at most that of the first stages
    plus the [d1]-expected total variation of the kernels. *)
Theorem TV_bind (d1 d2 : T -> R) (k1 k2 : T -> U -> R) :
  (forall x, 0 <= d1 x) -> (forall x, is_distribution (k2 x)) ->
  TV (bind d1 k1) (bind d2 k2) <= TV d1 d2 + \sum_x d1 x * TV (k1 x) (k2 x).
Proof.
move=> d1_ge0 k2_dist.
have -> : \sum_x d1 x * TV (k1 x) (k2 x) =
          (\sum_x d1 x * \sum_u `|k1 x u - k2 x u|) / 2.
  by rewrite mulr_suml; apply: eq_bigr => x _; rewrite /TV mulrA.
rewrite /TV -mulrDl ler_pmul2r ?invr_gt0 ?ltr0n //.
have pt u : `|bind d1 k1 u - bind d2 k2 u| <=
            \sum_x (d1 x * `|k1 x u - k2 x u| + `|d1 x - d2 x| * k2 x u).
  rewrite /bind -sumrB; apply: (le_trans (ler_norm_sum _ _ _)); apply: ler_sum => x _.
  have e : d1 x * (k1 x u - k2 x u) + (d1 x - d2 x) * k2 x u =
           d1 x * k1 x u - d2 x * k2 x u by rewrite mulrBr mulrBl addrA subrK.
  rewrite -e; apply: (le_trans (ler_norm_add _ _)).
  have [k2_ge0 _] := k2_dist x.
  by rewrite !normrM (ger0_norm (d1_ge0 x)) (ger0_norm (k2_ge0 u)).
apply: (le_trans (ler_sum _ (fun u _ => pt u))).
rewrite exchange_big /=.
under eq_bigr => x _ do rewrite big_split /= -!mulr_sumr.
rewrite big_split /= addrC; apply: ler_add => //.
by apply: ler_sum => x _; have [_ ->] := k2_dist x; rewrite mulr1.
Qed.

(** With a bound [eps] on every kernel's total variation. *)
Corollary TV_bind_le (d1 d2 : T -> R) (k1 k2 : T -> U -> R) (eps : R) :
  is_distribution d1 -> (forall x, is_distribution (k2 x)) ->
  (forall x, TV (k1 x) (k2 x) <= eps) ->
  TV (bind d1 k1) (bind d2 k2) <= TV d1 d2 + eps.
Proof.
move=> [d1_ge0 d1_1] k2_dist keps.
apply: (le_trans (TV_bind d2 k1 d1_ge0 k2_dist)); rewrite ler_add2l.
rewrite -[X in _ <= X]mul1r -d1_1 mulr_suml; apply: ler_sum => x _.
exact: ler_wpmul2l.
Qed.

End TVBind.

(** ** n positions: the chain with any per-position coin *)

Section Tuples.
Variable R : numFieldType.
Variable T : finType.

Lemma sum_tuple0 (F : seq T -> R) : \sum_(t : 0.-tuple T) F t = F [::].
Proof. by rewrite (big_pred1 [tuple]) // => t; apply/esym/eqP; exact: tuple0. Qed.

Lemma sum_tupleS n (F : seq T -> R) :
  \sum_(t : n.+1.-tuple T) F t = \sum_y \sum_(t : n.-tuple T) F (y :: t).
Proof.
rewrite (reindex (fun yt : T * n.-tuple T => [tuple of yt.1 :: yt.2])) /=.
  by rewrite pair_big.
apply: onW_bij; exists (fun t : n.+1.-tuple T => (thead t, [tuple of behead t])).
  by case=> y t /=; rewrite theadE; congr pair; apply: val_inj.
by move=> t; rewrite [RHS]tuple_eta.
Qed.

Lemma emit_ge0 (x : T) (d : seq T -> R) s :
  (forall s', 0 <= d s') -> 0 <= emit x d s.
Proof. by case: s => [|y s] //= h; rewrite mulr_ge0 ?ler0n. Qed.

Lemma target_law_ge0 (p : seq T -> T -> R) n c s :
  (forall c, is_distribution (p c)) -> 0 <= target_law p n c s.
Proof.
move=> p_dist; elim: n c s => [|n IH] c s /=; first by rewrite /ret ler0n.
apply: sumr_ge0 => y _; have [p0 _] := p_dist c.
by rewrite mulr_ge0 // emit_ge0.
Qed.

Lemma target_law_sum (p : seq T -> T -> R) n c :
  (forall c, is_distribution (p c)) ->
  \sum_(t : n.-tuple T) target_law p n c t = 1.
Proof.
move=> p_dist; elim: n c => [|n IH] c; first by rewrite sum_tuple0 /= /ret eqxx.
rewrite sum_tupleS; under eq_bigr => y _ do
  under eq_bigr => t _ do rewrite target_law_chain_rule.
under eq_bigr => y _ do rewrite -mulr_sumr IH mulr1.
by have [_ ->] := p_dist c.
Qed.

End Tuples.

Lemma regroup (R : numFieldType) (a b l1 l2 pp t : R) :
  a * l1 + b * l2 - pp * t = a * (l1 - t) + b * (l2 - t) + (a + b - pp) * t.
Proof.
rewrite !mulrBr !mulrBl mulrDl -!addrA; congr (_ + _).
rewrite (addrCA (- (a * t))); congr (_ + _).
by rewrite (addrCA (- (b * t))) !addKr.
Qed.

Section ChainTV.
Variable R : numFieldType.
Variable T : finType.
Variables (p q fallback acc : seq T -> T -> R) (gamma : nat) (eps : R).

Hypothesis p_dist : forall c, is_distribution (p c).
Hypothesis q_dist : forall c, is_distribution (q c).
Hypothesis f_dist : forall c, is_distribution (fallback c).
Hypothesis acc_ge0 : forall c x, 0 <= acc c x.
Hypothesis acc_le1 : forall c x, acc c x <= 1.
Hypothesis step_TV :
  forall c, TV (verifier_with (acc c) (p c) (q c) (fallback c)) (p c) <= eps.

Local Notation L n k c := (draft q k c (verify_with p q fallback gamma acc n c)).

Lemma L_nil k c s : L 0 k c s = ret R [::] s.
Proof. exact: (draft_const q_dist k c (ret R [::]) s). Qed.

Lemma L_bonus n c y s : L n.+1 0 c (y :: s) = p c y * L n gamma (rcons c y) s.
Proof.
rewrite /= /bind (bigD1 y) //= eqxx mul1r big1 ?addr0 // => z /negbTE ->.
by rewrite mul0r mulr0.
Qed.

Lemma L_step n k c y s :
  L n.+1 k.+1 c (y :: s) =
  q c y * acc c y * L n k (rcons c y) s +
  (\sum_x q c x * (1 - acc c x)) * resample (p c) (q c) (fallback c) y *
    L n gamma (rcons c y) s.
Proof.
set R0 := resample (p c) (q c) (fallback c) y * L n gamma (rcons c y) s.
have step x : draft q k (rcons c x) (fun xs => verify_with p q fallback gamma acc n.+1 c (x :: xs)) (y :: s)
    = (acc c x * (x == y)%:R) * L n k (rcons c x) s + (1 - acc c x) * R0.
  apply: (draft_affine q_dist) => xs /=; rewrite /bind big_bool /= mulrA; congr (_ + _).
  rewrite /R0 (bigD1 y) //= eqxx mul1r big1 ?addr0 // => z /negbTE ->.
  by rewrite mul0r mulr0.
rewrite /= /bind; under eq_bigr => x _ do rewrite step mulrDr.
rewrite big_split /=; congr (_ + _).
  rewrite (bigD1 y) //= eqxx mulr1 big1 ?addr0 ?mulrA // => x /negbTE ->.
  by rewrite mulr0 mul0r mulr0.
by under eq_bigr do rewrite mulrA; rewrite -mulr_suml /R0 mulrA.
Qed.

Lemma eps_ge0 : 0 <= eps.
Proof. exact: le_trans (TV_ge0 _ _) (step_TV [::]). Qed.

(** The invariant, by induction over the prefix tree: whatever drafts remain,
    the law of the next [n] tokens is within l1 distance [2 n eps] of the
    target's. *)
Lemma l1_bound n : forall k c,
  \sum_(t : n.-tuple T) `|L n k c t - target_law p n c t| <= (n%:R * eps) *+ 2.
Proof.
have e0 := eps_ge0.
elim: n => [|n IH] k c.
  by rewrite big1 ?mul0r ?mul0rn // => t _; rewrite L_nil subrr normr0.
have mono : (n%:R * eps) *+ 2 + eps *+ 2 = (n.+1%:R * eps) *+ 2.
  by rewrite -mulrnDl -[n.+1]addn1 natrD mulrDl mul1r.
rewrite (sum_tupleS n (fun s => `|L n.+1 k c s - target_law p n.+1 c s|)).
have [p0 p1] := p_dist c; have [q0 q1] := q_dist c.
case: k => [|k].
  under eq_bigr => y _ do under eq_bigr => t _ do
    rewrite L_bonus target_law_chain_rule -mulrBr normrM (ger0_norm (p0 y)).
  under eq_bigr => y _ do rewrite -mulr_sumr.
  apply: (@le_trans _ _ (\sum_y p c y * ((n%:R * eps) *+ 2))).
    by apply: ler_sum => y _; apply: ler_wpmul2l; [apply: p0 | apply: IH].
  rewrite -mulr_suml p1 mul1r -mono ler_addl.
  by rewrite mulrn_wge0.
set S := \sum_x q c x * (1 - acc c x).
set res := resample (p c) (q c) (fallback c).
pose A y := q c y * acc c y; pose B y := S * res y.
have A0 y : 0 <= A y by rewrite mulr_ge0.
have B0 y : 0 <= B y.
  rewrite mulr_ge0 ?resample_ge0 //; apply: sumr_ge0 => x _.
  by rewrite mulr_ge0 ?subr_ge0.
have Vsum : \sum_y (A y + B y) = 1.
  rewrite big_split /= -mulr_sumr resample_sum // mulr1 /S -big_split /=.
  by under eq_bigr do rewrite -mulrDr addrC subrK mulr1.
have pt y t : `|L n.+1 k.+1 c (y :: t) - target_law p n.+1 c (y :: t)| <=
    A y * `|L n k (rcons c y) t - target_law p n (rcons c y) t| +
    B y * `|L n gamma (rcons c y) t - target_law p n (rcons c y) t| +
    `|A y + B y - p c y| * target_law p n (rcons c y) t.
  rewrite L_step target_law_chain_rule (regroup (A y) (B y)).
  apply: (le_trans (ler_norm_add _ _)); apply: ler_add; last first.
    by rewrite normrM [X in _ * X]ger0_norm //; apply: target_law_ge0.
  apply: (le_trans (ler_norm_add _ _)).
  by rewrite (normrM (A y)) (normrM (B y)) (ger0_norm (A0 y)) (ger0_norm (B0 y)).
apply: le_trans; first by apply: ler_sum => y _; apply: ler_sum => t _; apply: pt.
under eq_bigr => y _ do rewrite !big_split /= -!mulr_sumr target_law_sum // mulr1.
rewrite big_split /= -mono; apply: ler_add.
  apply: (@le_trans _ _ (\sum_y (A y + B y) * ((n%:R * eps) *+ 2))).
    by apply: ler_sum => y _; rewrite mulrDl ler_add // ler_wpmul2l.
  by rewrite -mulr_suml Vsum mul1r.
have h := step_TV c; rewrite /TV ler_pdivr_mulr ?ltr0n // mulr_natr in h.
apply: le_trans h; apply: ler_sum => y _.
by rewrite verifier_with_unfold.
Qed.

End ChainTV.

(** The n-token bound: if every position's verifier (the coin [acc c] at
    prefix [c]) emits a law within total variation [eps] of the target's row
    [p c], then the first [n] tokens that speculative decoding with that coin
    emits after any prefix [c] (gamma drafts per step, bonus token) are within
    total variation [n eps] of the target's joint law. *)
Theorem speculative_TV_tokens (R : numFieldType) (T : finType)
    (p q fallback acc : seq T -> T -> R) (gamma n : nat) (c : seq T) (eps : R) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  (forall c, is_distribution (fallback c)) ->
  (forall c x, 0 <= acc c x <= 1) ->
  (forall c, TV (verifier_with (acc c) (p c) (q c) (fallback c)) (p c) <= eps) ->
  TV_tokens n (speculative_law_with p q fallback gamma acc n c) (target_law p n c) <= n%:R * eps.
Proof.
move=> p_dist q_dist f_dist acc01 step_TV.
have acc_ge0 c' x : 0 <= acc c' x by case/andP: (acc01 c' x).
have acc_le1 c' x : acc c' x <= 1 by case/andP: (acc01 c' x).
rewrite /TV_tokens ler_pdivr_mulr ?ltr0n // mulr_natr.
rewrite /speculative_law_with; exact: (l1_bound gamma p_dist q_dist f_dist acc_ge0 acc_le1 step_TV n gamma c).
Qed.

Lemma grid_coin_01 (R : numFieldType) (N : nat) (r : R) : (0 < N)%N ->
  0 <= grid_coin N r <= 1.
Proof.
move=> N0; rewrite /grid_coin sumr_ge0 => [|k _]; last by rewrite mulr_ge0 ?invr_ge0 ?ler0n.
apply: (@le_trans _ _ (\sum_(0 <= k < N) N%:R^-1)).
  apply: ler_sum => k _; rewrite ler_pimulr ?invr_ge0 ?ler0n //.
  by case: (k%:R / N%:R < r); rewrite ?ler01 ?lexx.
by rewrite sumr_const_nat subn0 -[_ *+ N]mulr_natr mulVf // pnatr_eq0 -lt0n.
Qed.

(** With the float32 coin at every position ([u < p c x / q c x], [u] uniform on
    the [2^24] multiples of [2^-24] in [0, 1)): the first [n] tokens are within
    total variation [n 2^-24] of the target's joint law. *)
Corollary float32_speculative_TV_tokens (R : numFieldType) (T : finType)
    (p q fallback : seq T -> T -> R) (gamma n : nat) (c : seq T) :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  (forall c, is_distribution (fallback c)) ->
  TV_tokens n (speculative_law_with p q fallback gamma
                 (fun c x => float32_coin (p c x / q c x)) n c) (target_law p n c)
    <= n%:R * 2 ^- 24.
Proof.
move=> p_dist q_dist f_dist; apply: speculative_TV_tokens => // [c' x|c'].
  by apply: grid_coin_01; rewrite expn_gt0.
exact: ltW (float32_verifier_TV (p_dist c') (q_dist c') (f_dist c')).
Qed.

(** The link with Chain.v: with the exact accept probability [min(1, p/q)],
    the chain with a coin is Chain.v's, so its first [n] tokens have the
    target's joint law (and [speculative_TV_tokens] holds with [eps = 0]). *)
Section Exact.
Variable R : numFieldType.
Variable T : finType.
Variables (p q fallback : seq T -> T -> R) (gamma : nat).

Lemma draft_ext k c (f g : seq T -> seq T -> R) s :
  (forall xs s', f xs s' = g xs s') -> draft q k c f s = draft q k c g s.
Proof.
elim: k c f g => [|k IH] c f g h /=; first exact: h.
by rewrite /bind; apply: eq_bigr => x _; congr (_ * _); apply: IH => xs s'; apply: h.
Qed.

Lemma verify_with_exact n : forall c xs s,
  verify_with p q fallback gamma (fun c => accept_prob (p c) (q c)) n c xs s =
  verify p q fallback gamma n c xs s.
Proof.
elim: n => [//|n IH] c xs s.
have end_step y s' :
    emit y (draft q gamma (rcons c y)
      (verify_with p q fallback gamma (fun c => accept_prob (p c) (q c)) n (rcons c y))) s' =
    emit y (draft q gamma (rcons c y) (verify p q fallback gamma n (rcons c y))) s'.
  by apply: emit_ext => s''; apply: draft_ext => xs' s3; apply: IH.
case: xs => [|x xs] /=; rewrite /bind.
  by apply: eq_bigr => y _; rewrite end_step.
apply: eq_bigr => b _; congr (_ * _); case: b.
Qed.

Corollary speculative_law_with_exact n c s :
  (forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) ->
  speculative_law_with p q fallback gamma (fun c => accept_prob (p c) (q c)) n c s =
  target_law p n c s.
Proof.
move=> p_dist q_dist; rewrite -(speculative_lossless fallback gamma n c p_dist q_dist s).
by apply: draft_ext => xs s'; apply: verify_with_exact.
Qed.

End Exact.
