"""DoS with a small, VALID outcome certificate: derived rows whose exact values double in size.

V = 3. Each step is three one-step recipes on the previous row r (token j = step mod 3):
    w = without r [j];  n = normalized w;  r' = positive-part r n
so r'_i = r_i (1 - 1/(S - r_j)) for i != j: a degree-2 rational map, and the bit size of the
entries grows by a factor ~1.7 per step (every step stays within the recipe grammar and the
derived-row budget, which is paid for by cheap zero-probability branches).

usage: python gen_dos_outcome_growth.py [STEPS] [OUT]
"""

import json
import sys

from specproof import checker as C

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 24
out = sys.argv[2] if len(sys.argv) > 2 else f"dos_outcome_growth_{steps}.json"
V = 3
rows = {
    "p": {"recipe": ["input", "p"], "values": ["1/1", "0/1", "0/1"]},
    "q": {"recipe": ["input", "q"], "values": ["1/1", "0/1", "0/1"]},
    "r0": {"recipe": ["given"], "values": ["1000/3", "1001/7", "1003/11"]},
}
prev = "r0"
for k in range(steps):
    rows[f"w{k}"] = {"recipe": ["without", prev, [k % 3]]}
    rows[f"n{k}"] = {"recipe": ["normalized", f"w{k}"]}
    rows[f"r{k + 1}"] = {"recipe": ["positive-part", prev, f"n{k}"]}
    prev = f"r{k + 1}"
derived = 3 * steps
zero_branches = max(0, (derived - 16) * V)  # the budget: derived <= 16 + branches // V
branches = [{"event": {"draw": {"row": "p", "token": 0}}, "probability": "1/1", "child": {"leaf": [0, True]}}]
branches += [
    {"event": {"draw": {"row": "p", "token": 1}}, "probability": "0/1", "child": {"leaf": [1, True]}}
] * zero_branches
doc = {
    "schema": C.OUTCOME_SCHEMA,
    "name": "growth",
    "statement": "s",
    "vocab_size": V,
    "reference": "p",
    "rows": rows,
    "nodes": [{"label": "root", "reach": "1/1", "branches": branches}],
    "law": ["1/1", "0/1", "0/1"],
    "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
    "claims": {"lossless": True},
}
text = json.dumps(doc, separators=(",", ":"))
open(out, "w").write(text)
print(out, len(text), "bytes,", derived, "derived rows,", len(branches), "branches")
