(** The Flocq theorems rest on Coq's standard real numbers: [Print Assumptions]
    lists their axioms, and [make check] (and tests/test_coq.py, and
    [specproof prove]) require each one printed to be in FloatGrid.axioms:
    the axioms of the standard library's reals (ClassicalDedekindReals),
    functional extensionality and the excluded middle, and nothing else. *)
From SpecProof Require Import FloatGrid Fl32Coin Fl32Verifier FlCoin Fl64Verifier.

Print Assumptions float32_grid_exact.
Print Assumptions float32_lt_is_real_lt.
Print Assumptions fl32_count_bound.
Print Assumptions fl32_ratio_coin_bound.
Print Assumptions fl32_ratio_coin_is_grid_coin.
Print Assumptions fl32_verifier_TV.
Print Assumptions fl_count_bound_le.
Print Assumptions fl64_ratio_coin_bound.
Print Assumptions fl64_ratio_coin_le_bound.
Print Assumptions fl64_verifier_TV.
Print Assumptions fl64_verifier_le_TV.
