"""`specproof prove` says when it compiles the Coq proofs, and --no-coq skips them."""

import os
import stat

import pytest

from specproof import cli, theorems


def _symbolic_only(monkeypatch):
    monkeypatch.setattr(theorems, "THEOREMS", {"symbolic_every_v": theorems.THEOREMS["symbolic_every_v"]})
    monkeypatch.setattr(
        cli.prove, "_library_findings", lambda inputs=None: {"library": "transformers", "skipped": "not traced here"}
    )


def test_no_coq_skips_the_formal_check_and_says_so(tmp_path, monkeypatch, capsys):
    _symbolic_only(monkeypatch)
    assert cli.main(["prove", "--out", str(tmp_path), "--jobs", "1", "--no-coq"]) == 0
    captured = capsys.readouterr()
    assert "lossless for every V (SymPy): formal check (Coq) not run: --no-coq" in captured.out
    assert "compiles the Coq proofs" not in captured.err


@pytest.mark.slow  # a whole prove; CI's slow run
def test_a_coqc_on_path_is_announced_before_it_runs(tmp_path, monkeypatch, capsys):
    fake = tmp_path / "bin" / "coqc"  # a coqc without MathComp: every call fails
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    _symbolic_only(monkeypatch)
    assert cli.main(["prove", "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    captured = capsys.readouterr()
    announced = captured.err.index("also compiles the Coq proofs in proofs/coq")
    assert announced < captured.err.index("[1/2]")  # before the first theorem finishes
    assert "--no-coq skips them" in captured.err
    assert "formal check (Coq) not run: MathComp (ssreflect, algebra) is not installed" in captured.out
