"""Write proofs/coq/spec.json: the text of every definition of the Coq model (Spec.v, and the
binary32 definitions of the Flocq files), as specproof.certify.symbolic_proof.coq_spec reads it.

tests/test_coq.py fails when a definition changes and spec.json does not: after a deliberate
change of the model, run ``python proofs/coq/pin_spec.py`` and commit both, so that the change
of the definition shows in the diff of spec.json.
"""

from __future__ import annotations

import json
from pathlib import Path

from specproof.certify.symbolic_proof import COQ_SPEC_FILE, coq_spec

if __name__ == "__main__":
    out = Path(__file__).resolve().parent / COQ_SPEC_FILE
    out.write_text(json.dumps(coq_spec(), indent=1) + "\n", encoding="utf-8")
    print(out)
