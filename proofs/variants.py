"""Proof script: verifier variants (multi-draft, token trees, block verification, typical acceptance).

Run as `python proofs/variants.py [--real]`; writes proofs/transcripts/variants/variants.json and .md
(a folder of their own: they are outcome-tree documents, not certificates of the trusted checker;
variants_real.* with `--real`, which adds SmolLM2's shipped rows: minutes per pair on two cores);
exit 0 iff proved.
"""

import sys
from pathlib import Path

from specproof.certify.variants_proof import write_variants_proof

if __name__ == "__main__":
    proved, json_path, md_path = write_variants_proof(
        Path(__file__).resolve().parent / "transcripts" / "variants", real="--real" in sys.argv[1:]
    )
    print(f"verifier variants: {'PROVED' if proved else 'NOT PROVED'}\n  {json_path}\n  {md_path}")
    sys.exit(0 if proved else 1)
