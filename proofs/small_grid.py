"""Proof script: every pair, V <= 3, denominators <= 4.

Run as `python proofs/small_grid.py`; writes proofs/transcripts/small_grid.json and .md; exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("small_grid", __file__))
