"""`specproof check FILE --target p.json --draft q.json` binds a block certificate to a --draft
whose rows its tree never reads.

For a block certificate, cli.check._bind compares every *input* row with --target/--draft, but does
not ask which input rows the tree reads (the outcome-certificate path does, through
facts["reads"], and reports unread inputs; see unused_draft_accept_all.json). Here the tree is
block verification drafting from given rows q' = (1/100, 99/100) (trusted, named "q[...]"),
and the document adds input rows q = (2/3, 1/3) that nothing reads. The CLI answers
"valid ...; p and q are exactly --target's and --draft's values made exact" and exit 0,
while the certified accepted-length law and expected emitted tokens are those of q', not of
--draft's q (with q the expected emitted tokens are 20/9; this certificate says 481/225).

Run: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_bind_unread_draft.py
"""

import json
import os
import subprocess
import sys
import tempfile
import time

from specproof import checker
from specproof.certify.blocks import block_verification_certificate
from specproof.certify.certificate import dumps

P, Q, Q_USED = ["1/3", "2/3"], ["2/3", "1/3"], ["1/100", "99/100"]
doc = block_verification_certificate(P, Q_USED, 2)
for row in list(doc["rows"].values()):
    if row["recipe"][:2] == ["input", "q"]:
        prefix = row["recipe"][2]
        row["recipe"] = ["given"]  # the tree drafts from q' (trusted)
        doc["rows"][f"unread q{prefix}"] = {"recipe": ["input", "q", prefix], "values": Q}
honest = block_verification_certificate(P, Q, 2)

tmp = tempfile.mkdtemp()
paths = {k: os.path.join(tmp, f"{k}.json") for k in ("cert", "p", "q")}
open(paths["cert"], "w").write(dumps(doc))
open(paths["p"], "w").write(json.dumps(P))
open(paths["q"], "w").write(json.dumps(Q))
start = time.perf_counter()
print(checker.check(dumps(doc)))
print(
    "expected emitted: this certificate",
    doc["totals"]["expected_emitted"],
    "| the honest one for --draft",
    honest["totals"]["expected_emitted"],
)
run = subprocess.run(
    [sys.executable, "-m", "specproof", "check", paths["cert"], "--target", paths["p"], "--draft", paths["q"]],
    capture_output=True,
    text=True,
    env={**os.environ, "PYTHONPATH": "src"},
)
print("exit", run.returncode, run.stdout.strip(), run.stderr.strip()[-300:])
run = subprocess.run(
    [
        sys.executable,
        "-m",
        "specproof",
        "check",
        paths["cert"],
        "--target",
        paths["p"],
        "--draft",
        paths["q"],
        "--json",
    ],
    capture_output=True,
    text=True,
    env={**os.environ, "PYTHONPATH": "src"},
)
print(run.stdout.strip())
print(f"{time.perf_counter() - start:.2f} s")
