"""Proof script: real pairs from the CMU Sphinx phone trigram model (bigram and unigram drafts).

Run as `python proofs/real_phone_lm.py`; writes proofs/transcripts/real_phone_lm.json and .md;
exit 0 iff proved.
"""

import sys

from specproof.theorems import run_script

if __name__ == "__main__":
    sys.exit(run_script("real_phone_lm", __file__))
