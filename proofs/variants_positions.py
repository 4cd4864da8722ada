"""Proof script: multi-draft, token-tree and typical-acceptance positions as outcome certificates.

Run as `python proofs/variants_positions.py`; writes proofs/transcripts/variants_positions.json and .md
(the trusted checker re-verifies every position); exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("variants_positions", __file__))
