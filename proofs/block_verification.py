"""Proof script: block verification (Sun et al. 2024) as block certificates.

Run as `python proofs/block_verification.py`; writes proofs/transcripts/block_verification.json and .md
(the trusted checker re-verifies every block); exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("block_verification", __file__))
