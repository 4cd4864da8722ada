"""How long the trusted checker takes: hostile documents at 20, 50 and 100 KB (goal: each under
5 s), genuine chain certificates at four sizes (goal: time linear in size; the slope is printed),
and the SmolLM2 bundle (18 compact certificates at V = 49,152; goal: under 10 s).

    python benchmarks/bench_checker.py [--skip-smollm2] [--third-review]

The third review's generators and reproducers (issue 18) are run as ``specproof check`` and
``specproof transcript`` in child processes, with their CPU time and peak memory.

The hostile generators are the adversarial review's (tests/data/trust/gen_*.py), written in
today's schemas (no tolerance field). Times are the best of 3 runs of checker.check on the
file's bytes (parsing included).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specproof import checker
from specproof.certify.certificate import build_chain_certificate, dumps

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "data" / "trust"
sys.path.insert(0, str(ROOT / "tests"))
from test_trust_cases import _upgrade  # noqa: E402


def _best(data: bytes, runs: int = 3) -> tuple[float, checker.Verdict]:
    best, verdict = float("inf"), None
    for _ in range(runs):
        start = time.perf_counter()
        verdict = checker.check(data)
        best = min(best, time.perf_counter() - start)
    return best, verdict


def _hostile(script: str, args: list[int], target_kb: int, tmp: Path) -> bytes:
    """Grow the generator's size argument until the document is about ``target_kb`` KB."""
    out = tmp / "doc.json"
    data = b""
    while True:
        subprocess.run([sys.executable, str(CASES / script), *map(str, args), str(out)], check=True)
        data = dumps(_upgrade(json.loads(out.read_text()))).encode()
        if len(data) >= target_kb * 1000:
            return data
        args[-1] += max(1, args[-1] // 4)


def _genuine(gamma: int, vocab: int) -> bytes:
    """A chain whose rows depend on the last token: more nodes (and distinct rows) with gamma."""
    from fractions import Fraction

    def row(prefix, shift):
        last = prefix[-1] if prefix else 0
        weights = [1 + (i * 7 + last * 3 + shift) % 11 for i in range(vocab)]
        total = sum(weights)
        return [Fraction(w, total) for w in weights]

    cert = build_chain_certificate(lambda s: row(s, 0), lambda s: row(s, 5), gamma, name=f"gamma {gamma}")
    return dumps(cert).encode()


def _valid(doc: dict) -> dict:
    """Fill in a hand-made outcome certificate's probabilities, reaches, law and totals the way
    an adversary would (with the checker's own primitives), so that the whole document is checked."""
    from fractions import Fraction

    from specproof.certify.certificate import fraction_text

    size = doc["vocab_size"]
    for node in doc["nodes"]:
        node["reach"] = "0/1"
        for branch in node["branches"]:
            branch["probability"] = "0/1"
    rows, *_ = checker._outcome_rows(doc, "doc", size, checker._branch_shapes(doc["nodes"], "doc"))
    reach = [Fraction(0)] * len(doc["nodes"])
    reach[0] = Fraction(1)
    law, alpha = [Fraction(0)] * size, Fraction(0)
    for i, node in enumerate(doc["nodes"]):
        node["reach"] = fraction_text(reach[i])
        for branch in node["branches"]:
            r = checker._event_probability(branch["event"], rows, size, "b", set())
            prob = Fraction(r.num, r.den)
            branch["probability"] = fraction_text(prob)
            if isinstance(branch["child"], int):
                reach[branch["child"]] += reach[i] * prob
            else:
                output, accepted = branch["child"]["leaf"]
                law[output] += reach[i] * prob
                alpha += reach[i] * prob * accepted
    p = [Fraction(x) for x in doc["rows"]["p"]["values"]]
    tv = sum((abs(a - b) for a, b in zip(law, p)), Fraction(0)) / 2
    doc["law"] = [fraction_text(x) for x in law]
    doc["totals"] = {"alpha": fraction_text(alpha), "out_of_range": "0/1", "tv": fraction_text(tv)}
    doc["claims"] = {"lossless": tv == 0}
    return doc


def _inputs(v: int) -> dict:
    row = [f"1/{v}"] * v
    return {"p": {"recipe": ["input", "p"], "values": row}, "q": {"recipe": ["input", "q"], "values": row}}


def _race_doc(kb: int) -> dict:
    """Races at V = MAX_RACE_VOCAB on rows of random weights over denominators near
    MAX_RACE_BITS: the root draws the given token, then one node per given token lists the
    second race's winners."""
    import random

    rng = random.Random(kb)
    v, bits = checker.MAX_RACE_VOCAB, checker.MAX_RACE_BITS - 8
    den_a, den_b = rng.getrandbits(bits) | 1, rng.getrandbits(bits) | 1
    rows = {
        **_inputs(v),
        "a": {"recipe": ["given"], "values": [f"{rng.getrandbits(bits - 8) + 1}/{den_a}" for _ in range(v)]},
        "b": {"recipe": ["given"], "values": [f"{rng.getrandbits(bits - 8) + 1}/{den_b}" for _ in range(v)]},
    }
    givens = max(1, min(v, kb * 1000 // (130 * v)))
    nodes = [
        {
            "label": "first race",
            "branches": [
                {"event": {"draw": {"row": "a", "token": g}}, "child": 1 + g if g < givens else {"leaf": [g, False]}}
                for g in range(v)
            ],
        }
    ]
    nodes += [
        {
            "label": f"given {g}",
            "branches": [
                {
                    "event": {"race": {"first": "a", "given": g, "second": "b", "winner": w}},
                    "child": {"leaf": [w, False]},
                }
                for w in range(v)
            ],
        }
        for g in range(givens)
    ]
    return _valid({"schema": checker.OUTCOME_SCHEMA, "vocab_size": v, "reference": "p", "rows": rows, "nodes": nodes})


def _coin_doc(kb: int) -> dict:
    """float32 coins between the cdf thresholds of a given row whose common denominator is near
    MAX_ROW_BITS: every branch divides numbers of that size."""
    import random

    rng = random.Random(kb)
    v = 64
    bits = checker.MAX_ROW_BITS // v - 8
    rows = {
        **_inputs(v),
        "g": {
            "recipe": ["given"],
            "values": [
                f"{rng.getrandbits(bits - 4) + 1}/{rng.getrandbits(bits) | (1 << (bits - 1)) | 1}" for _ in range(v)
            ],
        },
    }
    per_node = min(v, max(1, kb * 1000 // (200 * v)))

    def coin(i):
        lower = None if i == 0 else {"source": ["cdf", "g", i - 1], "strict": False}
        upper = None if i == v - 1 else {"source": ["cdf", "g", i], "strict": True}
        return {"event": {"coin": {"model": "float32", "lower": lower, "upper": upper}}, "child": {"leaf": [i, True]}}

    nodes = [
        {
            "label": "draw",
            "branches": [
                {"event": {"draw": {"row": "p", "token": t}}, "child": 1 + t if t < per_node else {"leaf": [t, False]}}
                for t in range(v)
            ],
        }
    ]
    nodes += [{"label": "coin", "branches": [coin(i) for i in range(v)]} for _ in range(per_node)]
    return _valid({"schema": checker.OUTCOME_SCHEMA, "vocab_size": v, "reference": "p", "rows": rows, "nodes": nodes})


def _outcome_hostile(kb: int) -> dict[str, bytes]:
    """Outcome certificates built to cost the checker the most per byte (about ``kb`` KB each),
    all valid (their claims filled in with the checker's own primitives, as an adversary can):
    the most derived rows the budget allows over one long input row; a deep chain of one-branch
    nodes; races at the race primitive's limits (V and bits); float32 coins between the cdf
    thresholds of a row whose denominator is near the row limit; and a genuine standard tree."""
    from fractions import Fraction

    from specproof.certify.certificate import build_outcome_certificate
    from specproof.rules.audit import position_law
    from specproof.rules.policy import named_rule

    out = {}
    v = kb * 1000 // 40  # input rows of "1/V" entries, and one draw per token from a derived row
    rows = {**_inputs(v), **{f"u{i}": {"recipe": ["normalized", "p" if i == 0 else f"u{i - 1}"]} for i in range(17)}}
    draws = [{"event": {"draw": {"row": "u16", "token": t}}, "child": {"leaf": [t, True]}} for t in range(v)]
    out["derived rows at the budget"] = _valid(
        {
            "schema": checker.OUTCOME_SCHEMA,
            "vocab_size": v,
            "rows": rows,
            "reference": "p",
            "nodes": [{"label": "d", "branches": draws}],
        }
    )
    depth = kb * 1000 // 130
    nodes = [
        {
            "label": "c",
            "branches": [
                {
                    "event": {"choice": {"condition": ["always"]}},
                    "child": i + 1 if i + 1 < depth else {"leaf": [0, True]},
                }
            ],
        }
        for i in range(depth)
    ]
    out["deep chain of nodes"] = _valid(
        {"schema": checker.OUTCOME_SCHEMA, "vocab_size": 1, "reference": "p", "rows": _inputs(1), "nodes": nodes}
    )
    out["races at the race limits"] = _race_doc(kb)
    out["coins on a wide given row"] = _coin_doc(kb)
    v = kb * 1000 // 250
    weights_p, weights_q = [Fraction(1 + i % 7) for i in range(v)], [Fraction(1 + (3 * i) % 5) for i in range(v)]
    p, q = [x / sum(weights_p) for x in weights_p], [x / sum(weights_q) for x in weights_q]
    out["genuine standard tree"] = build_outcome_certificate(
        position_law(p, q, named_rule("le-float32-coin")).tree, name="big", statement="s"
    )
    return {k: dumps(d).encode() for k, d in out.items()}


def _block_hostile(kb: int) -> dict[str, bytes]:
    """Block certificates built to cost the stream check the most per byte (about ``kb`` KB),
    valid and lossy (the block (0,) always): the target's rows at every prefix of a binary tree as
    deep as the size allows, over denominators of hundreds of bits (the gap's numbers grow with
    depth); and one wide level (V rows of V tokens after every first token)."""
    import random
    from fractions import Fraction

    from specproof.certify.certificate import fraction_text

    def finish(doc):
        size, gamma = doc["vocab_size"], doc["gamma"]
        rows, _, _, inputs = checker._outcome_rows(doc, "doc", size, 1, gamma)
        targets = {prefix: rows[name] for (role, prefix), name in inputs.items() if role == "p"}
        gap = checker._stream_gap({(0,): checker.Ratio(1, 1)}, targets, "doc", set())
        doc["totals"] = {
            "accepted_length": ["1/1"] + ["0/1"] * gamma,
            "expected_emitted": "1/1",
            "stream_tv": fraction_text(gap),
        }
        doc["claims"] = {"lossless": False}
        return dumps(doc).encode()

    def certain(size, gamma, rows):
        return {
            "schema": checker.BLOCK_SCHEMA,
            "vocab_size": size,
            "gamma": gamma,
            "rows": rows,
            "nodes": [
                {
                    "label": "certain",
                    "reach": "1/1",
                    "branches": [
                        {
                            "event": {"choice": {"condition": ["always"]}},
                            "probability": "1/1",
                            "child": {"leaf": [[0], 0]},
                        }
                    ],
                }
            ],
            "law": [[[0], "1/1"]],
        }

    rng = random.Random(kb)
    bits = 600
    den = rng.getrandbits(bits) | (1 << bits)
    depth = max(1, min(checker.MAX_BLOCK_GAMMA, (kb * 1000 // (2 * bits // 3 + 40)).bit_length() - 2))
    rows = {}
    for d in range(depth + 1):
        for i in range(2**d):
            prefix = [(i >> k) & 1 for k in range(d)]
            a = rng.randrange(1, den)
            rows[f"p{prefix}"] = {"recipe": ["input", "p", prefix], "values": [f"{a}/{den}", f"{den - a}/{den}"]}
    out = {f"stream over a binary tree, gamma {depth}": finish(certain(2, depth, rows))}
    v = max(2, int((kb * 1000 / 8) ** 0.5))
    row = [f"1/{v}"] * v
    rows = {
        "p[]": {"recipe": ["input", "p", []], "values": row},
        **{f"p[{t}]": {"recipe": ["input", "p", [t]], "values": row} for t in range(v)},
    }
    out[f"one wide level, V = {v}"] = finish(certain(v, 1, rows))
    v = kb * 1000 // 8  # one live prefix whose V children no block reaches, at a constant of the limit
    c = Fraction(rng.getrandbits(checker.MAX_ROW_BITS - 1), 1 << (checker.MAX_ROW_BITS - 1))
    text = f"{c.numerator:#x}/{c.denominator:#x}"
    rows = {
        "p[]": {"recipe": ["input", "p", []], "values": [f"1/{v}"] * v},
        "p[0]": {"recipe": ["input", "p", [0]], "values": [f"1/{v}"] * v},
    }
    coin = {"source": ["const", text]}
    doc = certain(v, 1, rows)
    doc["nodes"][0]["branches"] = [
        {
            "event": {"coin": {"model": "continuous", "lower": None, "upper": {**coin, "strict": False}}},
            "probability": text,
            "child": {"leaf": [[0], 0]},
        },
        {
            "event": {"coin": {"model": "continuous", "upper": None, "lower": {**coin, "strict": True}}},
            "probability": f"{(1 - c).numerator:#x}/{(1 - c).denominator:#x}",
            "child": {"leaf": [[0, 0], 1]},
        },
    ]
    rows_, _, _, inputs = checker._outcome_rows(doc, "doc", v, 2, 1)
    law = {
        (0,): checker.Ratio(c.numerator, c.denominator),
        (0, 0): checker.Ratio((1 - c).numerator, (1 - c).denominator),
    }
    gap = checker._stream_gap(law, {k[1]: rows_[n] for k, n in inputs.items() if k[0] == "p"}, "doc", set())
    doc["law"] = [[[0], text], [[0, 0], doc["nodes"][0]["branches"][1]["probability"]]]
    doc["totals"] = {
        "accepted_length": [text, doc["law"][1][1]],
        "expected_emitted": fraction_text(2 - c),
        "stream_tv": fraction_text(gap),
    }
    doc["claims"] = {"lossless": gap == 0}
    out[f"a constant at the limit, V = {v}"] = dumps(doc).encode()
    return out


#: The third review's generators (issue 18): script, extra arguments after the size and output.
THIRD_REVIEW = (
    ("gen_dos_outcome_unreduced.py", []),
    ("gen_dos_outcome_unreduced.py", ["block"]),
    ("gen_dos_rows_memory.py", []),
    ("gen_dos_repeated_keys.py", []),
    ("gen_dos_position_unreduced.py", []),
    ("gen_dos_mass_bits.py", []),
    ("gen_dos_mass_bits.py", ["block"]),
)
THIRD_REVIEW_FILES = (
    "uniform_before_p_vocab_100000000.json",
    "symbolic_record_no_fields.json",
    "lossy_tv_15000_bits.json",
    "provenance_850_deep.json",
    "rejected_missing_total.json",
    "rejected_total_zero_denominator.json",
    "backtick_code_span_injection.json",
    "control_chars_row_names.json",
    "proposal_unbound_accept_all.json",
)


def _child_cost(command: str, path: Path) -> tuple[int, float, float]:
    """``specproof COMMAND PATH`` in a child process: (exit status, CPU seconds, peak memory in MB)."""
    script = (
        "import resource, runpy, sys; sys.argv = ['specproof'] + sys.argv[1:]\n"
        "try:\n    runpy.run_module('specproof', run_name='__main__')\n"
        "except SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "u = resource.getrusage(resource.RUSAGE_SELF)\n"
        "peak = u.ru_maxrss  # VmHWM: this process's own peak (ru_maxrss may count the forking parent's)\n"
        "try:\n    peak = int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])\n"
        "except (OSError, StopIteration):\n    pass\n"
        "sys.stderr.write(f'\\nCOST {u.ru_utime + u.ru_stime} {peak}\\n'); sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, command, str(path)], capture_output=True, text=True)
    cpu, rss = done.stderr.rpartition("\nCOST ")[2].split()
    return done.returncode, float(cpu), int(rss) / 1024


def _third_review(tmp: Path) -> None:
    """Each generator at 20, 50 and 100 KB and each small reproducer: `check` and `transcript`
    in a child process, CPU time and peak memory (goal: each < 5 s and < 500 MB)."""
    print("third review (issue 18): check and transcript, CPU s and peak MB (goal: < 5 s, < 500 MB)")
    cases = []
    for script, extra in THIRD_REVIEW:
        for kb in (20, 50, 100):
            out = tmp / f"{script}-{'-'.join(extra)}-{kb}.json"
            subprocess.run(
                [sys.executable, str(CASES / script), str(kb - 1), str(out), *extra],
                check=True,
                env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
            )
            cases.append((f"{script} {' '.join(extra)}".strip(), out))
    cases += [(name, CASES / name) for name in THIRD_REVIEW_FILES]
    for name, path in cases:
        costs = [_child_cost(command, path) for command in ("check", "transcript")]
        print(
            f"  {name:40s} {path.stat().st_size / 1000:7.1f} KB  "
            + "  ".join(
                f"{command} exit {code} {cpu:5.2f} s {memory:6.1f} MB"
                for command, (code, cpu, memory) in zip(("check", "transcript"), costs)
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-smollm2", action="store_true", help="skip the 19 MB SmolLM2 bundle")
    parser.add_argument("--third-review", action="store_true", help="only the third review's cases (issue 18)")
    args = parser.parse_args()
    if args.third_review:
        with tempfile.TemporaryDirectory() as tmp:
            _third_review(Path(tmp))
        return
    print("hostile documents (goal: each < 5 s)")
    with tempfile.TemporaryDirectory() as tmp:
        for script, size_args in (
            ("gen_dos_chain.py", [2000, 6]),
            ("gen_dos_chain_bignum.py", [50, 20]),
            ("gen_dos_transcript.py", [500]),
        ):
            for kb in (20, 50, 100):
                data = _hostile(script, list(size_args), kb, Path(tmp))
                seconds, verdict = _best(data)
                print(f"  {script:24s} {len(data) / 1000:7.1f} KB  {seconds:7.3f} s  valid={verdict.valid}")
    print("outcome certificates (goal: each < 5 s)")
    for kb in (20, 50, 100):
        for name, data in _outcome_hostile(kb).items():
            seconds, verdict = _best(data)
            print(
                f"  {name:28s} {len(data) / 1000:7.1f} KB  {seconds:7.3f} s  valid={verdict.valid}"
                f"{'' if verdict.valid else ' (' + verdict.reason.value + ')'}"
            )
    print("block certificates (goal: each < 5 s)")
    for kb in (20, 50, 100, 400):
        for name, data in _block_hostile(kb).items():
            seconds, verdict = _best(data)
            print(
                f"  {name:34s} {len(data) / 1000:7.1f} KB  {seconds:7.3f} s  valid={verdict.valid}"
                f"{'' if verdict.valid else ' (' + verdict.reason.value + ')'}"
            )
    with tempfile.TemporaryDirectory() as tmp:
        _third_review(Path(tmp))
    print("genuine chain certificates (goal: linear in size)")
    points = []
    for gamma in (1, 2, 3, 4):
        data = _genuine(gamma, 12)
        seconds, verdict = _best(data)
        assert verdict.valid, verdict
        points.append((len(data), seconds))
        print(
            f"  gamma {gamma}: {len(data) / 1e6:8.3f} MB  {seconds:7.3f} s  ({seconds / len(data) * 1e6:.3f} s per MB)"
        )
    (x0, y0), (x1, y1) = points[0], points[-1]
    print(f"  slope from the smallest to the largest: {(y1 - y0) / (x1 - x0) * 1e6:.3f} s per MB")
    if not args.skip_smollm2:
        from specproof.theorems import prove

        with tempfile.TemporaryDirectory() as tmp:
            prove("real_smollm2", tmp)
            data = (Path(tmp) / "real_smollm2.json").read_bytes()
        seconds, verdict = _best(data, runs=1)
        print(f"SmolLM2 bundle: {len(data) / 1e6:.1f} MB, {seconds:.2f} s, valid={verdict.valid} (goal < 10 s)")


if __name__ == "__main__":
    main()
