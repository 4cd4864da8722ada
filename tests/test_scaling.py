"""benchmarks/scaling.py: its growth fits, and that it runs and draws its figures on tiny sizes
(the real run takes minutes and is not part of the suite; nothing here measures speed)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("scaling", ROOT / "benchmarks" / "scaling.py")
scaling = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scaling)


def test_fit_power_and_base_recover_the_growth():
    xs = [10, 100, 1000, 10_000]
    assert scaling.fit_power(xs, [3e-6 * x**2 for x in xs]) == pytest.approx(2.0)
    assert scaling.fit_power(xs, [0.5 * x for x in xs]) == pytest.approx(1.0)
    # fitted over the three largest sizes (a fixed cost dominates the small ones), in any order
    assert scaling.fit_power(xs[::-1], [5.0, 0.01 * 100, 0.01 * 1000, 0.01 * 10_000][::-1]) == pytest.approx(1.0)
    assert scaling.fit_power(xs, [5.0, 0.01 * 100, 0.01 * 1000, 0.01 * 10_000], last=4) < 0.9
    assert scaling.fit_power([10], [1.0]) is None
    gammas = [1, 2, 3, 4, 5]
    assert scaling.fit_base(gammas, [0.01 * 4**g for g in gammas]) == pytest.approx(4.0)
    assert scaling.fit_base(gammas, [5.0, 5.0, 0.01 * 3**3, 0.01 * 3**4, 0.01 * 3**5]) == pytest.approx(3.0)


def _run(tmp_path, *parts):
    out = tmp_path / "figures"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scaling.py"), "--quick", "--out", str(out), "--parts", *parts],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return out, json.loads((out / "scaling.json").read_text())


@pytest.mark.slow  # a subprocess; CI's slow run
def test_scaling_script_runs_on_tiny_sizes(tmp_path):
    out, data = _run(tmp_path, "law", "chain", "checker")
    assert sorted(p.name for p in out.iterdir()) == [
        "chain_vs_gamma.svg",
        "checker_vs_size.svg",
        "law_vs_v.svg",
        "scaling.json",
    ]
    assert data["quick"] is True and data["machine"]["cpus"] >= 1
    assert data["law"]["v"] == [100, 1000] and len(data["law"]["exact"]) == len(data["law"]["float"]) == 2
    assert data["chain"]["gamma"] == [1, 2] and len(data["chain"]["chain"]["2"]) == 2
    kinds = data["checker"]["kinds"]
    assert set(kinds) == {"genuine position certificate", "genuine compact certificate", "genuine chain certificate"}
    assert all(point["valid"] for points in kinds.values() for point in points)
    assert set(data["load"]) == {"law", "chain", "checker"}
    svg = (out / "law_vs_v.svg").read_text()
    assert svg.startswith("<?xml") and "<dc:date>" not in svg  # no date: the file changes only with the data


@pytest.mark.slow
def test_scaling_script_traces_on_tiny_sizes(tmp_path):
    pytest.importorskip("transformers")  # the models extra: the tracer runs transformers' verifier
    out, data = _run(tmp_path, "trace")
    assert (out / "trace_runs.svg").exists()
    row = data["trace"]["by_v"][0]
    assert row["v"] == 2 and row["read_runs"] >= 1 and row["bisect_runs"] >= row["read_runs"]
