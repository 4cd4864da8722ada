"""Proof script: alpha == 1 - TV on random rational pairs.

Run as `python proofs/alpha_tv.py`; writes proofs/transcripts/alpha_tv.json and .md; exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("alpha_tv", __file__))
