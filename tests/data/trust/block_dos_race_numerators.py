"""Block certificate, VALID, where ONE race branch costs tens of seconds: MAX_RACE_BITS bounds
a race row's *denominator*, not its numerators, and _race_given builds Fraction(a_i, a_x) from
the numerators (each a gcd).

The race is checked "up to V = 32 and rows over denominators of 256 bits" so that each race is
~V^2 operations on small numbers. But a given row ("n/1" values) or a ``scaled`` row (new:
c up to 2^19 bits) has denominator 1 and numerators of 2^19 bits. Here
R1 = X * C1, R2 = Y * C2 (X, Y given rows of small integers, C1, C2 2^19-bit constants) and
P = positive-part(R1, R2): 32 unrelated ~2^19-bit numerators over denominator 1. A race on P
won by 0 given the race on P won by 0 (probability 1) builds 2 * 32 fractions P_i / P_0, each
a gcd of two 2^19-bit numbers (~0.5 s in CPython 3.11). Each node repeats the branch (~150
bytes), so the time is nodes x ~45 s.

Usage: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_dos_race_numerators.py [NODES [OUT]]
(default 1 node: 0.26 MB, measured 47.7 s on 2 cores)
"""

import json
import random
import sys
import time

from specproof import checker
from specproof.checker import MAX_NUMBER_CHARS

count = int(sys.argv[1]) if len(sys.argv) > 1 else 1
rng = random.Random(4)
V = checker.MAX_RACE_VOCAB


def constant():
    return "0xf" + "".join(rng.choice("0123456789abcdef") for _ in range(MAX_NUMBER_CHARS - 7)) + "1/1"


rows = {
    "p[]": {"recipe": ["input", "p", []], "values": [f"1/{V}"] * V},
    "X": {"recipe": ["given"], "values": [f"{rng.getrandbits(64) | 1 << 70}/1" for _ in range(V)]},
    "Y": {"recipe": ["given"], "values": [f"{rng.getrandbits(64)}/1" for _ in range(V)]},
    "R1": {"recipe": ["scaled", "X", constant()]},
    "R2": {"recipe": ["scaled", "Y", constant()]},
    "P": {"recipe": ["positive-part", "R1", "R2"]},
}
nodes = []
for i in range(count):
    child = i + 1 if i + 1 < count else {"leaf": [[0], 0]}
    event = {"race": {"first": "P", "given": 0, "second": "P", "winner": 0}}
    nodes.append(
        {"label": f"n{i}", "reach": "1/1", "branches": [{"event": event, "probability": "1/1", "child": child}]}
    )
doc = {
    "schema": checker.BLOCK_SCHEMA,
    "vocab_size": V,
    "gamma": 1,
    "rows": rows,
    "nodes": nodes,
    "law": [[[0], "1/1"]],
    "totals": {"accepted_length": ["1/1", "0/1"], "expected_emitted": "1/1", "stream_tv": f"{V - 1}/{V}"},
    "claims": {"lossless": False},
}
text = json.dumps(doc)
if len(sys.argv) > 2:
    open(sys.argv[2], "w").write(text)
print(f"{count} race node(s), V = {V}, {len(text) / 1e6:.2f} MB")
start = time.perf_counter()
verdict = checker.check(text)
print(verdict, f"{time.perf_counter() - start:.1f} s")
