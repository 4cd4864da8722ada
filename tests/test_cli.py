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
    assert "--pairs must be >= 1, got 0" in capsys.readouterr().err


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


# ---------------------------------------------------------------- prove / check / transcript

import json  # noqa: E402

from specproof.certificate import build_certificate, write  # noqa: E402


def test_prove_all_writes_and_summarizes(tmp_path, capsys, monkeypatch):
    # the CLI wiring on two quick theorems; tests/test_theorems.py runs every theorem once
    from specproof import theorems

    quick = {k: theorems.THEOREMS[k] for k in ("seed_cases", "real_phone_lm")}
    monkeypatch.setattr(theorems, "THEOREMS", quick)
    assert main(["prove", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 of 2 theorems proved" in out
    for key in quick:
        assert (tmp_path / f"{key}.json").exists() and (tmp_path / f"{key}.md").exists()
        assert str(tmp_path / f"{key}.md") in out
    assert "real pairs: phone trigram vs bigram/unigram" in out


def test_prove_one_pair_from_files(tmp_path, capsys):
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/2", 0]))
    (tmp_path / "q.txt").write_text("0.25\n0.25\n0.5\n")
    code = main(["prove", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.txt"),
                 "--out", str(tmp_path / "o"), "--name", "mine"])
    assert code == 0
    assert "mine: PROVED (V = 3, alpha = 1/2)" in capsys.readouterr().out
    cert = json.loads((tmp_path / "o" / "mine.json").read_text())
    assert cert["provenance"]["draft"]["format"] == "text"
    assert cert["provenance"]["float_policy"]["q"]["name"] == "dyadic-renormalize"
    md = (tmp_path / "o" / "mine.md").read_text()
    assert "dyadic-renormalize" in md and "**Verdict: PROVED**" in md


def test_prove_usage_errors(tmp_path, capsys):
    assert main(["prove", "--target", "x.json"]) == 2
    assert "--target and --draft go together" in capsys.readouterr().err
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/3"]))
    assert main(["prove", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "p.json"),
                 "--out", str(tmp_path)]) == 2
    assert "p sums to 5/6, not 1" in capsys.readouterr().err


def test_check_exit_codes(tmp_path, capsys):
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["check", str(good)]) == 0
    assert "valid" in capsys.readouterr().out
    cert = json.loads(good.read_text())
    cert["totals"]["alpha"] = "3/5"
    bad = tmp_path / "b.json"
    bad.write_text(json.dumps(cert))
    assert main(["check", str(bad)]) == 1
    assert "REJECTED (total): certificate.totals.alpha: expected 3/4, claimed 3/5" in capsys.readouterr().out
    assert main(["check", str(tmp_path / "missing.json")]) == 2
    (tmp_path / "t.json").write_text(good.read_text()[:50])
    assert main(["check", str(tmp_path / "t.json")]) == 1
    assert main(["check"]) == 2


def test_transcript_command(tmp_path, capsys):
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["transcript", str(good)]) == 0
    assert capsys.readouterr().out.startswith("# Proof transcript: g\n")
    assert main(["transcript", str(good), "--out", str(tmp_path / "g.md")]) == 0
    assert (tmp_path / "g.md").read_text().startswith("# Proof transcript: g\n")
    cert = json.loads(good.read_text())
    cert["rows"][0]["residual"] = "1/8"
    (tmp_path / "b.json").write_text(json.dumps(cert))
    assert main(["transcript", str(tmp_path / "b.json")]) == 1
    assert "**Verdict: REJECTED**" in capsys.readouterr().out
    (tmp_path / "n.json").write_text("{")
    assert main(["transcript", str(tmp_path / "n.json")]) == 2


def test_crosscheck_argument_checks(capsys):
    assert main(["crosscheck", "--seed", "-1"]) == 2
    assert main(["crosscheck", "--bound", "nan"]) == 2
    assert main(["crosscheck", "--bound", "-1"]) == 2
    assert "--bound must be a finite number >= 0" in capsys.readouterr().err


def test_check_symbolic_record(tmp_path, capsys):
    from pathlib import Path

    record = Path(__file__).resolve().parents[1] / "proofs" / "transcripts" / "symbolic_every_v.json"
    assert main(["check", str(record)]) == 0
    assert "re-ran the SymPy proof" in capsys.readouterr().out
    doc = json.loads(record.read_text())
    doc["steps"][0]["result"] = "1"
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["check", str(tmp_path / "s.json")]) == 1
    assert "differs from a fresh run of the SymPy proof" in capsys.readouterr().out


def test_os_errors_exit_2(tmp_path, capsys):
    (tmp_path / "p.json").write_text(json.dumps(["1/2", "1/2"]))
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["prove", "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "p.json"),
                 "--out", str(blocker)]) == 2
    good = write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "g.json")
    assert main(["transcript", str(good), "--out", str(tmp_path / "no" / "dir" / "x.md")]) == 2
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    assert main(["check", str(tmp_path / "deep.json")]) == 1
    assert main(["transcript", str(tmp_path / "deep.json")]) == 2


def test_crosscheck_real_and_fixtures_listing(capsys):
    assert main(["crosscheck", "--real"]) == 0
    out = capsys.readouterr().out
    assert "crosscheck: 38 pairs" in out and "within bound" in out
    assert main(["fixtures"]) == 0
    assert "phone-HH-AH-bigram: V = 41" in capsys.readouterr().out


def test_transcript_refuses_forged_symbolic_records_and_odd_documents(tmp_path, capsys):
    forged = {"schema": "specproof.symbolic-proof/1", "name": "forged", "statement": "1 = 2", "assumptions": [],
              "sympy_version": "9", "steps": [], "conclusion": "1 = 2", "proved": True}
    (tmp_path / "f.json").write_text(json.dumps(forged))
    assert main(["transcript", str(tmp_path / "f.json")]) == 1
    assert "PROVED" not in capsys.readouterr().out
    cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="t\n\n**Verdict: PROVED**\n\n<!--")
    cert["rows"][0]["emitted"] = "1/3"
    (tmp_path / "inject.json").write_text(json.dumps(cert))
    assert main(["transcript", str(tmp_path / "inject.json")]) == 1
    out = capsys.readouterr().out
    assert "<!--" not in out and out.count("**Verdict:") == 1 and "**Verdict: REJECTED**" in out
    odd = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="odd")
    odd["provenance"] = "a string"
    (tmp_path / "odd.json").write_text("\ufeff" + json.dumps(odd))
    capsys.readouterr()
    assert main(["transcript", str(tmp_path / "odd.json")]) == 0  # valid; provenance shown as given
    assert '| provenance | a string |' in capsys.readouterr().out


def test_huge_exact_inputs_exit_2(tmp_path, capsys):
    (tmp_path / "p.txt").write_text(f"1/{2**8000}\n{2**8000 - 1}/{2**8000}\n")
    (tmp_path / "q.txt").write_text(f"1/{3**5000}\n{3**5000 - 1}/{3**5000}\n")
    code = main(["prove", "--target", str(tmp_path / "p.txt"), "--draft", str(tmp_path / "q.txt"),
                 "--out", str(tmp_path / "o")])
    assert code in (0, 2)  # proved, or refused with a message; never a traceback


def test_crosscheck_blocks_command(capsys):
    assert main(["crosscheck", "--blocks", "24", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "crosscheck: 24 drafted blocks" in out and "within bound" in out
    assert main(["crosscheck", "--blocks", "0"]) == 2
    assert main(["crosscheck", "--blocks", "4", "--real"]) == 2


def test_crosscheck_blocks_ignores_pairs_and_check_survives_odd_schemas(tmp_path, capsys):
    assert main(["crosscheck", "--blocks", "8", "--pairs", "0"]) == 0
    odd = tmp_path / "odd.json"
    odd.write_text('{"schema": []}')
    assert main(["check", str(odd)]) == 1
    assert main(["transcript", str(odd)]) == 2
    out = capsys.readouterr()
    assert "REJECTED (schema)" in out.out and "Traceback" not in out.err


def test_utf16_certificates_check_and_render(tmp_path, capsys):
    cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="utf16")
    path = tmp_path / "u.json"
    path.write_bytes(json.dumps(cert).encode("utf-16"))
    assert main(["check", str(path)]) == 0
    assert main(["transcript", str(path)]) == 0
    assert "**Verdict: PROVED**" in capsys.readouterr().out
