"""A valid one-position certificate whose p and q entries are written unreduced (issue 18,
found in the self-review of items 1-2).

    PYTHONPATH=src python gen_dos_position_unreduced.py TARGET_KB [OUT]

p = 1/V and q has weights 1, 2, 3, ...; each of their entries n/d is written (k n)/(k d) with k
a distinct 80-bit number. The rows' common denominator, taken over the entries as written, is
then about V x 80 bits, and the law over it holds V such numbers in each row: V x bits, quadratic
in the size (96 KB: 7.75 s under load, 3.6 s idle, before the fix). Now each entry is reduced
before the common denominator is taken, and V x bits(lcm(p, q)) is bounded by MAX_TABLE_BITS +
STATED_ROW_BITS_PER_CHAR per character of p and q (checked before the law is built).
"""

import json
import random
import sys
from fractions import Fraction


def document(v, rng):
    from specproof.certify.certificate import build_certificate

    weights = [1 + i % 3 for i in range(v)]
    cert = build_certificate([Fraction(1, v)] * v, [Fraction(w, sum(weights)) for w in weights], name="unreduced")
    for row in cert["rows"]:
        for key in "pq":
            num, den = (int(x) for x in row[key].split("/"))
            k = rng.getrandbits(80) | 1
            row[key] = f"{k * num:#x}/{k * den:#x}"
    return cert


def main(argv):
    target = int(argv[1]) * 1000
    v = max(2, target // 200)
    while len(text := json.dumps(document(v, random.Random(18)))) < target:
        v += max(1, (target - len(text)) // 200)
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
