"""How long the trusted checker takes: hostile documents at 20, 50 and 100 KB (goal: each under
5 s), genuine chain certificates at four sizes (goal: time linear in size; the slope is printed),
and the SmolLM2 bundle (18 compact certificates at V = 49,152; goal: under 10 s).

    python benchmarks/bench_checker.py [--skip-smollm2]

The hostile generators are the adversarial review's (tests/data/trust/gen_*.py), written in
today's schemas (no tolerance field). Times are the best of 3 runs of checker.check on the
file's bytes (parsing included).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from specproof import checker
from specproof.certificate import build_chain_certificate, dumps

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


def _outcome_hostile(kb: int) -> dict[str, bytes]:
    """Outcome certificates built to cost the checker the most per byte (about ``kb`` KB each):
    the most derived rows the budget allows over one long input row; a deep chain of one-branch
    nodes; a genuine standard tree at large V; and (size fixed) race-reuse at the largest V the
    race primitive accepts, every (given, winner) pair a branch."""
    from fractions import Fraction

    from specproof.audit import position_law
    from specproof.certificate import build_outcome_certificate
    from specproof.policy import named_rule

    def rows_of(weights):
        return [x / sum(weights) for x in weights]

    out = {}
    v = kb * 1000 // 24  # an input row of "1/V" entries, and one draw from it per token
    rows = {"p": {"recipe": ["input", "p"], "values": [f"1/{v}"] * v}}
    rows.update({f"u{i}": {"recipe": ["normalized", "p" if i == 0 else f"u{i - 1}"]} for i in range(17)})
    draws = [{"event": {"draw": {"row": "u16", "token": t}}, "probability": f"1/{v}", "child": {"leaf": [t, True]}}
             for t in range(v)]
    out["derived rows at the budget"] = {
        "schema": checker.OUTCOME_SCHEMA, "vocab_size": v, "rows": rows, "reference": "p",
        "nodes": [{"label": "d", "reach": "1/1", "branches": draws}], "law": [f"1/{v}"] * v,
        "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"}, "claims": {"lossless": True}}
    depth = kb * 1000 // 130
    nodes = [{"label": "c", "reach": "1/1", "branches": [{"event": {"choice": {"condition": ["always"]}},
              "probability": "1/1", "child": i + 1 if i + 1 < depth else {"leaf": [0, True]}}]} for i in range(depth)]
    out["deep chain of nodes"] = {"schema": checker.OUTCOME_SCHEMA, "vocab_size": 1, "reference": "p",
                                  "rows": {"p": {"recipe": ["input", "p"], "values": ["1/1"]}}, "nodes": nodes,
                                  "law": ["1/1"], "totals": {"alpha": "1/1", "out_of_range": "0/1", "tv": "0/1"},
                                  "claims": {"lossless": True}}
    v = kb * 1000 // 250
    p = rows_of([Fraction(1 + i % 7) for i in range(v)])
    q = rows_of([Fraction(1 + (3 * i) % 5) for i in range(v)])
    out["genuine standard tree"] = build_outcome_certificate(position_law(p, q, named_rule("le-float32-coin")).tree,
                                                             name="big", statement="s")
    n = checker.MAX_RACE_VOCAB
    p = rows_of([Fraction(1 + i % 5) for i in range(n)])
    q = rows_of([Fraction(1 + (2 * i) % 3) for i in range(n)])
    out["race-reuse at V = 64"] = build_outcome_certificate(position_law(p, q, named_rule("race-reuse")).tree,
                                                            name="race", statement="s")
    return {k: dumps(d).encode() for k, d in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-smollm2", action="store_true", help="skip the 19 MB SmolLM2 bundle")
    args = parser.parse_args()
    print("hostile documents (goal: each < 5 s)")
    with tempfile.TemporaryDirectory() as tmp:
        for script, size_args in (("gen_dos_chain.py", [2000, 6]), ("gen_dos_chain_bignum.py", [50, 20]),
                                  ("gen_dos_transcript.py", [500])):
            for kb in (20, 50, 100):
                data = _hostile(script, list(size_args), kb, Path(tmp))
                seconds, verdict = _best(data)
                print(f"  {script:24s} {len(data) / 1000:7.1f} KB  {seconds:7.3f} s  valid={verdict.valid}")
    print("outcome certificates (goal: each < 5 s)")
    for kb in (20, 50, 100):
        for name, data in _outcome_hostile(kb).items():
            seconds, verdict = _best(data)
            print(f"  {name:28s} {len(data) / 1000:7.1f} KB  {seconds:7.3f} s  valid={verdict.valid}"
                  f"{'' if verdict.valid else ' (' + verdict.reason.value + ')'}")
    print("genuine chain certificates (goal: linear in size)")
    points = []
    for gamma in (1, 2, 3, 4):
        data = _genuine(gamma, 12)
        seconds, verdict = _best(data)
        assert verdict.valid, verdict
        points.append((len(data), seconds))
        print(f"  gamma {gamma}: {len(data) / 1e6:8.3f} MB  {seconds:7.3f} s  "
              f"({seconds / len(data) * 1e6:.3f} s per MB)")
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
