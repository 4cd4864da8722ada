"""Block certificate, VALID, where ONE coin branch costs seconds: a float64-grid coin against a
ratio threshold whose numerator and denominator have millions of bits makes _coin_below divide
them (``scaled // t.den``: schoolbook division, quadratic in CPython 3.11).

MAX_ROW_BITS caps a row's denominator, not its numerators; ``scaled a c`` (c up to 2^19 bits)
stacks. R_k = X * C_1 * ... * C_k has k * 2^19-bit numerators over the denominator 1. The
threshold ratio(R_HI, R_LO, 0) = R_HI[0] / R_LO[0] is a (HI * 2^19)-bit number over a
(LO * 2^19)-bit one (its value > 1, so a float64 coin lands below it with probability 1),
and _coin_below computes (t.num * 2^53) // t.den. Every node repeats that branch (each ~200
bytes), so the time is nodes x one big division.

Usage: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_dos_grid_division.py [HI LO NODES [OUT]]
(default 8 4 3: 1.05 MB; measured: one node 24 s on 2 cores; each further node adds as much)
"""

import json
import random
import sys
import time

from specproof import checker
from specproof.checker import MAX_NUMBER_CHARS

hi = int(sys.argv[1]) if len(sys.argv) > 1 else 8
lo = int(sys.argv[2]) if len(sys.argv) > 2 else 4
count = int(sys.argv[3]) if len(sys.argv) > 3 else 3
rng = random.Random(3)
rows = {
    "p[]": {"recipe": ["input", "p", []], "values": ["1/2", "1/2"]},
    "X": {"recipe": ["given"], "values": ["1/1", "1/1"]},
}
previous = "X"
for level in range(1, hi + 1):
    digits = "f" + "".join(rng.choice("0123456789abcdef") for _ in range(MAX_NUMBER_CHARS - 6)) + "1"
    rows[f"R{level}"] = {"recipe": ["scaled", previous, f"0x{digits}/1"]}
    previous = f"R{level}"
nodes = []
for i in range(count):
    child = i + 1 if i + 1 < count else {"leaf": [[0], 0]}
    event = {
        "coin": {
            "model": "float64",
            "lower": None,
            "upper": {"source": ["ratio", f"R{hi}", f"R{lo}", 0], "strict": False},
        }
    }
    nodes.append(
        {"label": f"n{i}", "reach": "1/1", "branches": [{"event": event, "probability": "1/1", "child": child}]}
    )
doc = {
    "schema": checker.BLOCK_SCHEMA,
    "vocab_size": 2,
    "gamma": 1,
    "rows": rows,
    "nodes": nodes,
    "law": [[[0], "1/1"]],
    "totals": {"accepted_length": ["1/1", "0/1"], "expected_emitted": "1/1", "stream_tv": "1/2"},
    "claims": {"lossless": False},
}
text = json.dumps(doc)
if len(sys.argv) > 4:
    open(sys.argv[4], "w").write(text)
print(
    f"ratio of a {hi * 4 * MAX_NUMBER_CHARS}-bit by a {lo * 4 * MAX_NUMBER_CHARS}-bit number, {count} nodes, "
    f"{len(text) / 1e6:.2f} MB"
)
start = time.perf_counter()
verdict = checker.check(text)
print(verdict, f"{time.perf_counter() - start:.1f} s")
