"""Block certificate, VALID, whose stream check (_stream_gap) takes V big gcds: ~0.3 s per
token of the vocabulary at ~260k-bit masses (V = 2000: minutes).

_stream_gap works in fractions.Fraction, which reduces after every operation. A coin against a
"const" threshold c (any rational up to MAX_NUMBER_CHARS characters, ~262k-bit numerator and
denominator; the MAX_ROW_BITS cap is on rows, not constants) gives the blocks [0] (mass c) and
[0, 0] (mass 1 - c). Then (0,) is a live prefix whose gap F = p(0) - c has a 262k-bit
denominator, every one of its V children inherits it, and each non-live child is added to the
running total: Fraction addition takes gcd(total.den, gap.den) and a second gcd, both of
262k-bit numbers (quadratic in CPython 3.11: ~0.15 s each). The document grows by ~8 bytes per
token (the rows p[] and p[0] of V entries 1/V); the cost by ~0.3 s per token. More target rows
at more live prefixes (gamma up to 16) multiply it.

Usage: cd /work/wt-adv && PYTHONPATH=src python tests/data/trust/block_dos_stream_gcd.py [V [HEXDIGITS [OUT]]]
(default V = 200, 65000 hex digits: 1.17 MB; measured on 2 cores: V = 20 2.9 s, V = 100 12.4 s,
V = 1000 186 s at 1.19 MB)
"""

import json
import random
import sys
import time
from fractions import Fraction

from specproof import checker

V = int(sys.argv[1]) if len(sys.argv) > 1 else 200
digits = int(sys.argv[2]) if len(sys.argv) > 2 else 65000
rng = random.Random(2)
den = rng.getrandbits(4 * digits) | (1 << (4 * digits - 1)) | 1
c = Fraction(rng.randrange(den // 3, 2 * den // 3), den)  # a random n/d (a long continued fraction)


def text(x):
    return f"{x.numerator:#x}/{x.denominator:#x}"


assert len(text(c)) <= checker.MAX_NUMBER_CHARS and len(text(1 - c)) <= checker.MAX_NUMBER_CHARS
uniform = [f"1/{V}"] * V
rows = {
    "p[]": {"recipe": ["input", "p", []], "values": uniform},
    "p[0]": {"recipe": ["input", "p", [0]], "values": uniform},
}
const = ["const", text(c)]
nodes = [
    {
        "label": "root",
        "reach": "1/1",
        "branches": [
            {
                "event": {"coin": {"model": "continuous", "lower": None, "upper": {"source": const, "strict": False}}},
                "probability": text(c),
                "child": {"leaf": [[0], 0]},
            },
            {
                "event": {"coin": {"model": "continuous", "lower": {"source": const, "strict": True}, "upper": None}},
                "probability": text(1 - c),
                "child": {"leaf": [[0, 0], 1]},
            },
        ],
    }
]
tv = Fraction(V - 1, V)  # worked out by hand for c > 1/V: total |F| = 2 (V - 1) / V
doc = {
    "schema": checker.BLOCK_SCHEMA,
    "vocab_size": V,
    "gamma": 1,
    "rows": rows,
    "nodes": nodes,
    "law": [[[0], text(c)], [[0, 0], text(1 - c)]],
    "totals": {
        "accepted_length": [text(c), text(1 - c)],
        "expected_emitted": text(2 - c),
        "stream_tv": f"{tv.numerator}/{tv.denominator}",
    },
    "claims": {"lossless": False},
}
data = json.dumps(doc)
if len(sys.argv) > 3:
    open(sys.argv[3], "w").write(data)
print(f"V = {V}, constant of {c.denominator.bit_length()} bits, {len(data) / 1e6:.2f} MB")
start = time.perf_counter()
verdict = checker.check(data)
print(verdict, f"{time.perf_counter() - start:.1f} s")
