"""Re-check committed certificates with Coq: write each as a .v file (specproof.certify.coq) and
compile it with coqc against proofs/coq/Spec.v and Certify.v, timing each file.

    python proofs/coq_certificates.py            # seed_cases.json and real_phone_lm.json's first certificate
    python proofs/coq_certificates.py --all      # ... and every certificate of real_phone_lm.json, one file each
    python proofs/coq_certificates.py A.json ... # the given certificates or bundles, one file each

Exit 0 if coqc proves every file, 1 if it rejects one (its error is printed), 2 if a document
cannot be transcribed or coqc is missing. .ci/run runs the default set.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from specproof.certify import coq

TRANSCRIPTS = Path(__file__).resolve().parent / "transcripts"


def _documents(paths: list[str], every: bool) -> list[tuple[str, dict]]:
    if paths:
        return [(Path(p).stem, json.loads(Path(p).read_text(encoding="utf-8"))) for p in paths]
    phone = json.loads((TRANSCRIPTS / "real_phone_lm.json").read_text(encoding="utf-8"))["certificates"]
    docs = [("seed_cases", json.loads((TRANSCRIPTS / "seed_cases.json").read_text(encoding="utf-8")))]
    return docs + [(f"real_phone_lm_{i}", cert) for i, cert in enumerate(phone if every else phone[:1])]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", help="certificates or bundles (default: the committed set)")
    parser.add_argument("--all", action="store_true", help="every certificate of real_phone_lm.json")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="specproof-coq-certificates-") as tmp:
        try:
            docs = _documents(args.paths, args.all)
            files = []
            for name, doc in docs:
                stem = "".join(c if c.isalnum() else "_" for c in name)
                files.append(coq.write_v(doc, Path(tmp) / f"c_{stem}.v"))
            results = coq.compile_files(files)
        except coq.NotCertifiable as exc:
            print(f"coq_certificates: {exc}", file=sys.stderr)
            return 2
        for (name, doc), result in zip(docs, results):
            count = doc.get("count", 1)
            verdict = "PROVED by coqc" if result["ok"] else "REJECTED by coqc"
            print(f"{name}: {count} certificate(s), {verdict} in {result['seconds']:.1f} s")
            if not result["ok"]:
                print(result["output"], file=sys.stderr)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
