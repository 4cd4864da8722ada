"""Certificates checked by Coq (specproof.certify.coq, proofs/coq/Certify.v): the generated .v file
states the certificate's values about Spec.v's definitions, coqc proves them by computation, and a
wrong value makes coqc fail. Compiling needs coqc and MathComp: those tests are slow and skip
without coqc, unless SPECPROOF_REQUIRE_COQ=1 (set by .ci/run)."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from specproof.certify import coq
from specproof.certify.certificate import build_certificate
from specproof.certify.symbolic_proof import COQ_DIR
from specproof.errors import SpecProofError

TRANSCRIPTS = Path(__file__).resolve().parents[1] / "proofs" / "transcripts"


def _load(name: str) -> dict:
    return json.loads((TRANSCRIPTS / name).read_text(encoding="utf-8"))


def _seed() -> dict:
    return _load("seed_cases.json")


# ---------------------------------------------------------------- without Coq


def test_the_rows_are_transcribed_as_written():
    text = coq.coq_text(build_certificate(["1/2", "1/4", "1/4"], ["1/2", "0", "1/2"], name="never (* x *)"))
    assert "Definition target : seq Q := [:: Qmake 1 2; Qmake 1 4; Qmake 1 4]." in text
    assert "Definition draft : seq Q := [:: Qmake 1 2; Qmake 0 1; Qmake 1 2]." in text
    assert "Definition emitted : seq Q := [:: Qmake 1 2; Qmake 1 4; Qmake 1 4]." in text
    assert "alpha (row R (size target) target) (row R (size target) draft) = Q2R R (Qmake 3 4)." in text
    assert "(* never ( * x * ) *)" in text  # a name cannot close the comment
    assert re.findall(r"^Theorem (\w+)", text, re.M) == [
        "vocabulary",
        "law",
        "lossless",
        "TV_from_p",
        "alpha_is",
        "TV_is",
        "normalizer_is",
        "rejection_is",
        "alpha_is_1_minus_TV",
        "target_is_distribution",
        "draft_is_distribution",
    ]
    # nothing is admitted or assumed; every proof applies Certify.v and computes
    assert not re.search(r"\b(Admitted|admit|Axiom|Parameter|Hypothesis)\b", text)


def test_a_bundle_is_one_module_per_certificate():
    text = coq.coq_text(_seed())
    assert re.findall(r"^Module (C\d+)\.$", text, re.M) == [f"C{i}" for i in range(6)]


def test_a_false_claim_is_not_stated():
    cert = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="x")
    cert["claims"]["dist_equals_p"] = False
    text = coq.coq_text(cert)
    assert "Theorem lossless" not in text and "Theorem TV_from_p" not in text and "Theorem law " in text


def _mutated(edit) -> dict:
    cert = copy.deepcopy(_seed()["certificates"][1])
    edit(cert)
    return cert


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.update(vocab_size=4), "vocab_size 4 is not the number of rows, 3"),
        (lambda c: c["rows"].pop(), "vocab_size 3 is not the number of rows, 2"),
        (lambda c: c["rows"].reverse(), "row 0 is not token 0"),
        (lambda c: c["rows"][0].update(p="1/" + "9" * 1300), "more than MAX_BITS = 4096 bits"),
        (lambda c: c["rows"][0].update(p="1/" + "9" * 5000), "longer than MAX_BITS = 4096 bits"),
        (lambda c: c["rows"][0].update(p="-1/2"), "is not a non-negative rational"),
        (lambda c: c["rows"][0].update(q="1/0"), "is not a non-negative rational"),
        (lambda c: c["rows"][0].update(q=0.5), "expected an exact 'n/d' string, got float"),
        (lambda c: c["totals"].pop("alpha"), "totals.alpha: expected an exact 'n/d' string"),
        (lambda c: c["claims"].update(dist_equals_p="yes"), "claims.dist_equals_p must be true or false"),
        (lambda c: c.update(schema="specproof.compact-certificate/2"), "only textbook certificates"),
    ],
)
def test_hostile_documents_are_refused(edit, message):
    with pytest.raises(coq.NotCertifiable, match=re.escape(message)) as info:
        coq.coq_text(_mutated(edit))
    assert isinstance(info.value, SpecProofError) and isinstance(info.value, ValueError)


def test_a_file_name_must_be_a_coq_identifier(tmp_path):
    with pytest.raises(coq.NotCertifiable, match="IDENT.v"):
        coq.write_v(_seed(), tmp_path / "seed-cases.v")
    assert coq.write_v(_seed(), tmp_path / "seed_cases.v") == tmp_path / "seed_cases.v"


# ---------------------------------------------------------------- with coqc


def _require_coq() -> None:
    if shutil.which("coqc") is None:
        if os.environ.get("SPECPROOF_REQUIRE_COQ") == "1":
            pytest.fail("SPECPROOF_REQUIRE_COQ=1 but coqc is not on PATH")
        pytest.skip("coqc is not on PATH")


def _one_ulp_more(text: str) -> str:
    """n/d + 1/(d * 10^12): the smallest change of a stated rational a hostile document might make."""
    n, d = map(int, text.split("/"))
    return f"{n * 10**12 + 1}/{d * 10**12}"


@pytest.mark.slow
def test_coqc_proves_the_committed_certificates_and_rejects_wrong_values(tmp_path):
    _require_coq()
    phone = _load("real_phone_lm.json")["certificates"][0]
    wrong_law = _mutated(lambda c: c["rows"][1].update(emitted=_one_ulp_more(c["rows"][1]["emitted"])))
    wrong_tv = copy.deepcopy(phone)
    wrong_tv["totals"]["tv"] = _one_ulp_more(phone["totals"]["tv"])
    swapped = _mutated(lambda c: [r.update(p=r["q"], q=r["p"]) for r in c["rows"]])  # p and q swapped, law unchanged
    files = {
        name: coq.write_v(doc, tmp_path / f"{name}.v")
        for name, doc in (
            ("seed_cases", _seed()),
            ("phone", phone),
            ("wrong_law", wrong_law),
            ("wrong_tv", wrong_tv),
            ("swapped", swapped),
        )
    }
    results = {Path(r["path"]).stem: r for r in coq.compile_files(list(files.values()))}
    assert results["seed_cases"]["ok"], results["seed_cases"]["output"]
    assert results["phone"]["ok"], results["phone"]["output"]
    for bad in ("wrong_law", "wrong_tv", "swapped"):
        assert not results[bad]["ok"]
        assert 'Unable to unify "true" with "false"' in results[bad]["output"]
    # the first failing statement of each is the value that was changed
    assert "line 21" in results["wrong_law"]["output"]  # Theorem law of module C0... of the edited certificate
    assert "TV_is" not in results["wrong_law"]["output"]


@pytest.mark.slow
def test_certify_v_needs_its_sources(tmp_path):
    _require_coq()
    with pytest.raises(coq.NotCertifiable, match="Certify.v not found"):
        shutil.copyfile(COQ_DIR / "Spec.v", tmp_path / "Spec.v")
        coq.compile_files([], source_dir=tmp_path)


# ---------------------------------------------------------------- specproof prove --coq


def _pair(tmp_path: Path) -> list[str]:
    (tmp_path / "p.json").write_text('["1/2", "1/4", "1/4"]', encoding="utf-8")
    (tmp_path / "q.json").write_text('["1/2", "0", "1/2"]', encoding="utf-8")
    return [
        "prove",
        "--target",
        str(tmp_path / "p.json"),
        "--draft",
        str(tmp_path / "q.json"),
        "--out",
        str(tmp_path / "out"),
        "--name",
        "never-proposes",
        "--coq",
        "--json",
    ]


def test_prove_coq_writes_the_file_and_says_when_coqc_is_missing(tmp_path, monkeypatch, capsys):
    from specproof.cli import main, prove

    monkeypatch.setattr(prove.shutil, "which", lambda name: None)
    assert main(_pair(tmp_path)) == 0
    result = json.loads(capsys.readouterr().out)["coq"]
    assert result == {
        "file": str(tmp_path / "out" / "never_proposes.v"),
        "checked": None,
        "seconds": None,
        "summary": "written; not checked (coqc is not on PATH; Coq 8.16 with MathComp compiles it)",
    }
    assert "Definition draft : seq Q := [:: Qmake 1 2; Qmake 0 1; Qmake 1 2]." in Path(result["file"]).read_text()


def test_prove_coq_refuses_a_compact_certificate(tmp_path, capsys):
    from specproof.cli import main

    assert main([*_pair(tmp_path), "--certificate", "compact"]) == 2
    assert "--coq transcribes full certificates" in capsys.readouterr().out


@pytest.mark.slow
def test_prove_coq_compiles_with_coqc(tmp_path, capsys):
    _require_coq()
    from specproof.cli import main

    assert main(_pair(tmp_path)) == 0
    result = json.loads(capsys.readouterr().out)["coq"]
    assert result["checked"] is True and result["summary"].startswith("proved by coqc in ")


def test_the_definitions_a_reader_trusts_are_pinned():
    # a generated statement means what it says only through these three definitions of Certify.v (the rest of
    # the statement is Spec.v's, pinned in spec.json): changing one must show in this test's diff
    text = " ".join((COQ_DIR / "Certify.v").read_text(encoding="utf-8").split())
    for definition in (
        "Definition int_of_Z (z : Z) : int := (Z.to_nat z)%:Z - (Z.to_nat (Z.opp z))%:Z.",
        "Definition Q2R (x : Q) : R := (int_of_Z (Qnum x))%:~R / (Pos.to_nat (Qden x))%:R.",
        "Definition row (R : numFieldType) (n : nat) (l : seq Q) (x : 'I_n) : R := Q2R R (nth q0 l x).",
        "Definition q0 : Q := Qmake Z0 xH.",
    ):
        assert text.count(definition) == 1, definition
    assert "Section Q2R. Variable R : numFieldType." in text
    assert not re.search(r"\b(Admitted|admit|Axiom|Parameter|Conjecture)\b", re.sub(r"\(\*.*?\*\)", "", text))
    assert re.findall(r"^Print Assumptions (\w+)\.$", (COQ_DIR / "AssumptionsCertify.v").read_text(), re.M) == [
        "verifier_on_rows",
        "alpha_on_rows",
        "TV_on_rows",
        "distribution_on_rows",
        "alpha_rows",
        "TV_rows",
        "residual_mass_rows",
        "rejection_rows",
    ]
