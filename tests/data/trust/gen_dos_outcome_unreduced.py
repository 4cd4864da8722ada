"""A valid outcome (or block) certificate whose claims are written unreduced (issue 18, item 1).

    python gen_dos_outcome_unreduced.py TARGET_KB [OUT [block]]   (default OUT: stdout)

The root's reach is written X/X with X a number of about 40,000 bits, and each of V = 300
branches drawing token j from the uniform row claims 1/300 written as j/(300 j) (each with its
own denominator); the leaves keep reach x probability. The whole law is 1/300 per token, alpha 1,
lossless. Sized by TARGET_KB: X has as many bits as the size allows (at least 8 bits).
With ``block``, the same as a block certificate (gamma 1: the root's branches emit the blocks
[j], one accepted draft each). Before the fix, the checker multiplied all 300 denominators and the big X into every sum
(54 KB: 21-37 s; 93 KB: 169 s); now it computes with the re-derived values only.
"""

import json
import sys

V = 300


def document(x_bits, kind="outcome"):
    x = (1 << x_bits) - 1
    if kind == "block":
        branches = [
            {
                "event": {"draw": {"row": "p[]", "token": j}},
                "probability": f"{j + 1}/{300 * (j + 1)}",
                "child": {"leaf": [[j], 1]},
            }
            for j in range(V)
        ]
        return {
            "schema": "specproof.block-certificate/1",
            "name": "unreduced",
            "statement": "s",
            "vocab_size": V,
            "gamma": 1,
            "rows": {"p[]": {"recipe": ["input", "p", []], "values": ["1/300"] * V}},
            "nodes": [{"label": "root", "reach": f"0x{x:x}/0x{x:x}", "branches": branches}],
            "law": [[[j], "1/300"] for j in range(V)],
            "totals": {"accepted_length": ["0/1", "1/1"], "expected_emitted": "1/1", "stream_tv": "0/1"},
            "claims": {"lossless": True},
        }
    branches = [
        {
            "event": {"draw": {"row": "u", "token": j}},
            "probability": f"{j + 1}/{300 * (j + 1)}",
            "child": {"leaf": [j, True]},
        }
        for j in range(V)
    ]
    return {
        "schema": "specproof.outcome-certificate/1",
        "name": "unreduced",
        "statement": "s",
        "vocab_size": V,
        "reference": "p",
        "rows": {"p": {"recipe": ["input", "p"], "values": ["1/300"] * V}, "u": {"recipe": ["uniform"]}},
        "nodes": [{"label": "root", "reach": f"0x{x:x}/0x{x:x}", "branches": branches}],
        "law": ["1/300"] * V,
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": True},
    }


def main(argv):
    target, kind = int(argv[1]) * 1000, argv[3] if len(argv) > 3 else "outcome"
    base = len(json.dumps(document(8, kind)))
    text = json.dumps(document(max(8, (target - base) * 2), kind))  # X is written twice, 4 bits a hex digit
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
