"""The laws of one step over a block, each by the public entry point that computes it: seconds per
call (median of --repeat runs), with the machine's load average beside them.

    python benchmarks/bench_block.py [--repeat 5] [--json] [--cpu] [--only TEXT ...]

Run it against another checkout with PYTHONPATH=OTHER/src to compare two versions on the same load
(alternate the two, several times: the machine is shared). ``--cpu`` reports the fewest CPU seconds
of the runs (process time, after one run not counted) instead of the median wall time: on a busy
machine it moves least. The cases: the phone chains of the main
job (gamma 3, law and lossless verdict, and the chain certificate), an engine rule's block law
(stop tokens, stream TV), typical acceptance over blocks (its law, and its block certificate: a
tree composed by outcome.block_tree), block verification over blocks, a relaxed rule,
a token tree, and the given-block laws.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from fractions import Fraction


def cases() -> dict:
    from specproof.certify import blocks
    from specproof.certify.certificate import build_chain_certificate
    from specproof.laws import chain, relaxed, variants
    from specproof.models.fixtures import PHONE_END, phone_lm_chain
    from specproof.rules import audit, policy

    target, draft, labels = phone_lm_chain(("HH", "AH"))
    end = labels.index(PHONE_END)
    p4 = [Fraction(1, 2), Fraction(1, 4), Fraction(1, 8), Fraction(1, 8)]
    q4 = [Fraction(1, 4), Fraction(1, 4), Fraction(1, 4), Fraction(1, 4)]
    p3, q3 = ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]
    rule = policy.STANDARD
    rows = [["1/2", "1/4", "1/4"], ["1/3", "1/3", "1/3"], ["1/6", "1/6", "2/3"]]
    return {
        "chain phone gamma 3 (law + lossless)": lambda: (
            chain.verification_law(target, draft, 3, stop_tokens=[end]).lossless
        ),
        "chain certificate phone gamma 3": lambda: build_chain_certificate(
            target, draft, 3, name="bench", labels=labels, stop_tokens=[end]
        ),
        "audit.block_law V 4 gamma 3": lambda: audit.block_law(p4, q4, 3, rule, stop_tokens=[3]),
        "typical_block_law V 4 gamma 3": lambda: variants.typical_block_law(p4, q4, 3),
        "typical_block_certificate V 4 gamma 3": lambda: blocks.typical_block_certificate(p4, q4, 3),
        "block_verification_law V 3 gamma 4": lambda: variants.block_verification_law(p3, q3, 4),
        "relaxed_block_law V 4 gamma 4": lambda: relaxed.relaxed_block_law(p4, q4, 4, "sglang-threshold"),
        "greedy_tree_law V 4 top-2 depth 4": lambda: variants.greedy_tree_law(p4, variants.topk_tree(q4, [2] * 4)),
        "given_block_law x 2000": lambda: [chain.given_block_law(rows, rows[:2], [0, 2]) for _ in range(2000)],
        "audit.given_block_law x 200": lambda: [audit.given_block_law(rows, rows[:2], [0, 2]) for _ in range(200)],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print the measurements as one JSON object")
    ap.add_argument("--cpu", action="store_true", help="the fewest CPU seconds of the runs, not the median wall time")
    ap.add_argument("--only", nargs="+", default=(), help="the cases whose names contain one of these texts")
    args = ap.parse_args()
    clock = time.process_time if args.cpu else time.perf_counter
    out = {}
    for name, fn in cases().items():
        if args.only and not any(text in name for text in args.only):
            continue
        if args.cpu:
            fn()  # imports and first-call caches are not counted
        times = []
        for _ in range(args.repeat):
            start = clock()
            fn()
            times.append(clock() - start)
        out[name] = min(times) if args.cpu else statistics.median(times)
    load = os.getloadavg()[0]
    what = "min_cpu_seconds" if args.cpu else "median_seconds"
    if args.json:
        print(json.dumps({"load": load, what: out}, sort_keys=True))
        return
    print(f"{'fewest CPU' if args.cpu else 'median'} seconds of {args.repeat} runs (load average {load:.1f})")
    for name, t in out.items():
        print(f"  {name:40s} {t:8.4f}")


if __name__ == "__main__":
    main()
