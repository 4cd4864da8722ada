"""Tests for specproof.certify.symbolic_proof: the SymPy proof of losslessness for every V."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import sympy as sp

from specproof.certify import symbolic_proof as sproof
from specproof.certify.symbolic_proof import check_identity, check_sum_identity, prove_every_v

EXPECTED_IDS = [
    "per-token-lemma",
    "accept-mass-positive",
    "accept-mass-zero",
    "abs-split",
    "sum-linearity",
    "summand-p",
    "summand-q",
    "normalizer-p",
    "normalizer-q",
    "tv",
    "emitted-positive-residual",
    "residual-nonnegative",
    "emitted-zero-residual",
    "conclusion",
]

a, b, p, q = sp.symbols("a b p q", real=True)
P, Q, i, V = sproof._P, sproof._Q, sproof._I, sproof._V


@pytest.fixture(scope="module")
def doc():
    return prove_every_v()


def test_proved_with_every_step_verified(doc):
    assert doc["proved"] is True
    assert [s["id"] for s in doc["steps"]] == EXPECTED_IDS
    assert all(s["verified"] is True for s in doc["steps"])
    assert doc["schema"] == "specproof.symbolic-proof/1"
    assert doc["name"] == "lossless-every-v"
    assert doc["sympy_version"] == sp.__version__


def test_step_fields_and_uses_point_backwards(doc):
    seen = set()
    for step in doc["steps"]:
        assert set(step) == {"id", "claim", "method", "uses", "check", "result", "verified"}
        assert set(step["uses"]) <= seen, step["id"]
        seen.add(step["id"])
    by_id = {s["id"]: s for s in doc["steps"]}
    assert set(by_id["tv"]["uses"]) == {"abs-split", "normalizer-p", "normalizer-q"}
    assert (
        "linearity of the finite sum plus the per-token lemma (per-token-lemma) applied to the summand"
        in (by_id["normalizer-p"]["method"])
    )
    assert by_id["per-token-lemma"]["check"] == "-a + Max(0, a - b) + Min(a, b)"
    assert by_id["per-token-lemma"]["result"] == "a >= b: 0; a < b: 0"
    assert by_id["residual-nonnegative"]["result"] == "a >= b: True; a < b: True"
    assert by_id["normalizer-p"]["result"] == "0"
    assert "Sum(" in by_id["normalizer-p"]["check"] and "(i, 1, V)" in by_id["tv"]["check"]


def _json_types_only(x):
    if isinstance(x, dict):
        return all(isinstance(k, str) and _json_types_only(v) for k, v in x.items())
    if isinstance(x, list):
        return all(_json_types_only(v) for v in x)
    return isinstance(x, (str, bool, int))


def test_json_ready(doc):
    assert _json_types_only(doc)
    assert json.loads(json.dumps(doc, sort_keys=True)) == doc


@pytest.mark.slow  # a second whole proof in this process; with the hash-seed run below, CI's determinism guard
def test_deterministic(doc):
    again = prove_every_v()
    assert again == doc
    assert json.dumps(again, sort_keys=True) == json.dumps(doc, sort_keys=True)


@pytest.mark.slow  # two interpreters, each proving every step again
def test_deterministic_across_hash_seeds():
    code = (
        "import json; from specproof.certify.symbolic_proof import prove_every_v; "
        "print(json.dumps(prove_every_v(), sort_keys=True))"
    )
    outs = []
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120
        )
        outs.append(run.stdout)
    assert outs[0] == outs[1]


# --------------------------------------------------------------- the checker rejects false lemmas


def test_false_per_token_lemma_is_not_verified():
    result, ok = check_identity(sp.Min(a, b) + sp.Max(a - b, 0) - b, sproof._split(a, b))
    assert ok is False
    assert result != "a >= b: 0; a < b: 0"


@pytest.mark.parametrize(
    "expr, cases",
    [
        (q * sp.Min(1, p / q) - p, sproof._split(p, q, y_pos=True)),  # accept mass is not p
        (sp.Abs(a - b) - sp.Max(a - b, 0), sproof._split(a, b, nonneg=False)),  # half of (d)
        (sp.Max(a - b, 0) - sp.Max(b - a, 0), sproof._split(a, b)),
        (sp.GreaterThan(sp.Max(a - b, 0), 1, evaluate=False), sproof._split(a, b)),
        (sp.Min(a, b) - a, ()),  # true only when a <= b: no case split given
    ],
)
def test_false_identities_are_not_verified(expr, cases):
    assert check_identity(expr, cases)[1] is False


def test_one_failing_case_is_enough_to_reject():
    # Min(a, b) = b holds when a >= b but not when a < b.
    result, ok = check_identity(sp.Min(a, b) - b, sproof._split(a, b))
    assert ok is False and result.startswith("a >= b: 0; a < b: ")


def test_false_sum_identities_are_not_verified():
    s = sproof._sum
    alpha = s(sp.Min(P[i], Q[i]))
    # normalizer with the wrong residual, or with the wrong normalization hypothesis
    assert check_sum_identity(s(sp.Max(P[i] - Q[i], 0)) - (1 - s(sp.Max(Q[i] - P[i], 0))), {s(P[i]): 1})[1] is False
    assert check_sum_identity(s(sp.Max(P[i] - Q[i], 0)) - (1 - alpha), {s(Q[i]): 1})[1] is False
    assert check_sum_identity(s(sp.Max(P[i] - Q[i], 0)) - (2 - alpha), {s(P[i]): 1})[1] is False
    # the true one passes through the same machinery
    assert check_sum_identity(s(sp.Max(P[i] - Q[i], 0)) - (1 - alpha), {s(P[i]): 1}) == ("0", True)


def test_failures_do_not_raise_and_unprove(monkeypatch):
    def broken(expr):
        raise RuntimeError("SymPy gave up")

    monkeypatch.setattr(sproof, "_reduce", broken)
    result, ok = check_identity(sp.Min(a, b) + sp.Max(a - b, 0) - a, sproof._split(a, b))
    assert ok is False and "error:RuntimeError" in result
    doc = prove_every_v()
    assert doc["proved"] is False
    by_id = {s["id"]: s for s in doc["steps"]}
    assert by_id["per-token-lemma"]["verified"] is False
    assert by_id["conclusion"]["verified"] is False
    assert doc["conclusion"].startswith("Not proved")
    assert _json_types_only(doc)
