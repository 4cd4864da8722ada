"""Proof script: real pairs from SmolLM2-135M-Instruct (skip-layer, 3-bit and temperature-0.7 drafts).

Run as `python proofs/real_smollm2.py`; writes proofs/transcripts/real_smollm2.json and .md;
exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("real_smollm2", __file__))
