(** The theorems a generated certificate file applies rely on no axiom and no
    [Admitted] proof: each [Print Assumptions] below must print "Closed under
    the global context" ([make check] fails otherwise). *)
From SpecProof Require Import Certify.

Print Assumptions verifier_on_rows.
Print Assumptions alpha_on_rows.
Print Assumptions TV_on_rows.
Print Assumptions distribution_on_rows.
Print Assumptions alpha_rows.
Print Assumptions TV_rows.
Print Assumptions residual_mass_rows.
Print Assumptions rejection_rows.
