"""Block certificate, VALID, whose check time grows as (nodes) x M(n): every coin branch
multiplies two n-bit numbers, n up to LEVELS x 2^19 bits, while the document holds those bits
only once.

MAX_ROW_BITS caps a row's common *denominator*, not its numerators. ``scaled a c`` multiplies
numerators by a constant of up to MAX_NUMBER_CHARS = 2^17 hex digits (2^19 bits), and scaled
rows stack (each a derived row inside the budget of 16 + branches // V). The new ``masses``
threshold then gives sum(A)/sum(R) unreduced: an n-bit over n-bit ratio (its value 1/3 or 2/3).
A coin between two such thresholds costs three n-bit by n-bit products in _event_probability
(gap = top.num * under.den - under.num * top.den, and top.den * under.den). Rows are named,
so each node (three branches, ~700 bytes) costs the checker those products again. The tree is a
chain of nodes, each node's three branches (1/3 each) all leading to the next node (reach 1),
the last node's to the leaf [0]; the document is valid (lossless false, stream TV 2/3).

(The same holds with one given row of 2^19-bit values and the older ``ratio`` threshold: 48 ms
per product instead of ~0.3 s; ``scaled`` stacks it.)

Usage: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_dos_bignum_coins.py [LEVELS NODES [OUT]]
(default 4 levels, 40 nodes: 0.55 MB, measured 79 s. On 2 cores: 4 levels, 3 nodes 4.5 s; 4 levels, 20 nodes
26.3 s (~1.25 s per node); 1 level, 100 nodes: 0.19 MB, 13.7 s.)
"""

import json
import random
import sys
import time

from specproof import checker
from specproof.checker import MAX_NUMBER_CHARS

levels = int(sys.argv[1]) if len(sys.argv) > 1 else 4
count = int(sys.argv[2]) if len(sys.argv) > 2 else 40
rng = random.Random(1)
rows = {
    "p[]": {"recipe": ["input", "p", []], "values": ["1/3", "1/3", "1/3"]},
    "X": {"recipe": ["given"], "values": ["1/1", "1/1", "1/1"]},
}
previous = "X"
for level in range(levels):  # R_k = R_{k-1} * C_k, C_k a 2^19-bit odd constant
    digits = "f" + "".join(rng.choice("0123456789abcdef") for _ in range(MAX_NUMBER_CHARS - 6)) + "1"
    rows[f"R{level}"] = {"recipe": ["scaled", previous, f"0x{digits}/1"]}
    previous = f"R{level}"
rows["A"] = {"recipe": ["without", previous, [1, 2]]}  # mass C
rows["B"] = {"recipe": ["without", previous, [2]]}  # mass 2C


def bound(row, strict):
    return {"source": ["masses", row, previous], "strict": strict}


nodes = []
for i in range(count):
    child = i + 1 if i + 1 < count else {"leaf": [[0], 0]}
    events = [
        {"coin": {"model": "continuous", "lower": None, "upper": bound("A", False)}},
        {"coin": {"model": "continuous", "lower": bound("A", True), "upper": bound("B", False)}},
        {"coin": {"model": "continuous", "lower": bound("B", True), "upper": None}},
    ]
    nodes.append(
        {
            "label": f"n{i}",
            "reach": "1/1",
            "branches": [{"event": e, "probability": "1/3", "child": child} for e in events],
        }
    )
doc = {
    "schema": checker.BLOCK_SCHEMA,
    "vocab_size": 3,
    "gamma": 1,
    "rows": rows,
    "nodes": nodes,
    "law": [[[0], "1/1"]],
    "totals": {"accepted_length": ["1/1", "0/1"], "expected_emitted": "1/1", "stream_tv": "2/3"},
    "claims": {"lossless": False},
}
text = json.dumps(doc)
if len(sys.argv) > 3:
    open(sys.argv[3], "w").write(text)
print(f"{levels} levels (numerators of ~{levels * 4 * MAX_NUMBER_CHARS} bits), {count} nodes, {len(text) / 1e6:.2f} MB")
start = time.perf_counter()
verdict = checker.check(text)
print(verdict, f"{time.perf_counter() - start:.1f} s")
