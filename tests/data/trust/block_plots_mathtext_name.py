"""A VALID block certificate whose free-text name holds "$2^$" cannot be rendered with
`specproof transcript --plots`: plots.chain_figure passes the name to matplotlib as the title,
matplotlib parses "$...$" as mathtext and raises ValueError, and the CLI exits 2
("specproof transcript: error: ... ParseSyntaxException ..."). Without --plots it renders.
(Not specific to block certificates: every figure title is a certificate's name. A name such
as "costs $1 and $2" renders, silently, as math italics.)

Run: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_plots_mathtext_name.py   (needs matplotlib)
"""

import os
import subprocess
import sys
import tempfile
import time

from specproof import checker
from specproof.certify.blocks import block_verification_certificate
from specproof.certify.certificate import dumps

doc = block_verification_certificate(["1/3", "2/3"], ["2/3", "1/3"], 2)
doc["name"] = "block verification, gamma = $2^$"
tmp = tempfile.mkdtemp()
path = os.path.join(tmp, "cert.json")
open(path, "w").write(dumps(doc))
print(checker.check(dumps(doc)))
start = time.perf_counter()
for extra in ([], ["--plots"]):
    run = subprocess.run(
        [sys.executable, "-m", "specproof", "transcript", path, "--out", os.path.join(tmp, "t.md"), *extra],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": "src"},
    )
    print("transcript", *extra, "exit", run.returncode, run.stderr.strip().splitlines()[:1])
print(f"{time.perf_counter() - start:.1f} s")
