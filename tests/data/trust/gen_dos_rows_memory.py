"""An outcome certificate whose derived rows would hold V x 16,000 bits each (issue 18, item 2).

    python gen_dos_rows_memory.py TARGET_KB [OUT]   (default OUT: stdout)

p is one-hot over V tokens (V as large as TARGET_KB allows: about 6 bytes a token); the row f0
is ``floor-difference p p eps`` with eps a rational of 16,000-bit numerator and denominator, so
every one of its V entries has 16,000 bits; 23 more rows are ``scaled f0 k/k``: 24 derived rows,
within the row count allowed. At 99 KB (V = 15,000) this needed 1.54 GB before the fix; now the
rows' bits are bounded by MAX_TABLE_BITS plus STATED_ROW_BITS_PER_CHAR per stated character,
checked before each row is built: rejected at once.
"""

import json
import sys


def document(v):
    eps_den = (1 << 16000) - 1
    eps = f"{eps_den // (3 * v):#x}/{eps_den:#x}"
    rows = {
        "p": {"recipe": ["input", "p"], "values": ["1/1"] + ["0/1"] * (v - 1)},
        "f0": {"recipe": ["floor-difference", "p", "p", eps]},
    }
    rows.update({f"f{k}": {"recipe": ["scaled", "f0", f"{k + 1}/{k + 1}"]} for k in range(1, 24)})
    return {
        "schema": "specproof.outcome-certificate/1",
        "name": "rows-memory",
        "statement": "s",
        "vocab_size": v,
        "reference": "p",
        "rows": rows,
        "nodes": [
            {
                "label": "root",
                "reach": "1/1",
                "branches": [
                    {"event": {"draw": {"row": "f23", "token": 0}}, "probability": "1/1", "child": {"leaf": [0, True]}}
                ],
            }
        ],
        "law": ["1/1"] + ["0/1"] * (v - 1),
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }


def main(argv):
    target = int(argv[1]) * 1000
    v = max(2, (target - len(json.dumps(document(2)))) // 14)  # two rows of V entries: "0/1", twice
    text = json.dumps(document(v))
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
