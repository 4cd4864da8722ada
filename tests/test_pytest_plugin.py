"""The pytest plugin: pytest's summary says what each passing assert_lossless passed, with and without
pytest-xdist, and says nothing when assert_lossless is not called."""

import subprocess
import sys

import pytest

SAMPLERS = """
import torch
from specproof.testing import assert_lossless

def textbook(p, q):
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))

def test_float_rows():
    assert_lossless(textbook, torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3]))

def test_dyadic_rows():
    assert_lossless(textbook, torch.tensor([0.5, 0.25, 0.25]), torch.tensor([0.25, 0.5, 0.25]))

def test_nothing_traced():
    assert 1 + 1 == 2
"""


# a pytest subprocess importing torch, and under xdist two more: both in CI's slow run; the section is the same
@pytest.mark.parametrize(
    "workers",
    [pytest.param([], marks=pytest.mark.slow), pytest.param(["-n", "2"], marks=pytest.mark.slow)],
    ids=["one process", "xdist"],
)
def test_the_summary_names_each_verdict(tmp_path, workers):
    pytest.importorskip("torch")
    (tmp_path / "test_mine.py").write_text(SAMPLERS, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers, "test_mine.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    section = run.stdout[run.stdout.index("specproof verdicts") :]
    lines = sorted(line for line in section.splitlines() if line.startswith("test_mine.py::"))
    assert lines == [
        "test_mine.py::test_dyadic_rows: lossless, TV 0 from the target's law",
        "test_mine.py::test_float_rows: float-faithful, TV 6.70552e-09 (12079596/1801439944900609) from the target's "
        "law (the float floor of u < fl32(p/q), residual fl32(max(p - q, 0)) as weights, float32 coin on [0, 1))",
    ]


def test_no_section_without_assert_lossless(tmp_path):
    (tmp_path / "test_plain.py").write_text("def test_one():\n    assert True\n", encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_plain.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0 and "specproof verdicts" not in run.stdout


def test_the_summary_line_carries_the_caveats_the_verdict_rests_on():
    # a new user's trial: a target row summing to 1.0005 passed as float-faithful with a TV of 2e-4 and pytest's
    # line did not say that the row was renormalized (the report did)
    torch = pytest.importorskip("torch")
    from specproof.trace.testing import _passed_line, compare

    namespace: dict = {}
    exec(SAMPLERS, namespace)
    result = compare(namespace["textbook"], torch.tensor([0.6, 0.3, 0.1005]), torch.tensor([0.2, 0.5, 0.3]))
    assert result.verdict == "float-faithful" and len(result.caveats) == 1
    line = _passed_line(result)
    assert line.endswith(f"; caveat: {result.caveats[0]}")
    assert "the target row sums to 1.000500038, not 1" in line and "it was renormalized" in line
    clean = compare(namespace["textbook"], torch.tensor([0.6, 0.3, 0.1]), torch.tensor([0.2, 0.5, 0.3]))
    assert clean.caveats == () and "caveat" not in _passed_line(clean)
