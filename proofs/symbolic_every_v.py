"""Proof script: lossless for every V (SymPy).

Run as `python proofs/symbolic_every_v.py`; writes proofs/transcripts/symbolic_every_v.json and .md; exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("symbolic_every_v", __file__))
