(** * Certificates checked by Coq: the Spec definitions evaluated on rational rows.

    A generated certificate file (written by [specproof prove --coq] or
    [specproof.certify.coq]) lists a certificate's rows as rationals of Coq's
    [QArith] ([Qmake n d] is n/d, [n] a binary integer) and states, about the
    definitions of Spec.v instantiated on those rows, "the verifier's law is this
    vector", "alpha is this", "TV is this", "p is a distribution".  Each
    statement is proved by applying one theorem of this file and computing a
    boolean check with [vm_compute]: nothing is taken from the generator but the
    statement.

    The bridge: [Q2R R x] is the rational [x] in any [numFieldType] [R] (the
    rationals, the reals), through [int_of_Z] (Coq's binary integers as
    MathComp's [int]); [row R n l] is the mass function on [n] tokens whose
    token [x] has mass [Q2R R (nth x l)].  [Q2R] commutes with +, *, -, ^-1,
    [Num.min], [Num.max], [`|_|] and the order ([Q2R_add] ... [Q2R_leb]); the
    theorems at the end ([verifier_on_rows], [alpha_on_rows], [TV_on_rows],
    [distribution_on_rows]) reduce each statement about [verifier], [alpha],
    [TV] and [is_distribution] to a computation on [Q].  Defines nothing of the
    model: the rule is Spec.v's [verifier], the one proved lossless in
    OnePosition.v. *)

From Coq Require Import ZArith QArith Lia.
From mathcomp Require Import all_ssreflect ssralg ssrnum ssrint.
From SpecProof Require Import Spec.
Import Order.POrderTheory GRing.Theory Num.Theory.

Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.

Local Open Scope ring_scope.

Definition int_of_Z (z : Z) : int := (Z.to_nat z)%:Z - (Z.to_nat (Z.opp z))%:Z.

Lemma int_of_Z_diff (z : Z) (m n : nat) :
  z = Z.sub (Z.of_nat m) (Z.of_nat n) -> int_of_Z z = m%:Z - n%:Z.
Proof.
move=> ->; rewrite /int_of_Z; apply/eqP; rewrite subr_eq addrAC eq_sym subr_eq -!PoszD.
apply/eqP; congr Posz; rewrite -!plusE; lia.
Qed.

Lemma int_of_Z_split (z : Z) : z = Z.sub (Z.of_nat (Z.to_nat z)) (Z.of_nat (Z.to_nat (Z.opp z))).
Proof. lia. Qed.

Lemma int_of_ZD (a b : Z) : int_of_Z (Z.add a b) = int_of_Z a + int_of_Z b.
Proof.
rewrite (@int_of_Z_diff _ (Z.to_nat a + Z.to_nat b) (Z.to_nat (Z.opp a) + Z.to_nat (Z.opp b))).
  by rewrite /int_of_Z !PoszD opprD addrACA.
rewrite -!plusE; lia.
Qed.

Lemma int_of_ZM (a b : Z) : int_of_Z (Z.mul a b) = int_of_Z a * int_of_Z b.
Proof.
set a1 := Z.to_nat a; set a2 := Z.to_nat (Z.opp a); set b1 := Z.to_nat b; set b2 := Z.to_nat (Z.opp b).
rewrite (@int_of_Z_diff _ (a1 * b1 + a2 * b2) (a1 * b2 + a2 * b1)).
  rewrite /int_of_Z -/a1 -/a2 -/b1 -/b2 !PoszD !PoszM mulrBl !mulrBr.
  set x := a1%:Z * b1%:Z; set y := a2%:Z * b2%:Z; set u := a1%:Z * b2%:Z; set v := a2%:Z * b1%:Z.
  rewrite opprD opprB !addrA; congr (_ - _); exact: addrAC.

have ha := int_of_Z_split a; have hb := int_of_Z_split b.
rewrite -/a1 -/a2 in ha; rewrite -/b1 -/b2 in hb.
rewrite /addn /muln /addn_rec /muln_rec !Nat2Z.inj_add !Nat2Z.inj_mul.
rewrite {1}ha {1}hb; ring.
Qed.

Lemma int_of_ZN (a : Z) : int_of_Z (Z.opp a) = - int_of_Z a.
Proof. by rewrite /int_of_Z Z.opp_involutive opprB. Qed.

Lemma int_of_Z_le (a b : Z) : (int_of_Z a <= int_of_Z b) = Z.leb a b.
Proof.
rewrite /int_of_Z ler_subr_addr addrAC ler_subl_addr -!PoszD lez_nat -!plusE.
apply/idP/idP.
  by move/leP=> h; apply/Z.leb_le; lia.
by move/Z.leb_le=> h; apply/leP; lia.
Qed.

Lemma int_of_Z_eq (a b : Z) : (int_of_Z a == int_of_Z b) = Z.eqb a b.
Proof.
rewrite eq_le !int_of_Z_le; apply/idP/idP.
  by case/andP=> /Z.leb_le h1 /Z.leb_le h2; apply/Z.eqb_eq; lia.
by move/Z.eqb_eq=> ->; rewrite Z.leb_refl.
Qed.

Lemma int_of_Z_pos (d : positive) : int_of_Z (Z.pos d) = (Pos.to_nat d)%:Z.
Proof. by rewrite /int_of_Z /= subr0. Qed.

(** ** Rationals of [QArith] as elements of any [numFieldType] *)

Definition q0 : Q := Qmake Z0 xH.
Definition q1 : Q := Qmake (Zpos xH) xH.

Section Q2R.
Variable R : numFieldType.

Definition Q2R (x : Q) : R := (int_of_Z (Qnum x))%:~R / (Pos.to_nat (Qden x))%:R.

Lemma den_gt0 (d : positive) : 0 < (Pos.to_nat d)%:R :> R.
Proof. by rewrite ltr0n; apply/ltP; apply: Pos2Nat.is_pos. Qed.

Lemma den_neq0 (d : positive) : (Pos.to_nat d)%:R != 0 :> R.
Proof. by rewrite gt_eqF // den_gt0. Qed.

Lemma intr_pos (d : positive) : (int_of_Z (Z.pos d))%:~R = (Pos.to_nat d)%:R :> R.
Proof. by rewrite int_of_Z_pos. Qed.

Lemma pos_mul (a b : positive) : (Pos.to_nat (a * b)%positive)%:R = (Pos.to_nat a)%:R * (Pos.to_nat b)%:R :> R.
Proof. by rewrite Pos2Nat.inj_mul -natrM. Qed.

Lemma Q2R_add x y : Q2R (Qplus x y) = Q2R x + Q2R y.
Proof.
case: x y => [nx dx] [ny dy]; rewrite /Q2R /Qplus /= addf_div ?den_neq0 //.
by rewrite int_of_ZD !int_of_ZM intrD !intrM !intr_pos pos_mul.
Qed.

Lemma Q2R_mul x y : Q2R (Qmult x y) = Q2R x * Q2R y.
Proof.
case: x y => [nx dx] [ny dy]; rewrite /Q2R /Qmult /= mulf_div.
by rewrite int_of_ZM intrM pos_mul.
Qed.

Lemma Q2R_opp x : Q2R (Qopp x) = - Q2R x.
Proof. by case: x => [n d]; rewrite /Q2R /= int_of_ZN mulrNz mulNr. Qed.

Lemma Q2R_sub x y : Q2R (Qminus x y) = Q2R x - Q2R y.
Proof. by rewrite /Qminus Q2R_add Q2R_opp. Qed.

Lemma Q2R_inv x : Q2R (Qinv x) = (Q2R x)^-1.
Proof.
case: x => [[|n|n] d]; rewrite /Q2R /Qinv /=.
- by rewrite /int_of_Z /= subrr !mul0r invr0.
- by rewrite !intr_pos invf_div.
- have -> : Z.neg d = Z.opp (Z.pos d) by [].
  have -> : Z.neg n = Z.opp (Z.pos n) by [].
  by rewrite !int_of_ZN !mulrNz !intr_pos !mulNr invrN invf_div.
Qed.

Lemma Q2R_div x y : Q2R (Qdiv x y) = Q2R x / Q2R y.
Proof. by rewrite /Qdiv Q2R_mul Q2R_inv. Qed.

Lemma Q2R_0 : Q2R q0 = 0.
Proof. by rewrite /Q2R /int_of_Z /= subrr mul0r. Qed.

Lemma Q2R_1 : Q2R q1 = 1.
Proof. by rewrite /Q2R intr_pos /= divrr // unitfE oner_eq0. Qed.

(** Exact comparisons, decided on the cross products. *)
Definition qeqb (x y : Q) : bool := Z.eqb (Z.mul (Qnum x) (Z.pos (Qden y))) (Z.mul (Qnum y) (Z.pos (Qden x))).
Definition qleb (x y : Q) : bool := Z.leb (Z.mul (Qnum x) (Z.pos (Qden y))) (Z.mul (Qnum y) (Z.pos (Qden x))).
Definition qltb (x y : Q) : bool := ~~ qleb y x.

Lemma Q2R_cross x y :
  Q2R x = (int_of_Z (Z.mul (Qnum x) (Z.pos (Qden y))))%:~R / ((Pos.to_nat (Qden x))%:R * (Pos.to_nat (Qden y))%:R).
Proof.
case: x y => [nx dx] [ny dy]; rewrite /Q2R /= int_of_ZM intrM intr_pos invfM mulrACA divrr ?mulr1 //.
by rewrite unitfE den_neq0.
Qed.

Lemma Q2R_eqb x y : (Q2R x == Q2R y) = qeqb x y.
Proof.
rewrite (Q2R_cross x y) (Q2R_cross y x) [(Pos.to_nat (Qden y))%:R * _]mulrC.
by rewrite (inj_eq (mulIf _)) ?invr_eq0 ?mulf_neq0 ?den_neq0 // eqr_int int_of_Z_eq.
Qed.

Lemma Q2R_Qeq x y : Qeq x y -> Q2R x = Q2R y.
Proof. by move=> h; apply/eqP; rewrite Q2R_eqb /qeqb; apply/Z.eqb_eq. Qed.

Lemma Q2R_red x : Q2R (Qred x) = Q2R x.
Proof. by apply: Q2R_Qeq; apply: Qred_correct. Qed.

Lemma Q2R_leb x y : (Q2R x <= Q2R y) = qleb x y.
Proof.
rewrite (Q2R_cross x y) (Q2R_cross y x) [(Pos.to_nat (Qden y))%:R * _]mulrC.
by rewrite ler_pmul2r ?invr_gt0 ?mulr_gt0 ?den_gt0 // ler_int int_of_Z_le.
Qed.

Lemma Q2R_real x : Q2R x \is Num.real.
Proof. by rewrite /Q2R rpredM ?realz // rpredV realn. Qed.

Lemma Q2R_ltb x y : (Q2R x < Q2R y) = qltb x y.
Proof. by rewrite real_ltNge ?Q2R_real // Q2R_leb. Qed.

(** Minimum, maximum and absolute value, as MathComp's [Num.min], [Num.max]
    and [`|_|] compute them. *)
Definition qmin (x y : Q) : Q := if qltb x y then x else y.
Definition qmax (x y : Q) : Q := if qltb x y then y else x.
Definition qabs (x : Q) : Q := if qleb q0 x then x else Qopp x.

Lemma Q2R_min x y : Q2R (qmin x y) = Num.min (Q2R x) (Q2R y).
Proof. by rewrite /qmin /Num.min /Order.min Q2R_ltb; case: qltb. Qed.

Lemma Q2R_max x y : Q2R (qmax x y) = Num.max (Q2R x) (Q2R y).
Proof. by rewrite /qmax /Num.max /Order.max Q2R_ltb; case: qltb. Qed.

Lemma Q2R_abs x : Q2R (qabs x) = `|Q2R x|.
Proof.
rewrite /qabs -Q2R_leb Q2R_0; have [h|h] := boolP (0 <= Q2R x); first by rewrite ger0_norm.
rewrite ler0_norm ?Q2R_opp //; move: h; rewrite real_leNgt ?real0 ?Q2R_real //.
by move/negbNE/ltW.
Qed.

End Q2R.

(** ** Rows of a certificate, and the textbook verifier computed on them *)

Definition qadd (x y : Q) : Q := Qred (Qplus x y).
Definition qsum (l : seq Q) : Q := foldr qadd q0 l.

(** The values of one token in the Spec definitions, on rationals. *)
Definition acceptQ (p q : Q) : Q := qmin q1 (Qdiv p q).
Definition residualQ (p q : Q) : Q := qmax (Qminus p q) q0.
Definition pairs (p q : seq Q) : seq (Q * Q) := zip p q.
Definition residual_massQ (p q : seq Q) : Q := qsum [seq residualQ a.1 a.2 | a <- pairs p q].
Definition rejectionQ (p q : seq Q) : Q :=
  qsum [seq Qmult a.2 (Qminus q1 (acceptQ a.1 a.2)) | a <- pairs p q].
Definition alphaQ (p q : seq Q) : Q := qsum [seq qmin a.1 a.2 | a <- pairs p q].
Definition TVQ (p q : seq Q) : Q :=
  Qdiv (qsum [seq qabs (Qminus a.1 a.2) | a <- pairs p q]) (Qmake 2 xH).

(** The law of the verifier at one token [(p y, q y)] and its stated value [e y]:
    the accept mass plus the rejection mass times the normalized residual; when
    the residual is empty the rejection mass must be 0 (the fallback then
    carries no mass). *)
Definition law_at (Z rej : Q) (a : Q * Q * Q) : bool :=
  let: (p, q, e) := a in
  if qeqb Z q0 then qeqb (Qmult q (acceptQ p q)) e
  else qeqb (qadd (Qmult q (acceptQ p q)) (Qmult rej (Qdiv (residualQ p q) Z))) e.

Definition law_check (p q e : seq Q) : bool :=
  [&& size q == size p, size e == size p,
      ~~ qeqb (residual_massQ p q) q0 || qeqb (rejectionQ p q) q0
    & all (law_at (residual_massQ p q) (rejectionQ p q)) (zip (zip p q) e)].

Definition distribution_check (p : seq Q) : bool :=
  all (qleb q0) p && qeqb (qsum p) q1.

(** Row [l] of a certificate as a mass function on [n] tokens: token [x] has
    the rational [nth x l] (0 past the end of [l]). *)
Definition row (R : numFieldType) (n : nat) (l : seq Q) (x : 'I_n) : R := Q2R R (nth q0 l x).
Arguments row R n l x : clear implicits.

Section Rows.
Variable R : numFieldType.

Lemma Q2R_qsum l : Q2R R (qsum l) = \sum_(x <- l) Q2R R x.
Proof.
elim: l => [|a l IH]; first by rewrite big_nil Q2R_0.
by rewrite big_cons /= /qadd Q2R_red Q2R_add IH.
Qed.

Lemma sum_pairs (F : Q -> Q -> R) (p q : seq Q) : size q = size p ->
  \sum_(x < size p) F (nth q0 p x) (nth q0 q x) = \sum_(a <- pairs p q) F a.1 a.2.
Proof.
elim: p q => [|a p IH] [|b q] //= hs; first by rewrite big_ord0 big_nil.
by rewrite big_ord_recl big_cons /=; congr (_ + _); rewrite IH //; case: hs.
Qed.

Lemma sum_row (l : seq Q) :
  \sum_(x < size l) row R (size l) l x = Q2R R (qsum l).
Proof.
rewrite Q2R_qsum /row (big_nth q0) big_mkord.
by apply: eq_bigr.
Qed.

Lemma verifier_closed (T : finType) (p q fallback : T -> R) y :
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

Variables p q : seq Q.
Hypothesis Hq : size q = size p.
Notation P := (row R (size p) p).
Notation Qr := (row R (size p) q).

Lemma Q2R_accept (a b : Q) : Q2R R (acceptQ a b) = Num.min 1 (Q2R R a / Q2R R b).
Proof. by rewrite /acceptQ Q2R_min Q2R_div Q2R_1. Qed.

Lemma Q2R_residual (a b : Q) : Q2R R (residualQ a b) = Num.max (Q2R R a - Q2R R b) 0.
Proof. by rewrite /residualQ Q2R_max Q2R_sub Q2R_0. Qed.

Lemma residual_mass_rows : residual_mass P Qr = Q2R R (residual_massQ p q).
Proof.
rewrite /residual_mass /residual_massQ Q2R_qsum big_map.
rewrite -(sum_pairs (fun a b => Q2R R (residualQ a b))) //.
by apply: eq_bigr => x _; rewrite Q2R_residual.
Qed.

Lemma rejection_rows : rejection_prob P Qr = Q2R R (rejectionQ p q).
Proof.
rewrite /rejection_prob /rejectionQ Q2R_qsum big_map.
rewrite -(sum_pairs (fun a b => Q2R R (Qmult b (Qminus q1 (acceptQ a b))))) //.
by apply: eq_bigr => x _; rewrite Q2R_mul Q2R_sub Q2R_1 Q2R_accept.
Qed.

Lemma alpha_rows : alpha P Qr = Q2R R (alphaQ p q).
Proof.
rewrite /alpha /alphaQ Q2R_qsum big_map -(sum_pairs (fun a b => Q2R R (qmin a b))) //.
by apply: eq_bigr => x _; rewrite Q2R_min.
Qed.

Lemma TV_rows : TV P Qr = Q2R R (TVQ p q).
Proof.
rewrite /TV /TVQ Q2R_div Q2R_qsum big_map -(sum_pairs (fun a b => Q2R R (qabs (Qminus a b)))) //.
have -> : Q2R R (Qmake 2 xH) = 2 by rewrite /Q2R intr_pos /= divr1.
by congr (_ / _); apply: eq_bigr => x _; rewrite Q2R_abs Q2R_sub.
Qed.

End Rows.

(** ** The theorems a generated certificate file applies *)

Section Certificates.
Variable R : numFieldType.
Variables p q e : seq Q.

(** If [law_check p q e] computes to [true], the textbook verifier of Spec.v
    ([verifier]), on the target row [p] and the draft row [q], emits token [y]
    with probability [e y], for every token and every fallback law. *)
Theorem verifier_on_rows : law_check p q e ->
  forall (fallback : 'I_(size p) -> R) y,
  verifier (row R (size p) p) (row R (size p) q) fallback y = row R (size p) e y.
Proof.
case/and4P=> /eqP Hq /eqP He Hz /all_nthP Hall fallback y.
have := Hall (q0, q0, q0) y; rewrite !size_zip Hq He !minnn => /(_ (ltn_ord y)).
rewrite !nth_zip ?size_zip ?Hq ?He ?minnn //= => h.
rewrite verifier_closed rejection_rows // /resample residual_mass_rows // -Q2R_0 Q2R_eqb.
rewrite /row /residual /accept_prob -Q2R_accept -Q2R_residual -Q2R_mul.
move: Hz h; case: (qeqb (residual_massQ p q) q0) => /= [Hz h|_ h].
  rewrite (eqP (_ : Q2R R (rejectionQ p q) == Q2R R q0)) ?Q2R_eqb // Q2R_0 mul0r addr0.
  by apply/eqP; rewrite Q2R_eqb.
rewrite -Q2R_div -Q2R_mul -Q2R_add -(Q2R_red R (Qplus _ _)).
by apply/eqP; rewrite Q2R_eqb.
Qed.

Theorem alpha_on_rows (a : Q) : size q = size p -> qeqb (alphaQ p q) a ->
  alpha (row R (size p) p) (row R (size p) q) = Q2R R a.
Proof. by move=> Hq h; rewrite alpha_rows //; apply/eqP; rewrite Q2R_eqb. Qed.

Theorem TV_on_rows (t : Q) : size q = size p -> qeqb (TVQ p q) t ->
  TV (row R (size p) p) (row R (size p) q) = Q2R R t.
Proof. by move=> Hq h; rewrite TV_rows //; apply/eqP; rewrite Q2R_eqb. Qed.

Theorem distribution_on_rows : distribution_check p -> is_distribution (row R (size p) p).
Proof.
case/andP=> /all_nthP h1 h2; split=> [x|]; last by rewrite sum_row; apply/eqP; rewrite -(Q2R_1 R) Q2R_eqb.
by rewrite /row -(Q2R_0 R) Q2R_leb; apply: h1.
Qed.

End Certificates.
