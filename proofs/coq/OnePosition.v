(** * One verification step of speculative decoding is lossless.

    Notation (as in specproof's DESIGN.md): [p] is the target's next-token
    distribution, [q] the draft's; a token [x] is drafted from [q] and accepted
    with probability [min(1, p x / q x)]; on rejection a token is drawn from the
    residual [(p - q)+] normalized by its mass.  [alpha = sum_x min(p x, q x)].

    Everything is over an arbitrary [numFieldType] [R] (an ordered field, not
    necessarily totally ordered: the rationals [rat], the reals, ...).  The
    masses of a distribution are non-negative, hence comparable ([Num.real]),
    which is all that the case splits on [Num.min] and [Num.max] need. *)

From mathcomp Require Import all_ssreflect ssralg ssrnum.
From SpecProof Require Import Spec.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Section OnePosition.
Variable R : numFieldType.
Variable T : finType.
Implicit Types (p q fallback : T -> R) (x y : T).

(** ** Lemmas on one token *)

(** The lemma the SymPy proof assumed, here proved: a finite sum of
    non-negative terms is 0 only if every term is 0. *)
Lemma sum_nonneg_eq0 (F : T -> R) :
  (forall x, 0 <= F x) -> \sum_x F x = 0 -> forall x, F x = 0.
Proof.
move=> F_ge0 sum0 x.
have /psumr_eq0P : \sum_(i | true) F i = 0 by [].
by apply=> // i _; apply: F_ge0.
Qed.

Lemma min_plus_residual (a b : R) :
  a \is Num.real -> b \is Num.real -> Num.min a b + Num.max (a - b) 0 = a.
Proof.
move=> ra rb; have rab : a - b \is Num.real by rewrite realB.
case: (real_leP ra rb) => hab; case: (real_ge0P rab) => h.
- have -> : a - b = 0 by apply/eqP; rewrite eq_le h subr_le0 hab.
  by rewrite addr0.
- by rewrite addr0.
- by rewrite addrC subrK.
- by move: h; rewrite subr_lt0 => /(lt_trans hab); rewrite ltxx.
Qed.

Lemma residual_eq (a b : R) :
  a \is Num.real -> b \is Num.real -> Num.max (a - b) 0 = a - Num.min a b.
Proof.
move=> ra rb; apply: (addrI (Num.min a b)).
by rewrite min_plus_residual // addrC subrK.
Qed.

Lemma half_double (x : R) : (x + x) / 2 = x.
Proof. by rewrite -mulr2n -[x *+ 2]mulr_natr mulfK // pnatr_eq0. Qed.

Lemma min_sym (a b : R) :
  a \is Num.real -> b \is Num.real -> Num.min a b = Num.min b a.
Proof.
by move=> ra rb; case: (real_leP ra rb).
Qed.

Lemma abs_split (a b : R) :
  a \is Num.real -> b \is Num.real ->
  `|a - b| = Num.max (a - b) 0 + Num.max (b - a) 0.
Proof.
move=> ra rb; have rab : a - b \is Num.real by rewrite realB.
have rnab : - (a - b) \is Num.real by rewrite rpredN.
rewrite -[b - a]opprB; case: (real_ge0P rab) => h.
- case: (real_ge0P rnab) => [h'|].
  + by rewrite subrr; apply/eqP; rewrite eq_le h andbT -oppr_ge0.
  + by rewrite addr0.
- rewrite add0r; case: (real_ge0P rnab) => //.
  by rewrite oppr_lt0 => /(lt_trans h); rewrite ltxx.
Qed.

(** The accept mass of a token: [q x * min(1, p x / q x) = min(p x, q x)],
    including [q x = 0]. *)
Lemma accept_mass p q x :
  0 <= p x -> 0 <= q x -> q x * accept_prob p q x = Num.min (p x) (q x).
Proof.
move=> hp hq; rewrite /accept_prob.
have rp := ger0_real hp; have rq := ger0_real hq.
have [q0|qx0] := eqVneq (q x) 0.
  rewrite q0 mul0r; case: (real_leP rp (real0 R)) => // h.
  by apply/eqP; rewrite eq_le hp h.
have qpos : 0 < q x by rewrite lt_def qx0 hq.
have rd : p x / q x \is Num.real by apply: ger0_real; rewrite divr_ge0.
case: (real_leP (real1 R) rd) => h; case: (real_leP rp rq) => h'.
- by move: h; rewrite ler_pdivl_mulr // mul1r => h; apply/eqP; rewrite mulr1 eq_le h h'.
- by rewrite mulr1.
- by rewrite mulrC divfK.
- by move: h; rewrite ltr_pdivr_mulr // mul1r => /(lt_trans h'); rewrite ltxx.
Qed.

(** ** Sums *)

Section Sums.
Variables p q : T -> R.
Hypotheses (Hp : is_distribution p) (Hq : is_distribution q).

Let p_real x : p x \is Num.real. Proof. by apply: ger0_real; case: Hp. Qed.
Let q_real x : q x \is Num.real. Proof. by apply: ger0_real; case: Hq. Qed.

Lemma residual_ge0 x : 0 <= residual p q x.
Proof.
by rewrite /residual; case: (real_ge0P (realB (p_real x) (q_real x))).
Qed.

(** [Z = 1 - alpha]. *)
Lemma residual_mass_eq : residual_mass p q = 1 - alpha p q.
Proof.
have [_ <-] := Hp; rewrite /residual_mass /alpha -sumrB.
by apply: eq_bigr => x _; rewrite /residual residual_eq.
Qed.

(** The mass of [(q - p)+] is [1 - alpha] too. *)
Lemma residual_mass_sym : \sum_x Num.max (q x - p x) 0 = 1 - alpha p q.
Proof.
have [_ <-] := Hq; rewrite /alpha -sumrB; apply: eq_bigr => x _.
by rewrite (min_sym (p_real x) (q_real x)) residual_eq.
Qed.

(** The acceptance probability is [alpha] ... *)
Lemma acceptance_prob_eq : acceptance_prob p q = alpha p q.
Proof.
by apply: eq_bigr => x _; apply: accept_mass; [case: Hp | case: Hq].
Qed.

(** ... and the rejection probability is [1 - alpha = Z]. *)
Lemma rejection_prob_eq : rejection_prob p q = residual_mass p q.
Proof.
rewrite residual_mass_eq -acceptance_prob_eq /rejection_prob /acceptance_prob.
have [_ q_sum] := Hq; rewrite -[in RHS]q_sum -sumrB.
by apply: eq_bigr => x _; rewrite mulrBr mulr1.
Qed.

(** The law of the verifier, read off the program: the accept mass of [y]
    plus the rejection probability times the resampled mass of [y]. *)
Lemma verifier_unfold fallback y :
  verifier p q fallback y =
  q y * accept_prob p q y + rejection_prob p q * resample p q fallback y.
Proof.
rewrite /verifier /bind /rejection_prob.
under eq_bigr do rewrite big_bool /= /ret mulrDr.
rewrite big_split /= mulr_suml; congr (_ + _).
  rewrite (bigD1 y) //= eqxx mulr1 big1 ?addr0 // => x /negbTE ->.
  by rewrite mulr0 mulr0.
by apply: eq_bigr => x _; rewrite mulrA.
Qed.

End Sums.

(** ** The theorems *)

(** Lossless: for all distributions [p] (target) and [q] (draft) on a finite
    type, and any fallback law for the case [Z = 0], the verifier emits a
    token whose law is exactly [p]. *)
Theorem verifier_lossless p q fallback :
  is_distribution p -> is_distribution q ->
  forall y, verifier p q fallback y = p y.
Proof.
move=> Hp Hq y; have [p_ge0 _] := Hp; have [q_ge0 _] := Hq.
have rp := ger0_real (p_ge0 y); have rq := ger0_real (q_ge0 y).
rewrite verifier_unfold // rejection_prob_eq // accept_mass // /resample.
have [Z0|Zn0] := eqVneq (residual_mass p q) 0.
- rewrite Z0 mul0r addr0.
  have r0 : residual p q y = 0.
    by apply: (sum_nonneg_eq0 (residual_ge0 Hp Hq)).
  by rewrite -[RHS](min_plus_residual rp rq) -/(residual p q y) r0 addr0.
- by rewrite mulrC divfK // min_plus_residual.
Qed.

(** Running the verifier and then any continuation [K] (a function of the
    emitted token) is the same as drawing the token from [p] and running [K]:
    the form in which the chain proof uses [verifier_lossless]. *)
Lemma verifier_then p q fallback (K : T -> R) :
  is_distribution p -> is_distribution q ->
  \sum_x q x * (accept_prob p q x * K x +
                (1 - accept_prob p q x) * \sum_y resample p q fallback y * K y) =
  \sum_y p y * K y.
Proof.
move=> Hp Hq.
under [RHS]eq_bigr => y _ do
  rewrite -(verifier_lossless fallback Hp Hq y) verifier_unfold mulrDl.
rewrite big_split /=.
under [X in _ = _ + X]eq_bigr => y _ do rewrite -mulrA.
rewrite -mulr_sumr.
under eq_bigr => x _ do rewrite mulrDr !mulrA.
by rewrite big_split /= -mulr_suml.
Qed.

(** The acceptance probability is [alpha = sum_x min(p x, q x)]. *)
Theorem acceptance_is_alpha p q :
  is_distribution p -> is_distribution q ->
  acceptance_prob p q = \sum_x Num.min (p x) (q x).
Proof. exact: acceptance_prob_eq. Qed.

(** [alpha = 1 - TV(p, q)], with [TV(p, q) = (1/2) sum_x |p x - q x|]. *)
Theorem alpha_eq_1_minus_TV p q :
  is_distribution p -> is_distribution q -> alpha p q = 1 - TV p q.
Proof.
move=> Hp Hq; have [p_ge0 _] := Hp; have [q_ge0 _] := Hq.
have -> : TV p q = 1 - alpha p q.
  rewrite /TV.
  under eq_bigr do rewrite abs_split ?ger0_real //.
  rewrite big_split /= -/(residual_mass p q) residual_mass_eq //.
  by rewrite residual_mass_sym // half_double.
by rewrite opprB addrC subrK.
Qed.

(** [TV] is also the residual mass [Z = sum_x (p x - q x)+]. *)
Theorem TV_is_residual_mass p q :
  is_distribution p -> is_distribution q -> TV p q = residual_mass p q.
Proof.
move=> Hp Hq; rewrite residual_mass_eq // alpha_eq_1_minus_TV //.
by rewrite opprB addrC subrK.
Qed.

(** ** The special cases, spelled out *)

(** [q y = 0 < p y]: [y] is never drafted (accept mass 0); it is emitted only
    through the residual, and its emitted mass is still [p y]. *)
Corollary draft_never_proposes p q fallback y :
  is_distribution p -> is_distribution q -> q y = 0 -> 0 < p y ->
  q y * accept_prob p q y = 0 /\ verifier p q fallback y = p y.
Proof.
move=> Hp Hq qy0 _; split; last exact: verifier_lossless.
by rewrite qy0 mul0r.
Qed.

(** [p y = 0 < q y]: [y] is drafted but always rejected, and never emitted. *)
Corollary target_never_wants p q fallback y :
  is_distribution p -> is_distribution q -> p y = 0 -> 0 < q y ->
  accept_prob p q y = 0 /\ verifier p q fallback y = 0.
Proof.
move=> Hp Hq py0 qpos; split; last by rewrite verifier_lossless.
rewrite /accept_prob py0 mul0r; case: (real_leP (real1 R) (real0 R)) => //.
by rewrite ler10.
Qed.

(** [p == q]: the residual is empty, the rejection branch has probability 0,
    and whatever the fallback law, the verifier emits [p]. *)
Corollary identical_draft p fallback :
  is_distribution p ->
  residual_mass p p = 0 /\ rejection_prob p p = 0 /\
  forall y, verifier p p fallback y = p y.
Proof.
move=> Hp.
have Z0 : residual_mass p p = 0.
  by rewrite /residual_mass big1 // => x _; rewrite /residual subrr maxxx.
split=> //; split; first by rewrite rejection_prob_eq.
exact: verifier_lossless.
Qed.

End OnePosition.
