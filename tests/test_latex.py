"""LaTeX export of transcripts: generated from the Markdown the certificate renders to, byte-identical
on regeneration, compiled with pdflatex where one is installed and checked structurally everywhere."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from specproof.certify.certificate import build_certificate
from specproof.checker import check
from specproof.report import transcript
from specproof.report.latex import escape, to_latex

ROOT = Path(__file__).resolve().parents[1]


def _doc():
    cert = build_certificate(
        ["1/2", "1/4", "1/4"], ["1/2", 0, "1/2"], name="a | b & c_d #1 100% 中", labels=["x", "{y}", "\\z"]
    )
    return transcript.render(cert, check(cert))


def test_escape_leaves_no_command_from_text():
    assert escape("\\input{/etc/passwd} $x$ ^ ~ % & # _") == (
        "\\textbackslash{}input\\{/etc/passwd\\} \\$x\\$ \\textasciicircum{} \\textasciitilde{} \\% \\& \\# \\_"
    )
    assert escape("中") == "\\textless{}U+4E2D\\textgreater{}"
    assert escape("a\x00b\tc") == "a b c"


def test_latex_is_structural_and_regenerates_identically():
    md = _doc()
    tex = to_latex(md, "t")
    assert tex == to_latex(md, "t")
    assert tex.startswith("\\documentclass") and tex.endswith("\\end{document}\n")
    separators = [line for line in md.splitlines() if re.fullmatch(r"\|[-:| ]+\|", line)]
    assert tex.count("\\begin{longtable}") == tex.count("\\end{longtable}") == len(separators) == 2
    assert tex.count("\\begin{itemize}") == tex.count("\\end{itemize}")
    assert "a \\textbar{} b \\& c\\_d \\#1 100\\% \\textless{}U+4E2D\\textgreater{}" in tex
    body = tex.split("\\begin{document}")[1]
    # every table row has as many cells as its header
    for table in body.split("\\begin{longtable}{")[1:]:
        columns = len(table.split("}", 1)[0])
        rows = [line for line in table.split("\\end{longtable}")[0].splitlines() if line.endswith("\\\\")]
        assert rows and all(row.count(" & ") == columns - 1 for row in rows), rows[:2]


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine installed (structure checked above)")
@pytest.mark.parametrize("name", ["seed_cases", "chain_phone_lm", "symbolic_every_v"])
def test_latex_compiles(tmp_path, name):
    md = (ROOT / "proofs" / "transcripts" / f"{name}.md").read_text(encoding="utf-8")
    (tmp_path / "t.tex").write_text(to_latex(md, name), encoding="utf-8")
    run = subprocess.run(
        ["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "t.tex"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:]
    assert (tmp_path / "t.pdf").stat().st_size > 1000


def test_cli_writes_latex(tmp_path, capsys):
    from specproof.cli import main

    path = ROOT / "proofs" / "transcripts" / "seed_cases.json"
    assert main(["transcript", str(path), "--format", "latex", "--out", str(tmp_path / "t.tex")]) == 0
    tex = (tmp_path / "t.tex").read_text(encoding="utf-8")
    assert main(["transcript", str(path)]) == 0
    assert tex == to_latex(capsys.readouterr().out, "Proof transcript: seed_cases.json")
