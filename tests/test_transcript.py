"""Tests for specproof.report.transcript: rendered from the JSON alone, deterministic, abbreviated."""

from fractions import Fraction

import numpy as np

from specproof import checker
from specproof.certify.certificate import build_bundle, build_certificate
from specproof.checker import Reason, Verdict, check
from specproof.laws.rational import from_floats
from specproof.report import transcript


def test_show():
    assert transcript.show("0/1") == "0"
    assert transcript.show("4/2") == "2"
    assert transcript.show("-1/3") == "-1/3"
    assert transcript.show(Fraction(10**30, 3 * 10**30 + 1)) == "0.333333333333…"
    assert transcript.show(Fraction(1, 7 * 10**40)) == "1.42857142857e-41…"


def test_certificate_transcript_content_and_determinism():
    cert = build_certificate(
        ["1/3", "2/3", 0],
        ["1/2", 0, "1/2"],
        name="demo",
        labels=["a", "b|c", " d"],
        provenance={"context": "The capital of France is"},
    )
    text = transcript.render(cert)
    assert text == transcript.render(cert)
    assert text.startswith("# Proof transcript: demo\n\n**Verdict: PROVED**\n")
    assert "| 1 | `b\\|c` | 2/3 | 0 | 0 | 2/3 | 2/3 | yes |" in text
    assert "| 2 | ` d` | 0 | 1/2 | 0 | 0 | 0 | yes |" in text
    assert "Totals: alpha = 1/3; TV = 2/3; residual normalizer Z = 2/3; rejection mass 1 − alpha = 2/3." in text
    assert "| context | The capital of France is |" in text
    assert transcript.checker_identity()["sha256"] in text
    assert text.count("holds; re-derived by the checker") == 5


def test_rejected_certificate_renders_the_reason():
    cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="bad")
    cert["rows"][0]["emitted"] = "1/3"
    verdict = check(cert)
    assert verdict.reason is Reason.EMITTED
    text = transcript.render(cert, verdict)
    assert "**Verdict: REJECTED**" in text
    assert "Rejected by the checker (emitted): `certificate.rows[0].emitted: expected 1/2, claimed 1/3`." in text
    # only what the checker re-derived is shown: nothing of a rejected document's claims
    assert "| 0 | 1/2 | 1/4 | 1/4 | 1/4 | 1/3 | NO |" not in text and "1/3" not in text.replace("claimed 1/3", "")
    assert "none of its values, claims or provenance are shown" in text


def test_long_tables_are_abbreviated_to_the_rows_that_matter():
    rng = np.random.default_rng(0)
    p = rng.dirichlet(np.ones(200) * 0.5)
    q = rng.dirichlet(np.ones(200) * 0.5)
    p[[7, 9]] = 0.0
    q[[3]] = 0.0
    cert = build_certificate(from_floats(p / p.sum()), from_floats(q / q.sum()), name="long")
    text = transcript.render(cert)
    shown = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert 5 <= len(shown) < 40
    tokens = {int(line.split("|")[1]) for line in shown}
    assert {7, 9, 3} <= tokens  # zeros of p and of q
    assert int(np.argmax(p)) in tokens and int(np.argmax(q)) in tokens
    assert f"{len(shown)} of 200 rows shown" in text


def test_bundle_transcript_lists_instances():
    certs = [build_certificate([1, 0], [0, 1], name="disjoint"), build_certificate([1], [1], name="v1")]
    text = transcript.render(build_bundle(certs, name="b", statement="S"))
    assert "| 0 | disjoint | 2 | 0 | 1 | 1 | 0 100% | yes | yes |" in text
    assert "| 1 | v1 | 1 | 1 | 0 | 0 | none (p == q) | yes | yes |" in text
    assert "### 1. v1 (V = 1)" in text
    assert f"Valid: checker version {checker.VERSION} re-verified 2 certificate(s)." in text


def test_verdict_passed_in_is_used():
    cert = build_certificate([1], [1], name="x")
    text = transcript.render(cert, Verdict(False, Reason.CLAIM, "made up"))
    assert "Rejected by the checker (claim): `made up`." in text


def test_compact_certificate_transcript():
    from specproof.certify.certificate import build_compact_certificate

    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(500) * 0.3)
    q = rng.dirichlet(np.ones(500) * 0.3)
    cert = build_compact_certificate(
        p, q, name="big", atol=1e-3, labels=[f"w{i}" for i in range(500)], provenance={"context": "a prompt"}
    )
    text = transcript.render(cert)
    assert "**Verdict: PROVED**" in text
    assert f"V = 500; {len(cert['rows'])} of 500 rows shown" in text
    assert "Compared with p(x) for all 500 tokens: 500 of 500 equal." in text
    assert "`w" in text and "| context | a prompt |" in text
    support = sum(1 for a, b in zip(p / p.sum(), q / q.sum()) if a > b)
    assert f"the residual's support has {support} token(s)" in text


def test_docs_excerpt_is_the_committed_transcript():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    page = (root / "docs" / "trust.md").read_text(encoding="utf-8")
    start = page.index("An excerpt of `proofs/transcripts/seed_cases.md`:")
    block = page[page.index("```\n", start) + 4 : page.index("```", page.index("```\n", start) + 4)]
    committed = (root / "proofs" / "transcripts" / "seed_cases.md").read_text(encoding="utf-8")
    for line in block.splitlines():
        assert line in committed.splitlines(), line


def test_residual_carriers_same_from_integer_and_fraction_columns():
    # ties (tokens 1 and 3) go to the smaller id; a share rounds from its exact value (5/8 -> 62%:
    # 62.5 rounds half to even, as round() of a Fraction does)
    cert = {"rows": [{"token": 3, "label": "C"}]}
    nums, den = [0, 5, 2, 5, 0, 1], 7
    fracs = [Fraction(n, den) for n in nums]
    tokens = list(range(len(nums)))
    by_ints = transcript._residual_carriers(cert, nums, range(len(nums)))
    assert by_ints == transcript._residual_carriers(cert, fracs, tokens) == "1 38%, `C` 38%, 2 15%"
    assert transcript._residual_carriers(cert, [0, 5, 3], range(3)) == "1 62%, 2 38%"
    assert transcript._residual_carriers(cert, [0, 0], range(2)) == "none (p == q)"
