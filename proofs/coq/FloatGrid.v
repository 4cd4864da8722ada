(** * The float32 coin's values are binary32 floats (Flocq).

    PyTorch's [torch.rand] in float32 returns [k * 2^-24] for [k] uniform in
    [0 .. 2^24 - 1] (measured; see specproof's outcome module).  Here, with
    Flocq over Coq's real numbers: each such value is exactly a finite binary32
    float ([grid_float k], built by rounding, which changes nothing) in [0, 1),
    and comparing two finite binary32 floats is comparing their real values.  So
    the engine's test [u < r] on floats is the real test [k * 2^-24 < r] that
    [FloatCoin.grid_coin] counts.

    Unlike the other files, this one rests on the axioms of Coq's standard
    real numbers (and classical logic, which Flocq uses); [Print Assumptions]
    lists them, and the check allows exactly those. *)

From Coq Require Import Reals ZArith Lia.
From Flocq Require Import Core IEEE754.BinarySingleNaN.

Open Scope R_scope.

(** binary32: 24 bits of precision, maximal exponent 128. *)
Definition binary32 := binary_float 24 128.

Lemma prec_gt_0_32 : Prec_gt_0 24.
Proof. unfold Prec_gt_0; lia. Qed.

Lemma prec_lt_emax_32 : Prec_lt_emax 24 128.
Proof. unfold Prec_lt_emax; lia. Qed.

(** The grid point [k * 2^-24], as a binary32 float (rounded to nearest, which
    [float32_grid_exact] shows is exact). *)
Definition grid_float (k : Z) : binary32 :=
  binary_normalize 24 128 prec_gt_0_32 prec_lt_emax_32 mode_NE k (-24) false.

(** For [0 <= k < 2^24], [grid_float k] is a finite binary32 float whose value
    is exactly [k * 2^-24], and that value lies in [0, 1). *)
Theorem float32_grid_exact (k : Z) :
  (0 <= k < 2 ^ 24)%Z ->
  is_finite (grid_float k) = true /\
  B2R (grid_float k) = IZR k * bpow radix2 (-24) /\
  0 <= B2R (grid_float k) < 1.
Proof.
intros hk.
set (x := IZR k * bpow radix2 (-24)).
assert (fmt : generic_format radix2 (SpecFloat.fexp 24 128) x).
{ apply generic_format_FLT.
  apply (FLT_spec _ _ _ _ (Float radix2 k (-24))).
  - reflexivity.
  - simpl. rewrite Z.abs_eq by lia. lia.
  - simpl. unfold SpecFloat.emin. lia. }
assert (range : 0 <= x < 1).
{ unfold x. split.
  - apply Rmult_le_pos; [apply IZR_le; lia | apply bpow_ge_0].
  - replace 1 with (bpow radix2 24 * bpow radix2 (-24)).
    + apply Rmult_lt_compat_r; [apply bpow_gt_0 |].
      rewrite <- IZR_Zpower by lia. apply IZR_lt. simpl. lia.
    + rewrite <- bpow_plus. reflexivity. }
pose proof (binary_normalize_correct 24 128 prec_gt_0_32 prec_lt_emax_32 mode_NE k (-24) false)
  as H.
cbv zeta in H. change (F2R {| Fnum := k; Fexp := -24 |}) with x in H.
rewrite round_generic in H; [| apply valid_rnd_round_mode | exact fmt].
rewrite Rlt_bool_true in H.
- destruct H as [Hr [Hf _]]. unfold grid_float.
  rewrite Hr. split; [exact Hf | split; [reflexivity | exact range]].
- rewrite Rabs_pos_eq by apply range.
  apply Rlt_le_trans with 1; [apply range |].
  change 1 with (bpow radix2 0). apply bpow_le. lia.
Qed.

(** Comparing finite binary32 floats is comparing their real values. *)
Theorem float32_lt_is_real_lt (u r : binary32) :
  is_finite u = true -> is_finite r = true ->
  (Bcompare u r = Some Lt <-> B2R u < B2R r).
Proof.
intros fu fr. rewrite Bcompare_correct by assumption.
split.
- intros H. injection H as H. now apply Rcompare_Lt_inv.
- intros H. now rewrite Rcompare_Lt.
Qed.
