(** The main theorems rely on no axiom and no [Admitted] proof: each
    [Print Assumptions] below must print "Closed under the global context".
    [make check] (and tests/test_coq.py, and [specproof prove] when coqc is on
    PATH) fail otherwise. *)
From SpecProof Require Import Spec OnePosition Chain FloatCoin Optimal NPositions Block.

Print Assumptions verifier_lossless.
Print Assumptions acceptance_is_alpha.
Print Assumptions alpha_eq_1_minus_TV.
Print Assumptions TV_is_residual_mass.
Print Assumptions draft_never_proposes.
Print Assumptions target_never_wants.
Print Assumptions identical_draft.
Print Assumptions sum_nonneg_eq0.
Print Assumptions speculative_lossless.
Print Assumptions first_block_lossless.
Print Assumptions grid_coin_bound.
Print Assumptions float32_coin_bound.
Print Assumptions coin_error_TV.
Print Assumptions float32_verifier_TV.
Print Assumptions coin_TV_lt.
Print Assumptions grid_coin_le_extra.
Print Assumptions grid_coin_le_at_zero.
Print Assumptions lossless_acceptance_le_alpha.
Print Assumptions lossless_acceptance_le_1_minus_TV.
Print Assumptions verifier_kernel_attains.
Print Assumptions TV_bind.
Print Assumptions TV_bind_le.
Print Assumptions speculative_TV_tokens.
Print Assumptions float32_speculative_TV_tokens.
Print Assumptions speculative_law_with_exact.
Print Assumptions block_verification_lossless_le1.
Print Assumptions block_gamma1_is_token_verification.
Print Assumptions block_draft_split.
Print Assumptions block_verification_lossless.
Print Assumptions block_same_law_as_token_verification.
Print Assumptions ret_is_distribution.
Print Assumptions always_accept_emits_q.
Print Assumptions never_accept_emits_residual.
Print Assumptions target_law_chain_rule.
