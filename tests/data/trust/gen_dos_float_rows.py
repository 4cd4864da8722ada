"""An outcome certificate whose derived float rows escaped the rows' memory budget (kernel branch).

    python gen_dos_float_rows.py TARGET_KB [OUT]   (default OUT: stdout)

p holds one float64 subnormal entry (2^-1070) beside V - 2 entries near 1/(2V): a float64 row
rounded from it is over 2^1070, so each of its V entries holds about 1,070 bits. The document
derives 24 such rows (``float-rounded``, the most its one input row allows), 3.5 times the
MAX_TABLE_BITS + 32 bits-per-character budget: before the fix the float steps were never charged
to the budget (0.24 s, 61 MB at 87 KB); now the rows are charged like every other derived row.
"""

import json
import sys
from fractions import Fraction as F


def document(v, rows=24):
    tiny = F(1, 2**1070)
    values = [F(1, 2) - tiny, tiny] + [F(1, 2 * (v - 1))] * (v - 2)
    values[-1] += 1 - sum(values)

    def text(x):
        return f"{x.numerator:#x}/{x.denominator:#x}" if x.denominator > 2**64 else f"{x.numerator}/{x.denominator}"

    spec = {"p": {"recipe": ["input", "p"], "values": [text(x) for x in values]}}
    for i in range(rows):
        spec[f"f{i}"] = {"recipe": ["float-rounded", "p" if i == 0 else f"f{i - 1}", "float64"]}
    return {
        "schema": "specproof.outcome-certificate/1",
        "name": "float rows",
        "statement": "s",
        "vocab_size": v,
        "reference": "p",
        "rows": spec,
        "nodes": [
            {
                "label": "d",
                "reach": "1/1",
                "branches": [
                    {
                        "event": {"draw": {"row": f"f{rows - 1}", "token": 0}},
                        "probability": "1/1",
                        "child": {"leaf": [0, True]},
                    }
                ],
            }
        ],
        "law": ["0/1"] * v,
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }


def main(argv):
    target, v = int(argv[1]) * 1000, 16
    while len(json.dumps(document(v + v // 8))) < target:
        v += v // 8
    text = json.dumps(document(v))
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
