"""Proof script: chain verification (gamma = 1, 2, 3) on the phone trigram model, bigram draft.

Run as `python proofs/chain_phone_lm.py`; writes proofs/transcripts/chain_phone_lm.json and .md;
exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("chain_phone_lm", __file__))
