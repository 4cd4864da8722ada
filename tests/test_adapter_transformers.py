"""specproof.trace.adapters.transformers and ``specproof trace transformers``: the installed transformers'
``_speculative_sampling`` traced on edge inputs.

Exact values are asserted only where the float softmax is exact on every CPU (equal logits and
-inf: exp(0) = 1, exp(-inf) = 0, then IEEE division), so no test depends on the CPU's exp.
"""

from __future__ import annotations

import json
from fractions import Fraction as F

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from specproof.cli import main  # noqa: E402
from specproof.errors import InvalidDistribution, SpecProofError  # noqa: E402
from specproof.rules.audit import block_law as rule_block_law  # noqa: E402
from specproof.rules.policy import named_rule  # noqa: E402
from specproof.trace.adapters.transformers import (  # noqa: E402
    edge_cases,
    read_logits,
    speculative_sampling_law,  # noqa: E402
)
from specproof.trace.tracer import rows_stream_tv  # noqa: E402

NEG = float("-inf")


def test_dyadic_rows_match_the_le_float32_rule_exactly():
    # p = (1/2, 1/2, 0, 0), q uniform: ratios 2, 2, 0, 0 (all on the grid); transformers accepts
    # r <= p/q with a float32 coin, so a drafted token with p = 0 passes when r == 0
    got = speculative_sampling_law([[0, 0, NEG, NEG]] * 3, [[0.0] * 4] * 2)
    want = rule_block_law([F(1, 2), F(1, 2), 0, 0], [F(1, 4)] * 4, 2, named_rule("le-float32-coin"))
    assert got.law == want.emitted
    assert got.tv == want.stream_tv == F(3, 2**26)
    assert not got.lossless
    assert got.accepted_length_law == want.accepted_length_law


def _support_rows(rows):
    """Logits rows that are 0 on the given supports and -inf elsewhere (softmax exact: 1/|support|)."""
    return [[0.0 if i in row else NEG for i in range(4)] for row in rows]


@pytest.mark.parametrize(
    "target,draft",
    [
        ([{0, 1}, {0, 1, 2, 3}, {2}], [{0, 2}, {1, 2}]),
        # two more supports in CI's slow run (each a block of V^3 outcomes traced in full)
        pytest.param([{3}, {0, 1}, {0, 1, 2, 3}], [{0, 1, 2, 3}, {0, 1, 2, 3}], marks=pytest.mark.slow),
        pytest.param([{0, 1, 2, 3}, {1}, {0, 1}], [{1}, {2, 3}], marks=pytest.mark.slow),
    ],
)
def test_more_dyadic_rows_match_the_rule(target, draft):
    def exact(rows):
        return [[F(int(i in r), len(r)) for i in range(4)] for r in rows]

    got = speculative_sampling_law(_support_rows(target), _support_rows(draft))
    assert speculative_sampling_law(_support_rows(target), _support_rows(draft), check_pieces=False).law == got.law
    t, d = exact(target), exact(draft)
    want = rule_block_law(lambda s: t[len(s)], lambda s: d[min(len(s), 1)], 2, named_rule("le-float32-coin"))
    assert got.law == want.emitted and got.tv == want.stream_tv


def test_edge_cases_with_exact_softmax():
    cases = edge_cases()
    same = speculative_sampling_law(*cases["p == q (uniform rows)"][:2])
    assert same.lossless and same.tv == 0
    assert same.law[(0, 1, 2)] == F(1, 64) and len(same.law) == 64
    never = speculative_sampling_law(*cases["target never wants a drafted token (-inf)"][:2])
    # token 3 (p = 0, q = 1/4) is accepted when the coin is 0, at each of the two positions
    assert never.tv == F(7, 2**28)
    disjoint = speculative_sampling_law(*cases["disjoint supports"][:2])
    assert disjoint.tv == F(1, 2**24)
    assert disjoint.accepted_length_law[0] == 1 - F(1, 2**24)


def test_off_grid_ratios_and_the_ensemble_option():
    t, d, _ = edge_cases()["ratios not multiples of 2^-24"]
    plain = speculative_sampling_law(t, d)
    assert 0 < plain.tv < F(1, 10**6) and not plain.lossless
    assert sum(plain.law.values()) == 1
    ens = speculative_sampling_law(t[:2], d[:1], ensemble_weight=0.5)  # gamma = 1 keeps the test fast
    assert ens.tv > F(1, 10)  # the static ensemble is lossy by design
    assert speculative_sampling_law(t[:2], t[:1]).lossless  # p == q on the same generic rows


def test_gamma_one_and_float64():
    got = speculative_sampling_law([[0.0, 0.0], [0.0, NEG]], [[0.0, NEG]])
    # the draft is always 0 (p = 1/2, q = 1): accepted iff r <= 1/2, else the residual gives 1
    assert got.law == {(0, 0): F(2**23 + 1, 2**24), (1,): F(2**23 - 1, 2**24)}
    assert got.tv == F(1, 2**24)
    assert speculative_sampling_law([[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0]], dtype="float64").lossless


def test_bad_inputs_are_refused():
    with pytest.raises(InvalidDistribution, match="gamma \\+ 1"):
        speculative_sampling_law([[0.0, 0.0]] * 2, [[0.0, 0.0]] * 2)
    with pytest.raises(InvalidDistribution, match="-inf everywhere"):
        speculative_sampling_law([[NEG, NEG], [0.0, 0.0]], [[0.0, 0.0]])
    with pytest.raises(InvalidDistribution, match="NaN"):
        speculative_sampling_law([[float("nan"), 0.0], [0.0, 0.0]], [[0.0, 0.0]])
    with pytest.raises(SpecProofError, match="ensemble weight"):
        speculative_sampling_law([[0.0, 0.0]] * 2, [[0.0, 0.0]], ensemble_weight=1.5)


def test_stream_tv_counts_continuations():
    half = (F(1, 2), F(1, 2))
    assert rows_stream_tv({(0,): F(1, 2), (1,): F(1, 2)}, [half, half]) == 0
    assert rows_stream_tv({(0, 0): F(1)}, [half, half]) == F(3, 4)
    with pytest.raises(InvalidDistribution):
        rows_stream_tv({(0, 0, 0): F(1)}, [half, half])


def test_read_logits(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('[[0, "-inf"], [-Infinity, 1.5]]')
    arr = read_logits(path)
    assert arr.shape == (2, 2) and arr[0, 1] == NEG and arr[1, 0] == NEG
    for text, msg in [
        ('[[0, "x"]]', "not -inf"),
        ("[[0], [0, 1]]", "different lengths"),
        ("[1, 2]", "list of rows"),
        ("{", "not valid JSON"),
    ]:
        path.write_text(text)
        with pytest.raises(InvalidDistribution, match=msg):
            read_logits(path)


def _write(tmp_path, name, rows):
    path = tmp_path / name
    if name.endswith(".npy"):
        np.save(path, np.array(rows, dtype=np.float32))
    else:
        path.write_text(json.dumps(rows).replace("-Infinity", '"-inf"'))
    return str(path)


def test_cli_json_verdicts_and_exit_codes(tmp_path, capsys):
    t = _write(tmp_path, "t.json", [[0, 0, NEG, NEG]] * 3)
    d = _write(tmp_path, "d.npy", [[0.0] * 4] * 2)
    assert main(["trace", "transformers", "--target-logits", t, "--draft-logits", d, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"] == "lossy" and out["tv"] == "3/67108864"
    assert out["law"]["0 1 0"] == "1/32" and out["versions"]["transformers"]
    same_t = _write(tmp_path, "s.npy", [[0.0] * 4] * 3)
    assert main(["trace", "transformers", "--target-logits", same_t, "--draft-logits", d, "--gamma", "2"]) == 0
    text = capsys.readouterr().out
    assert "LOSSLESS" in text and "transformers" in text and "TV" in text
    assert main(["trace", "transformers", "--target-logits", t, "--draft-logits", d, "--gamma", "3"]) == 2
    assert (
        main(
            ["trace", "transformers", "--target-logits", str(tmp_path / "missing.json"), "--draft-logits", d, "--json"]
        )
        == 2
    )
    assert "error" in json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["trace", "transformers", "--draft-logits", d]) == 2
    assert main(["trace", "transformers", "--target-logits", t, "--draft-logits", d, "--ensemble-weight", "2"]) == 2


def test_verdicts_separate_the_float_floor_from_faults(tmp_path, capsys):
    # the float rounding of p/q alone is the float floor: float-faithful, equal to the `<=` member exactly;
    # a drafted token the target never wants, accepted on a zero coin, is a fault: lossy
    cases = edge_cases()
    generic = speculative_sampling_law(*cases["ratios not multiples of 2^-24"][:2])
    assert generic.verdict == "float-faithful" and generic.tv > 0
    assert generic.judgement.tv_from_float_ideal == 0 and generic.judgement.arithmetic.startswith("u <= fl32(p/q)")
    assert generic.as_dict()["tv_from_float_ideal"] == "0/1"
    never = speculative_sampling_law(*cases["target never wants a drafted token (-inf)"][:2])
    assert never.verdict == "lossy" and never.judgement.outside_support > 0
    assert never.tv == never.judgement.tv  # the judge's stream TV is the adapter's


@pytest.mark.slow  # the same four traces again from the command line; CI's slow run
def test_the_command_line_separates_the_float_floor_from_faults(tmp_path, capsys):
    cases = edge_cases()
    t = _write(tmp_path, "t.json", cases["ratios not multiples of 2^-24"][0])
    d = _write(tmp_path, "d.json", cases["ratios not multiples of 2^-24"][1])
    assert main(["trace", "transformers", "--target-logits", t, "--draft-logits", d]) == 0
    text = capsys.readouterr().out
    assert "FLOAT-FAITHFUL" in text and "the TV is its float floor" in text
    assert main(["trace", "transformers", "--target-logits", t, "--draft-logits", d, "--strict"]) == 1
    never_t = _write(tmp_path, "n.json", cases["target never wants a drafted token (-inf)"][0])
    never_d = _write(tmp_path, "nd.json", cases["target never wants a drafted token (-inf)"][1])
    assert main(["trace", "transformers", "--target-logits", never_t, "--draft-logits", never_d]) == 1
    assert "exactly, but that arithmetic emits tokens the target gives probability 0" in capsys.readouterr().out
