"""Tests for the specproof command line (main(argv) -> int, and the installed entry points)."""

import subprocess
import sys

import pytest

from specproof import __version__
from specproof.cli import main


def test_crosscheck_command(capsys):
    assert main(["crosscheck", "--pairs", "50", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "crosscheck: 50 pairs" in out
    assert "within bound" in out


def test_crosscheck_exceeded_bound_exits_1(capsys):
    # a bound of 0 cannot be met: the float path has rounding error on some pair
    assert main(["crosscheck", "--pairs", "50", "--bound", "0"]) == 1
    assert "BOUND EXCEEDED" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [[], ["nope"], ["crosscheck", "--pairs", "x"]])
def test_usage_errors_exit_2(argv, capsys):
    assert main(argv) == 2


def test_bad_value_exits_2(capsys):
    assert main(["crosscheck", "--pairs", "0"]) == 2
    assert "pairs must be >= 1" in capsys.readouterr().err


def test_version(capsys):
    assert main(["--version"]) == 0
    assert __version__ in capsys.readouterr().out


def test_python_dash_m():
    run = subprocess.run(
        [sys.executable, "-m", "specproof", "crosscheck", "--pairs", "20"],
        capture_output=True, text=True, check=False,
    )
    assert run.returncode == 0, run.stderr
    assert "within bound" in run.stdout
