"""Outcome certificates whose re-derived masses grow to MAX_MASS_BITS while every claim stays small.

    python gen_dos_mass_bits.py TARGET_KB [OUT [LIMIT_BITS] [block]]   (default OUT: stdout)

A given row g = [1/2, (M - 2)/(2M), 1/M] with M a number of about MAX_ROW_BITS - 400 bits: its
common denominator is 2M, so a draw of token 0 has probability M/(2M) = 1/2, unreduced. A chain of
nodes each either draws g's token 0 (next node) or passes a coin u >= 1/2 (a leaf): the claimed
reaches are 1/2^k, the re-derived ones are over denominators growing by ~16,000 bits a level, as
deep as LIMIT_BITS (default the checker's MAX_MASS_BITS) allows. The last node splits by a
continuous coin against constants i/N into N children (as many as the size allows), each of which
does the same once more: every leaf costs a product of a mass near the limit by a row's
denominator, and the law's sums add masses near the limit. Used to choose
MAX_MASS_BITS (benchmarks/bench_checker.py --mass-bits).
"""

import json
import sys
from fractions import Fraction

ROW_BITS = 2**14 - 400


def document(children, limit_bits):
    m = (1 << ROW_BITS) - 159  # odd, so 1/2 and 1/M give a common denominator of 2M
    rows = {
        "p": {"recipe": ["input", "p"], "values": ["1/3", "1/3", "1/3"]},
        "g": {"recipe": ["given"], "values": ["1/2", f"{m - 2:#x}/{2 * m:#x}", f"1/{m:#x}"]},
    }
    depth = max(1, limit_bits // (ROW_BITS + 1) - 2)
    nodes = []

    def halves(first, second):  # draw g's token 0 (1/2, unreduced M/(2M)), or a coin u >= 1/2 (1/2)
        return [
            {"event": {"draw": {"row": "g", "token": 0}}, "probability": "1/2", "child": first},
            {
                "event": {
                    "coin": {
                        "model": "continuous",
                        "upper": None,
                        "lower": {"source": ["const", "1/2"], "strict": False},
                    }
                },
                "probability": "1/2",
                "child": second,
            },
        ]

    for k in range(depth):
        nodes.append({"label": f"level {k}", "reach": f"1/{2**k}", "branches": halves(k + 1, {"leaf": [1, True]})})
    n = children
    fan = []
    for i in range(n):
        lower = None if i == 0 else {"source": ["const", f"{i}/{n}"], "strict": False}
        upper = None if i == n - 1 else {"source": ["const", f"{i + 1}/{n}"], "strict": True}
        fan.append(
            {
                "event": {"coin": {"model": "continuous", "lower": lower, "upper": upper}},
                "probability": f"1/{n}",
                "child": depth + 1 + i,
            }
        )
    nodes.append({"label": "fan", "reach": f"1/{2**depth}", "branches": fan})
    for _ in range(n):
        nodes.append(
            {"label": "c", "reach": f"1/{2**depth * n}", "branches": halves({"leaf": [0, True]}, {"leaf": [2, True]})}
        )
    return {
        "schema": "specproof.outcome-certificate/1",
        "name": "mass bits",
        "statement": "s",
        "vocab_size": 3,
        "reference": "p",
        "rows": rows,
        "nodes": nodes,
        "law": ["1/3"] * 3,
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
        "claims": {"lossless": False},
    }


def block_document(blocks, limit_bits):
    """The block form: a chain of nodes whose two halves both lead to the next node (reach 1,
    re-derived unreduced over a growing denominator), then a fan whose N coin branches emit the N
    blocks [i] (V = N; float32 grid coins between i/N and (i + 1)/N), each claimed small in the law, each re-derived over a denominator near the
    limit: the stream check turns every block's mass into an exact value."""
    m = (1 << ROW_BITS) - 159
    depth = max(1, limit_bits // (ROW_BITS + 1) - 2)
    v = max(3, blocks)
    g = ["0/1"] * v
    g[0], g[1], g[2] = "1/2", f"{m - 2:#x}/{2 * m:#x}", f"1/{m:#x}"
    rows = {"p[]": {"recipe": ["input", "p", []], "values": [f"1/{v}"] * v}, "g": {"recipe": ["given"], "values": g}}
    half = {
        "event": {
            "coin": {"model": "continuous", "upper": None, "lower": {"source": ["const", "1/2"], "strict": False}}
        },
        "probability": "1/2",
    }
    nodes = [
        {
            "label": f"level {k}",
            "reach": "1/1",
            "branches": [  # both halves lead on: reach 1, unreduced
                {"event": {"draw": {"row": "g", "token": 0}}, "probability": "1/2", "child": k + 1},
                {**half, "child": k + 1},
            ],
        }
        for k in range(depth)
    ]
    fan, law, n = [], [], 1 << 24  # float32 grid coins with both ends: every probability is k / 2^48
    for i in range(blocks):
        count = -(-(i + 1) * n // blocks) - -(-i * n // blocks)  # grid points k/n in [i/N, (i + 1)/N)
        mass = Fraction(count, n)
        fan.append(
            {
                "event": {
                    "coin": {
                        "model": "float32",
                        "lower": {"source": ["const", f"{i}/{blocks}"], "strict": False},
                        "upper": {"source": ["const", f"{i + 1}/{blocks}"], "strict": True},
                    }
                },
                "probability": f"{mass.numerator}/{mass.denominator}",
                "child": {"leaf": [[i], 1]},
            }
        )
        law.append([[i], f"{mass.numerator}/{mass.denominator}"])
    nodes.append({"label": "fan", "reach": "1/1", "branches": fan})
    return {
        "schema": "specproof.block-certificate/1",
        "name": "mass bits",
        "statement": "s",
        "vocab_size": v,
        "gamma": 1,
        "rows": rows,
        "nodes": nodes,
        "law": law,
        "totals": {"accepted_length": ["0/1", "1/1"], "expected_emitted": "1/1", "stream_tv": "0/1"},
        "claims": {"lossless": False},
    }


def main(argv):
    target = int(argv[1]) * 1000
    limit = int(argv[3]) if len(argv) > 3 and argv[3] != "block" else 2**17
    make = block_document if argv[-1] == "block" else document
    n = 2
    while len(json.dumps(make(n + max(1, n // 8), limit))) < target:
        n += max(1, n // 8)
    text = json.dumps(make(n, limit))
    if len(argv) > 2:
        with open(argv[2], "w", encoding="utf-8") as handle:
            handle.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
