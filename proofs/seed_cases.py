"""Proof script: emitted law == p on the seed's edge cases.

Run as `python proofs/seed_cases.py`; writes proofs/transcripts/seed_cases.json and .md; exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("seed_cases", __file__))
