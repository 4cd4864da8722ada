"""Figures beside transcripts: drawn from the checker's re-derived facts, byte-identical on
regeneration, linked from the Markdown."""

import json
import xml.etree.ElementTree as ET
from fractions import Fraction
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from specproof import checker  # noqa: E402
from specproof.certify.certificate import build_certificate  # noqa: E402
from specproof.cli import main  # noqa: E402
from specproof.report import plots

ROOT = Path(__file__).resolve().parents[1]


def _bars(svg_path):
    """The ids of the bars in an SVG written by specproof.report.plots (groups with an id "bar-...")."""
    root = ET.parse(svg_path).getroot()
    return sorted(g.get("id") for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("id", "").startswith("bar-"))


def test_pair_figure_is_byte_identical_and_shows_four_bars_per_token(tmp_path):
    cert = build_certificate(["1/2", "1/4", "1/4"], ["1/2", 0, "1/2"], name="pair")
    verdict = checker.check(cert)
    a = plots.pair_figure(verdict.facts[0], tmp_path / "a.svg", title="pair")
    b = plots.pair_figure(verdict.facts[0], tmp_path / "b.svg", title="pair")
    assert a.read_bytes() == b.read_bytes()
    assert _bars(a) == sorted(f"bar-{s}-{t}" for s in ("p", "q", "accept", "residual") for t in range(3))


def test_pair_figure_keeps_the_tokens_with_the_most_mass(tmp_path):
    v = 40
    p = [Fraction(1, 2)] + [Fraction(1, 2 * (v - 1))] * (v - 1)
    q = [Fraction(1, v)] * v
    verdict = checker.check(build_certificate(p, q, name="wide"))
    path = plots.pair_figure(verdict.facts[0], tmp_path / "w.svg")
    # token 0 carries the most mass; then q's 1/40 beats p's 1/78 everywhere else: tokens 0..23
    assert _bars(path) == sorted(
        f"bar-{s}-{t}" for s in ("p", "q", "accept", "residual") for t in range(plots.TOP_TOKENS)
    )


def test_chain_figure_beside_eq1(tmp_path):
    doc = json.loads((ROOT / "tests" / "data" / "trust" / "toctou_genuine.json").read_text())
    assert "law" in checker.check(doc).facts[0]
    facts = {
        "gamma": 2,
        "accepted_length": [checker.Ratio(1, 4), checker.Ratio(1, 4), checker.Ratio(1, 2)],
        "mean_alpha": checker.Ratio(2, 3),
    }
    path = plots.chain_figure(facts, tmp_path / "c.svg")
    assert _bars(path) == sorted(f"bar-{s}-{k}" for s in ("exact", "eq1") for k in range(3))
    assert "Eq. 1 at mean alpha = 0.6667" in path.read_text()
    assert plots._geometric(Fraction(2, 3), 2) == [Fraction(1, 3), Fraction(2, 9), Fraction(4, 9)]


@pytest.mark.slow  # matplotlib renders; CI's slow run
def test_transcript_plots_are_written_and_linked(tmp_path, capsys):
    out = tmp_path / "seed.md"
    cert = ROOT / "proofs" / "transcripts" / "seed_cases.json"
    assert main(["transcript", str(cert), "--out", str(out), "--plots"]) == 0
    text = out.read_text(encoding="utf-8")
    first = (tmp_path / "seed-0.svg").read_bytes()
    assert "## Figures" in text and "](<seed-5.svg>)" in text
    assert text.index("## Figures") < text.index("## Verdict")
    assert main(["transcript", str(cert), "--out", str(out), "--plots"]) == 0
    assert (tmp_path / "seed-0.svg").read_bytes() == first and out.read_text(encoding="utf-8") == text
    assert main(["transcript", str(cert), "--plots"]) == 2  # needs --out


def test_outcome_certificates_plot_the_emitted_law_beside_the_reference(tmp_path, capsys):
    (tmp_path / "p.json").write_text('["1/4", "1/4", "1/2"]')
    (tmp_path / "q.json").write_text('["1", "0", "0"]')
    cert = tmp_path / "c.json"
    assert (
        main(
            [
                "audit",
                "--target",
                str(tmp_path / "p.json"),
                "--draft",
                str(tmp_path / "q.json"),
                "--policy",
                "coin-reuse-inverse-cdf",
                "--certificate",
                str(cert),
            ]
        )
        == 1
    )
    assert main(["transcript", str(cert), "--out", str(tmp_path / "T.md"), "--plots"]) == 0
    assert _bars(tmp_path / "T-0.svg") == sorted(f"bar-{s}-{t}" for s in ("emitted", "reference") for t in range(3))
    assert "![" in (tmp_path / "T.md").read_text() and "T-0.svg" in (tmp_path / "T.md").read_text()
