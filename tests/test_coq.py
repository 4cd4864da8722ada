"""The Coq proofs (proofs/coq): they compile, every main theorem is closed under the global
context, a broken proof is caught, and the Python side names the theorems as the sources state
them. Compiling needs coqc and MathComp; without them those tests skip, unless
SPECPROOF_REQUIRE_COQ=1 (set by .ci/run), which makes them fail instead."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from specproof.certify import symbolic_proof as sproof
from specproof.certify.symbolic_proof import (
    COQ_DIR,
    COQ_FILES,
    COQ_SPEC_FILE,
    COQ_THEOREMS,
    FLOCQ_FILES,
    check_coq,
    coq_spec,
)
from specproof.errors import SpecProofError

CLOSED = "Closed under the global context"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _require_coq() -> None:
    if shutil.which("coqc") is None:
        if os.environ.get("SPECPROOF_REQUIRE_COQ") == "1":
            pytest.fail("SPECPROOF_REQUIRE_COQ=1 but coqc is not on PATH")
        pytest.skip("coqc is not on PATH")


def _checked(**kwargs) -> dict:
    result = check_coq(**kwargs)
    if not result["run"]:
        if os.environ.get("SPECPROOF_REQUIRE_COQ") == "1":
            pytest.fail(f"SPECPROOF_REQUIRE_COQ=1 but the Coq check did not run: {result['summary']}")
        pytest.skip(result["summary"])
    return result


# ---------------------------------------------------------------- without Coq


@pytest.mark.parametrize("theorem", COQ_THEOREMS, ids=[t["name"] for t in COQ_THEOREMS])
def test_recorded_statements_are_the_sources(theorem):
    source = _flat((COQ_DIR / theorem["file"]).read_text(encoding="utf-8"))
    assert _flat(theorem["statement"]) + " Proof." in source, theorem["name"]


def test_assumptions_files_list_every_main_theorem():
    # make check reads these two files; check_coq reads COQ_THEOREMS: the same theorems
    text = "".join((COQ_DIR / f).read_text(encoding="utf-8") for f in ("Assumptions.v", "AssumptionsFlocq.v"))
    assert re.findall(r"^Print Assumptions (\w+)\.$", text, re.M) == [t["name"] for t in COQ_THEOREMS]
    flocq = (COQ_DIR / "AssumptionsFlocq.v").read_text(encoding="utf-8")
    assert re.findall(r"^Print Assumptions (\w+)\.$", flocq, re.M) == [
        t["name"] for t in COQ_THEOREMS if t["file"] in FLOCQ_FILES
    ]


def test_the_allowed_axioms_are_the_standard_reals_and_classical_logic():
    allowed = (COQ_DIR / "FloatGrid.axioms").read_text(encoding="utf-8").split()
    assert allowed == [
        "ClassicalDedekindReals.sig_not_dec",
        "ClassicalDedekindReals.sig_forall_dec",
        "FunctionalExtensionality.functional_extensionality_dep",
        "Classical_Prop.classic",
    ]


def test_sources_declare_no_axiom_and_admit_nothing():
    # a cheap guard beside Print Assumptions (which is the real check)
    for name in COQ_FILES:
        text = (COQ_DIR / name).read_text(encoding="utf-8")
        assert not re.search(
            r"\b(Admitted|admit|Axiom|Axioms|Parameter|Conjecture|Hypothesis\s+\w+\s*:\s*False)\b",
            re.sub(r"\(\*.*?\*\)", "", text, flags=re.S),
        ), name


def test_the_pinned_specification_is_the_sources():
    # a definition changed without proofs/coq/spec.json fails here: run python proofs/coq/pin_spec.py and
    # commit both, so that the change of the model shows in spec.json's diff
    pinned = json.loads((COQ_DIR / COQ_SPEC_FILE).read_text(encoding="utf-8"))
    assert pinned == coq_spec()


def test_the_pin_covers_the_model():
    spec = coq_spec()
    names = [d["name"] for d in spec["definitions"] if d["kind"] in ("Definition", "Fixpoint")]
    for name in (
        "is_distribution",
        "bind",
        "coin",
        "accept_prob",
        "residual",
        "resample",
        "verifier",
        "alpha",
        "TV",
        "verifier_with",
        "kernel_acceptance",
        "verifier_kernel",
        "emit",
        "target_law",
        "draft",
        "verify",
        "speculative_law",
        "grid_coin",
        "float32_coin",
        "float32_verifier",
        "binary32",
        "grid_float",
        "block_residual",
        "block_resample",
        "block_h",
        "block_draft",
        "block_law",
        "fl_below_le",
        "binary64",
    ):
        assert names.count(name) == 1, name
    # the MathComp model is Spec.v's alone: the proof files define nothing
    assert {d["file"] for d in spec["definitions"] if d["kind"] in ("Definition", "Fixpoint")} <= {
        "Spec.v",
        *FLOCQ_FILES,
    }
    assert spec["files"] == list(COQ_FILES) and len(spec["sha256"]) == 64


@pytest.mark.parametrize(
    "old, new, changed",
    [
        (
            "Definition accept_prob p q x : R := Num.min 1 (p x / q x).",
            "Definition accept_prob p q x : R := Num.min 1 (q x / p x).",
            ["accept_prob"],
        ),  # swapped ratio
        (
            "if residual_mass p q == 0 then fallback y else residual p q y / residual_mass p q.",
            "if residual_mass p q == 0 then fallback y else residual p q y.",
            ["resample"],
        ),  # unnormalized residual
        (
            "Variable R : numFieldType.\nVariable T : finType.\nImplicit Types (p q fallback acc",
            "Variable R : numFieldType.\nVariable T : finType.\n\nImplicit Types (p q fallback acc",
            [],
        ),  # layout only
    ],
)
def test_a_changed_definition_no_longer_matches_the_pin(tmp_path, old, new, changed):
    for name in COQ_FILES:
        shutil.copyfile(COQ_DIR / name, tmp_path / name)
    text = (tmp_path / "Spec.v").read_text(encoding="utf-8")
    assert text.count(old) == 1
    (tmp_path / "Spec.v").write_text(text.replace(old, new), encoding="utf-8")
    pinned = json.loads((COQ_DIR / COQ_SPEC_FILE).read_text(encoding="utf-8"))["definitions"]
    edited = coq_spec(tmp_path)
    assert [e["name"] for e, d in zip(edited["definitions"], pinned, strict=True) if e != d] == changed
    assert (edited == coq_spec()) == (not changed)


def test_coq_spec_without_sources(tmp_path):
    with pytest.raises(SpecProofError, match="Spec.v not found"):
        coq_spec(tmp_path)


def test_not_run_without_coqc():
    result = check_coq(coqc="/nonexistent/coqc")
    assert result["run"] is False and result["passed"] is None
    assert result["summary"].startswith("formal check (Coq) not run:")


def test_not_run_without_sources(tmp_path):
    _require_coq()
    result = check_coq(source_dir=tmp_path)
    assert result["run"] is False and result["passed"] is None
    assert "not found" in result["summary"]


def test_prove_says_the_formal_check_was_not_run_without_coq(tmp_path, monkeypatch, capsys):
    from specproof import cli, theorems

    monkeypatch.setenv("PATH", str(tmp_path))  # no coqc on PATH
    monkeypatch.setattr(theorems, "THEOREMS", {"symbolic_every_v": theorems.THEOREMS["symbolic_every_v"]})
    monkeypatch.setattr(
        cli.prove, "_library_findings", lambda *inputs: {"library": "transformers", "skipped": "not traced here"}
    )
    assert cli.main(["prove", "--out", str(tmp_path / "out"), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert "1 of 1 theorems proved" in out
    assert "lossless for every V (SymPy): formal check (Coq) not run: coqc not found on PATH" in out


def test_the_symbolic_record_names_the_coq_theorems_and_the_proved_lemma():
    doc = sproof.prove_every_v()
    assert doc["formal_proof"] == sproof.formal_proof()
    assert [t["name"] for t in doc["formal_proof"]["theorems"]] == [t["name"] for t in COQ_THEOREMS]
    assert any("proved in Coq (lemma sum_nonneg_eq0" in a for a in doc["assumptions"])
    committed = (Path(__file__).resolve().parents[1] / "proofs" / "transcripts" / "symbolic_every_v.md").read_text(
        encoding="utf-8"
    )
    assert "proved in Coq (lemma sum\\_nonneg\\_eq0" in committed
    for t in COQ_THEOREMS:
        assert f"`{t['statement']}`" in committed


# ---------------------------------------------------------------- with Coq


@pytest.fixture(scope="module")
def coq_result() -> dict:
    """The Coq check of the committed sources: compiled once for this module."""
    _require_coq()
    return _checked()


@pytest.mark.slow  # make of every file: 35 s on two quiet cores, a quarter of the default run's budget (CI runs it)
def test_coq_proofs_compile_and_every_main_theorem_is_closed(coq_result):
    result = coq_result
    assert result["passed"] is True, result["summary"]
    if result["skipped"] and os.environ.get("SPECPROOF_REQUIRE_COQ") == "1":
        pytest.fail(f"SPECPROOF_REQUIRE_COQ=1 but Flocq is missing: {result['summary']}")
    closed = {t["name"]: CLOSED for t in COQ_THEOREMS if t["file"] not in FLOCQ_FILES}
    assert {k: v for k, v in result["assumptions"].items() if k in closed} == closed
    allowed = set((COQ_DIR / "FloatGrid.axioms").read_text(encoding="utf-8").split())
    flocq = [t["name"] for t in COQ_THEOREMS if t["file"] in FLOCQ_FILES]
    assert "fl32_ratio_coin_bound" in flocq and "fl32_verifier_TV" in flocq
    for name in flocq:
        if name not in result["skipped"]:
            assert set(sproof._axioms(result["assumptions"][name])) <= allowed


def _broken_copy(tmp_path: Path, old: str, new: str, file: str = "OnePosition.v") -> Path:
    for name in (*COQ_FILES, "FloatGrid.axioms"):
        shutil.copyfile(COQ_DIR / name, tmp_path / name)
    target = tmp_path / file
    text = target.read_text(encoding="utf-8")
    assert text.count(old) == 1
    target.write_text(text.replace(old, new), encoding="utf-8")
    return tmp_path


@pytest.mark.slow  # compiles a copy of every file
def test_a_broken_proof_fails_the_check(tmp_path):
    _require_coq()
    # the last step of verifier_lossless, dropped: coqc rejects the file
    src = _broken_copy(tmp_path, "- by rewrite mulrC divfK // min_plus_residual.\n", "- by rewrite mulrC.\n")
    result = _checked(source_dir=src)
    assert result["passed"] is False
    assert "coqc rejected OnePosition.v" in result["summary"]


@pytest.mark.slow  # compiles a copy of every file
def test_an_admitted_proof_fails_the_check(tmp_path):
    _require_coq()
    # the same step replaced by admit / Admitted: the file compiles, Print Assumptions is not closed
    src = _broken_copy(tmp_path, "- by rewrite mulrC divfK // min_plus_residual.\nQed.", "- admit.\nAdmitted.")
    result = _checked(source_dir=src)
    assert result["passed"] is False
    assert "not closed under the global context" in result["summary"]
    assert result["assumptions"]["verifier_lossless"] != CLOSED
    assert "verifier_lossless" in result["assumptions"]["speculative_lossless"]  # the chain uses it
    assert result["assumptions"]["alpha_eq_1_minus_TV"] == CLOSED


@pytest.mark.slow  # compiles a copy of every file
def test_a_flocq_theorem_with_an_unlisted_axiom_fails_the_check(tmp_path):
    _require_coq()
    proof = (
        "intros fu fr. rewrite Bcompare_correct by assumption.\nsplit.\n"
        "- intros H. injection H as H. now apply Rcompare_Lt_inv.\n- intros H. now rewrite Rcompare_Lt.\nQed."
    )
    src = _broken_copy(tmp_path, proof, "Admitted.", file="FloatGrid.v")
    result = _checked(source_dir=src)
    if "float32_lt_is_real_lt" in result["skipped"]:
        pytest.skip("Flocq is not installed")
    assert result["passed"] is False
    assert "float32_lt_is_real_lt: float32_lt_is_real_lt" in result["summary"]  # its own Admitted, an axiom
