"""Block certificates (``specproof.block-certificate/1``): block verification (Sun et al. 2024,
Algorithm 2) as an outcome tree over whole blocks, re-verified by the trusted checker (issue 13)."""

import copy
import json
import math
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof import checker
from specproof.certify.blocks import block_verification_certificate
from specproof.certify.certificate import dumps
from specproof.laws.variants import block_verification_law

R = checker.Reason
PAPER = (["1/3", "2/3"], ["2/3", "1/3"])  # Sun et al.'s binary example


def _check(doc):
    verdict = checker.check(json.loads(dumps(doc)))
    assert verdict.valid == checker.check(dumps(doc)).valid
    return verdict


def _law(doc):
    return {tuple(b): F(m) for b, m in doc["law"]}


@pytest.mark.parametrize(
    "gamma,lengths", [(1, ["1/3", "2/3"]), (2, ["1/3", "1/9", "5/9"]), (3, ["1/3", "1/9", "1/9", "4/9"])]
)
def test_the_paper_example_is_certified(gamma, lengths):
    doc = block_verification_certificate(*PAPER, gamma)
    verdict = _check(doc)
    assert verdict.valid, verdict
    facts = verdict.facts[0]
    law = block_verification_law(*PAPER, gamma)
    assert [F(x) for x in lengths] == list(law.accepted_length_law)  # the closed form agrees with the tree
    assert [F(x.num, x.den) for x in facts["accepted_length"]] == [F(x) for x in lengths]
    assert {b: F(m.num, m.den) for b, m in facts["law"].items()} == law.emitted == _law(doc)
    assert F(facts["expected_emitted"].num, facts["expected_emitted"].den) == law.expected_emitted
    assert facts["stream_tv"] == 0 and facts["claims"] == {"lossless": True}
    if gamma == 2:  # the paper: 11/9 accepted tokens by block verification
        assert law.expected_accepted == F(11, 9)


def test_hand_law_at_gamma_one():
    # V = 2, gamma = 1, p = (1/3, 2/3), q = (2/3, 1/3): X = 0 w.p. 2/3 is kept w.p. h_1 = 1/2, X = 1
    # always; tau = 0 draws from the residual (p - q)+ = (0, 1/3), i.e. token 1.
    doc = block_verification_certificate(*PAPER, 1)
    assert _law(doc) == {(0, 0): F(1, 9), (0, 1): F(2, 9), (1,): F(1, 3), (1, 0): F(1, 9), (1, 1): F(2, 9)}


def _models(data, v, gamma):
    """Prefix-dependent rational rows (some entries 0) drawn by hypothesis."""
    table = {}

    def row():
        weights = data.draw(st.lists(st.integers(0, 4), min_size=v, max_size=v).filter(any))
        return tuple(F(w, sum(weights)) for w in weights)

    def model(tag):
        def at(prefix):
            key = (tag, tuple(prefix))
            if key not in table:
                table[key] = row()
            return table[key]

        return at

    return model("p"), model("q")


@settings(max_examples=25, deadline=None)
@given(st.data(), st.integers(2, 3), st.integers(1, 3))
def test_random_models_are_lossless_and_agree_with_the_closed_form(data, v, gamma):
    target, draft = _models(data, v, gamma)
    doc = block_verification_certificate(target, draft, gamma)
    verdict = _check(doc)
    assert verdict.valid, verdict
    law = block_verification_law(target, draft, gamma)
    assert _law(doc) == law.emitted and law.stream_tv == 0
    assert [F(x) for x in doc["totals"]["accepted_length"]] == list(law.accepted_length_law)
    assert verdict.facts[0]["claims"] == {"lossless": True}


@pytest.mark.parametrize(
    "p,q",
    [
        (["1/2", "1/2"], ["1/2", "1/2"]),  # p == q: every residual empty, h = 0/0
        (["1/2", "1/2", "0"], ["0", "1/2", "1/2"]),  # q(x) = 0 and p(x) = 0
        (["1", "0"], ["0", "1"]),
    ],
)  # disjoint: nothing is ever accepted
def test_edge_rows(p, q):
    doc = block_verification_certificate(p, q, 2)
    verdict = _check(doc)
    assert verdict.valid and verdict.facts[0]["claims"] == {"lossless": True}
    assert _law(doc) == block_verification_law(p, q, 2).emitted
    if p == q:
        assert doc["totals"]["accepted_length"] == ["0/1", "0/1", "1/1"]
    if p == ["1", "0"]:
        assert _law(doc) == {(0,): F(1)}


def _hand(tokens, extra_rows=None, gamma=1):
    """A hand-made block certificate at V = 2: one certain leaf emitting ``tokens``."""
    rows = {"p[]": {"recipe": ["input", "p", []], "values": ["1/2", "1/2"]}, **(extra_rows or {})}
    return {
        "schema": checker.BLOCK_SCHEMA,
        "vocab_size": 2,
        "gamma": gamma,
        "rows": rows,
        "nodes": [
            {
                "label": "certain",
                "reach": "1/1",
                "branches": [
                    {
                        "event": {"choice": {"condition": ["always"]}},
                        "probability": "1/1",
                        "child": {"leaf": [tokens, len(tokens) - 1]},
                    }
                ],
            }
        ],
        "law": [[tokens, "1/1"]],
        "totals": {
            "accepted_length": ["1/1"] + ["0/1"] * gamma,
            "expected_emitted": f"{len(tokens)}/1",
            "stream_tv": "1/2",
        },
        "claims": {"lossless": False},
    }


def test_a_lossy_block_by_hand():
    # always emit (0,): the stream is 0 then p[0]; the target's joint puts 1/2 on each first token.
    # TV = (1/2)(sum_a |1/2 p0(a) - p0(a)| + sum_a 1/2 p1(a)) = 1/2.
    rows = {
        "p[0]": {"recipe": ["input", "p", [0]], "values": ["1/4", "3/4"]},
        "p[1]": {"recipe": ["input", "p", [1]], "values": ["1/1", "0/1"]},
    }
    verdict = _check(_hand([0], rows))
    assert verdict.valid, verdict
    assert verdict.facts[0]["stream_tv"] == F(1, 2) and verdict.facts[0]["claims"] == {"lossless": False}
    # emitting (0, 1) where the target gives p[0] = (1/4, 3/4): TV = 1/2 (first token) ... by hand:
    # target (0,0) 1/8, (0,1) 3/8, (1,0) 1/2; stream (0,1) 1: |1/8| + |3/8 - 1| + |1/2| = 5/4, TV 5/8
    doc = _hand([0, 1], rows)
    doc["totals"]["stream_tv"], doc["totals"]["expected_emitted"] = "5/8", "2/1"
    doc["nodes"][0]["branches"][0]["child"]["leaf"][1] = 1
    doc["totals"]["accepted_length"] = ["0/1", "1/1"]
    verdict = _check(doc)
    assert verdict.valid, verdict
    assert verdict.facts[0]["stream_tv"] == F(5, 8)


def test_the_stream_needs_the_target_row_where_blocks_pass_and_it_differs():
    # always emit (0, 0) at gamma 1: the gap at (0,) is 1/2 - 0, and a block passes through (0,):
    # the target's row after (0,) is needed. Nothing passes through (1,): its gap 1/2 counts whole.
    doc = _hand([0, 0])
    doc["nodes"][0]["branches"][0]["child"]["leaf"][1] = 1
    doc["totals"].update(accepted_length=["0/1", "1/1"], expected_emitted="2/1")
    verdict = _check(doc)
    assert verdict.reason is R.MISSING_FIELD and "prefix [0]" in verdict.detail and "no target row p" in verdict.detail
    doc["rows"]["p[0]"] = {"recipe": ["input", "p", [0]], "values": ["1/4", "3/4"]}
    # target (0,0) 1/8, (0,1) 3/8, (1,.) 1/2; stream (0,0) 1: TV = (7/8 + 3/8 + 1/2) / 2 = 7/8
    doc["totals"]["stream_tv"] = "7/8"
    verdict = _check(doc)
    assert verdict.valid, verdict
    assert verdict.facts[0]["stream_tv"] == F(7, 8)


def _genuine():
    return block_verification_certificate(*PAPER, 2)


def _first(doc, kind):
    for node in doc["nodes"]:
        for branch in node["branches"]:
            if kind in branch["event"]:
                return branch
    raise AssertionError(kind)


TAMPER = [
    (lambda d: _first(d, "coin").__setitem__("probability", "1/3"), R.BRANCH),
    (lambda d: _first(d, "draw").__setitem__("probability", "1/2"), R.BRANCH),
    (lambda d: d["law"][0].__setitem__(1, "1/7"), R.EMITTED),
    (lambda d: d["law"].pop(), R.EMITTED),
    (lambda d: d["law"].reverse(), R.EMITTED),
    (lambda d: d["law"].append([[1, 1, 1], "0/1"]), R.EMITTED),
    (lambda d: d["totals"]["accepted_length"].__setitem__(0, "1/2"), R.TOTAL),
    (lambda d: d["totals"].__setitem__("expected_emitted", "2/1"), R.TOTAL),
    (lambda d: d["totals"].__setitem__("stream_tv", "1/1000000000"), R.TOTAL),
    (lambda d: d["claims"].__setitem__("lossless", False), R.CLAIM),
    (lambda d: d["rows"]["w[0]"]["recipe"].__setitem__(4, 1), R.BRANCH),  # p_1 from the wrong draft
    (lambda d: d["rows"]["p[]"]["values"].__setitem__(0, "1/2"), R.NOT_NORMALIZED),
    (lambda d: d["nodes"][1].__setitem__("reach", "1/2"), R.NODE_MASS),
    (lambda d: d.__setitem__("gamma", 3), R.MALFORMED),
    (lambda d: d.__setitem__("gamma", 0), R.MALFORMED),
    (lambda d: d.__setitem__("gamma", checker.MAX_BLOCK_GAMMA + 1), R.MALFORMED),
    (lambda d: d["rows"].__setitem__("again", copy.deepcopy(d["rows"]["p[]"])), R.MALFORMED),
    (lambda d: d["rows"]["p[]"]["recipe"].pop(), R.MALFORMED),  # ["input", "p"]: an outcome input, not a block's
    (lambda d: d["rows"]["q[0]"]["recipe"].__setitem__(2, [0, 0, 0]), R.MALFORMED),  # a prefix longer than gamma
    (lambda d: d["rows"]["q[0]"]["recipe"].__setitem__(2, [2]), R.TOKENS),
    (lambda d: d["rows"]["q[0]"]["recipe"].__setitem__(1, "proposal"), R.MALFORMED),
]


def _leaf_branch(doc):
    for node in doc["nodes"]:
        for branch in node["branches"]:
            if isinstance(branch["child"], dict):
                return branch
    raise AssertionError


LEAVES = [
    ([[0, 1, 0, 1], 3], R.TOKENS),
    ([[0], 2], R.TOKENS),
    ([[0, 1, 0, 1], 2], R.TOKENS),
    ([[], 0], R.TOKENS),
    ([[0, 1], 0], R.TOKENS),
    ([[0, 1], 3], R.TOKENS),
    ([[0, 2], 1], R.TOKENS),
    ([[0, True], 1], R.TOKENS),
    ([0, True], R.MALFORMED),
    ([[0], True], R.MALFORMED),
]


@pytest.mark.parametrize("edit,reason", TAMPER)
def test_tampering_is_rejected(edit, reason):
    doc = _genuine()
    assert _check(doc).valid
    edit(doc)
    verdict = _check(doc)
    assert not verdict.valid and verdict.reason is reason, verdict


@pytest.mark.parametrize("leaf,reason", LEAVES)
def test_malformed_leaves_are_rejected(leaf, reason):
    doc = _genuine()
    _leaf_branch(doc)["child"] = {"leaf": leaf}
    verdict = _check(doc)
    assert not verdict.valid and verdict.reason is reason, verdict


def test_recipe_times_capped_ratio_by_hand():
    # c * min(1, a[x]/b[x]) with c = (1/2, 1/2), a = (1/3, 2/3), b = (2/3, 1/3): x = 0 -> 1/2, x = 1 -> 1
    for x, want in ((0, [F(1, 4), F(1, 4)]), (1, [F(1, 2), F(1, 2)])):
        rows = {
            "p[]": {"recipe": ["input", "p", []], "values": ["1/2", "1/2"]},
            "a[]": {"recipe": ["input", "q", []], "values": ["2/3", "1/3"]},
            "a": {"recipe": ["input", "p", [0]], "values": ["1/3", "2/3"]},
            "p[1]": {"recipe": ["input", "p", [1]], "values": ["1/2", "1/2"]},
            "w": {"recipe": ["times-capped-ratio", "p[]", "a", "a[]", x]},
        }
        doc = _hand([0, 0], rows, gamma=1)
        doc["nodes"][0]["branches"] = [
            {"event": {"draw": {"row": "w", "token": 0}}, "probability": "1/2", "child": {"leaf": [[0, 0], 1]}},
            {"event": {"draw": {"row": "w", "token": 1}}, "probability": "1/2", "child": {"leaf": [[0, 1], 1]}},
        ]
        doc["law"] = [[[0, 0], "1/2"], [[0, 1], "1/2"]]
        # target (0,0) 1/6, (0,1) 1/3, (1,.) 1/2; stream (0,0) 1/2, (0,1) 1/2: TV = (1/3 + 1/6 + 1/2) / 2
        doc["totals"] = {"accepted_length": ["0/1", "1/1"], "expected_emitted": "2/1", "stream_tv": "1/2"}
        verdict = _check(doc)
        assert verdict.valid, verdict
        assert [F(r.num, r.den) for r in verdict.facts[0]["rows"]["w"]] == want
    doc["rows"]["a[]"]["values"] = ["1/1", "0/1"]  # b[x] = 0: division by zero
    verdict = _check(doc)
    assert verdict.reason is R.MALFORMED and "divides by a[][1] = 0" in verdict.detail


def test_masses_threshold_by_hand():
    # a coin u < sum(a)/sum(b) with a = (1/4, 0) (mass 1/4) and b = (1/2, 1/2) (mass 1): 1/4
    rows = {
        "p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]},
        "p[1]": {"recipe": ["input", "p", [1]], "values": ["1/2", "1/2"]},
        "a": {"recipe": ["given"], "values": ["1/4", "0/1"]},
    }
    doc = _hand([0], rows)
    bound = {"source": ["masses", "a", "p[]"], "strict": True}
    doc["nodes"][0]["branches"] = [
        {
            "event": {"coin": {"model": "continuous", "lower": None, "upper": bound}},
            "probability": "1/4",
            "child": {"leaf": [[0], 0]},
        },
        {
            "event": {"coin": {"model": "continuous", "lower": {**bound, "strict": False}, "upper": None}},
            "probability": "3/4",
            "child": {"leaf": [[1], 0]},
        },
    ]
    doc["law"] = [[[0], "1/4"], [[1], "3/4"]]
    doc["totals"]["stream_tv"] = "1/4"  # first token (1/4, 3/4) against (1/2, 1/2)
    verdict = _check(doc)
    assert verdict.valid, verdict
    assert verdict.facts[0]["given"] == ["a"]
    doc["nodes"][0]["branches"][0]["event"]["coin"]["upper"]["source"] = ["masses", "p[]", "a"]  # 4: P(u < 4) = 1
    doc["nodes"][0]["branches"][0]["probability"] = "1/1"
    verdict = _check(doc)
    assert verdict.reason is R.TOTAL and "sum to 7/4" in verdict.detail
    doc["rows"]["a"]["values"] = ["0/1", "0/1"]  # divides by a mass of 0
    verdict = _check(doc)
    assert verdict.reason is R.MALFORMED and "which is 0" in verdict.detail


def test_bundles_hold_block_certificates_of_one_kind():
    from specproof.certify.certificate import build_bundle, build_certificate

    blocks = [block_verification_certificate(*PAPER, g) for g in (1, 2)]
    verdict = _check(build_bundle(blocks, name="b", statement="s"))
    assert verdict.valid and len(verdict.facts) == 2
    mixed = build_bundle([blocks[0], build_certificate(*PAPER, name="x")], name="b", statement="s")
    assert _check(mixed).reason is R.SCHEMA


def test_transcript_shows_rederived_values_only():
    from specproof.report import transcript

    doc = _genuine()
    text = transcript.render(doc, _check(doc), json_name="b.json")
    assert "**Checked: VALID**. **The certified verifier: lossless" in text
    assert "| 0 | 1/3 |\n| 1 | 1/9 |\n| 2 | 5/9 |" in text  # accepted drafts (Sun et al.: 11/9 expected)
    assert (
        "| [0, 0, 0] | 1/27 |" in text
    )  # (4/9)(1/4)(1/3): X = 00, h_2 = p_2 = 1/4, bonus 0 and "sum(r[0]) / sum(c[0])" in text and "(2 accepted)" in text
    doc["totals"]["stream_tv"] = "1/2"
    bad = _check(doc)
    text = transcript.render(doc, bad, json_name="b.json")
    assert "REJECTED" in text and "| [0, 0, 0] |" not in text and "Accepted drafts" not in text


def test_transcript_of_a_lossy_block():
    from specproof.report import transcript

    rows = {
        "p[0]": {"recipe": ["input", "p", [0]], "values": ["1/4", "3/4"]},
        "p[1]": {"recipe": ["input", "p", [1]], "values": ["1/1", "0/1"]},
    }
    doc = _hand([0], rows)
    text = transcript.render(doc, _check(doc), json_name="b.json")
    assert "**The certified verifier: LOSSY, exact stream TV 1/2**" in text


@pytest.mark.parametrize(
    "edit,reason",
    [
        (lambda d: d.__setitem__("gamma", 10**9), R.MALFORMED),
        (lambda d: _leaf_branch(d).__setitem__("child", {"leaf": [[0] * 10**6, 10**6 - 1]}), R.TOKENS),
        (lambda d: d["rows"]["q[0]"]["recipe"].__setitem__(2, [0] * 10**6), R.MALFORMED),
        (lambda d: d["rows"].update({f"x{i}": {"recipe": ["copy", "p[]"]} for i in range(10**4)}), R.MALFORMED),
    ],
)
def test_hostile_sizes_are_rejected_before_any_work(edit, reason):
    doc = _genuine()
    edit(doc)
    verdict = checker.check(doc)
    assert not verdict.valid and verdict.reason is reason, verdict


TYPICAL = [
    (["1/2", "1/2"], ["1/2", "1/2"], 1, F(1, 2)),  # p(x) = 1/2 > 9/100 always: the law is q's, then argmax
    (["97/100", "3/100"], ["1/2", "1/2"], 3, None),
    (["1/3", "2/3"], ["2/3", "1/3"], 2, None),
    (["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"], 2, None),
]


@pytest.mark.parametrize("p,q,gamma,tv", TYPICAL)
def test_typical_acceptance_blocks_are_certified_lossy(p, q, gamma, tv):
    from specproof.certify.blocks import typical_block_certificate
    from specproof.laws.variants import typical_block_law

    doc = typical_block_certificate(p, q, gamma)
    verdict = _check(doc)
    assert verdict.valid, verdict
    law = typical_block_law(p, q, gamma)
    facts = verdict.facts[0]
    assert {b: F(m.num, m.den) for b, m in facts["law"].items()} == law.emitted
    assert [F(x.num, x.den) for x in facts["accepted_length"]] == list(law.accepted_length_law)
    assert facts["stream_tv"] == law.stream_tv > 0 and facts["claims"] == {"lossless": False}
    if tv is not None:
        assert facts["stream_tv"] == tv
    assert facts["given"] and all(name.startswith("typical-mask[") for name in facts["given"])


def test_block_tree_reads_only_p_and_q():
    from specproof.laws.outcome import Branch, Draw, InvalidTree, Leaf, Node, OutcomeTree, block_tree

    half = (F(1, 2), F(1, 2))
    tree = OutcomeTree(
        {"p": half, "proposal": half},
        Node(
            "d",
            (
                Branch(Draw("proposal", 0), F(1, 2), Leaf(0, False)),
                Branch(Draw("proposal", 1), F(1, 2), Leaf(1, False)),
            ),
        ),
        2,
        recipes={"p": ("input", "p"), "proposal": ("input", "proposal")},
    )
    with pytest.raises(InvalidTree, match="inputs p and q only"):
        block_tree(lambda prefix: tree, 1)


def _files(tmp_path):
    (tmp_path / "p.json").write_text('["1/6", "1/3", "1/2"]')
    (tmp_path / "q.json").write_text('["1/2", "1/4", "1/4"]')
    return ["--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json")]


@pytest.mark.parametrize(
    "extra,lossless",
    [
        (["--policy", "standard"], True),
        (["--policy", "le-float32-grid"], False),
        (["--verifier", "typical"], False),
        (["--verifier", "block"], True),
    ],
)
def test_audit_writes_block_certificates(tmp_path, capsys, extra, lossless):
    from specproof.cli import main

    cert = tmp_path / "b.json"
    code = main(["audit", *_files(tmp_path), *extra, "--gamma", "2", "--block-certificate", str(cert), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == (0 if lossless else 1) and out["block_certificate"] == str(cert)
    verdict = checker.check_file(cert)
    assert verdict.valid and verdict.facts[0]["schema"] == checker.BLOCK_SCHEMA
    facts = verdict.facts[0]
    assert facts["claims"] == {"lossless": lossless}
    assert facts["stream_tv"] == F(out["stream_tv"])  # the audit's enumeration, the checker's recursion
    assert [F(x.num, x.den) for x in facts["accepted_length"]] == [F(x) for x in out["accepted_length"]]
    if extra == ["--policy", "le-float32-grid"]:  # u <= p/q on the float32 grid
        assert facts["stream_tv"] == F(1, 37748736)
    assert main(["check", str(cert), *_files(tmp_path)]) == 0
    assert ("LOSSLESS" if lossless else "LOSSY (exact stream TV") in capsys.readouterr().out


@pytest.mark.parametrize(
    "extra,message",
    [
        ([], "needs --gamma"),
        (["--gamma", "2", "--stop-token", "0"], "stop tokens"),
        (["--gamma", "2", "--verifier", "multidraft"], "no block certificate"),
        (["--gamma", "2", "--policy", "greedy"], "processes the target"),
    ],
)
def test_audit_block_certificate_usage_errors(tmp_path, capsys, extra, message):
    from specproof.cli import main

    cert = tmp_path / "b.json"
    assert main(["audit", *_files(tmp_path), *extra, "--block-certificate", str(cert)]) == 2
    assert message in capsys.readouterr().err and not cert.exists()


@settings(max_examples=25, deadline=None)
@given(st.data(), st.integers(2, 3), st.integers(1, 3))
def test_stream_tv_by_live_prefixes_equals_the_enumeration(data, v, gamma):
    from specproof.laws.block import extend_by_target, stream_tv, target_joint

    def _dict_tv(a, b):
        return sum((abs(a.get(k, F(0)) - b.get(k, F(0))) for k in set(a) | set(b)), F(0)) / 2

    target, _ = _models(data, v, gamma)
    blocks = data.draw(
        st.lists(
            st.lists(st.integers(0, v - 1), min_size=1, max_size=gamma + 1).map(tuple),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    weights = data.draw(st.lists(st.integers(1, 5), min_size=len(blocks), max_size=len(blocks)))
    emitted = {b: F(w, sum(weights)) for b, w in zip(blocks, weights)}
    enumerated = _dict_tv(extend_by_target(emitted, target, gamma + 1), target_joint(target, gamma + 1))
    assert stream_tv(emitted, target, gamma) == enumerated
    # the trusted checker's walk over live prefixes, given the target's row after every prefix
    prefixes = [()]
    for _ in range(gamma):
        prefixes += [s + (t,) for s in prefixes if len(s) == len(prefixes[-1]) for t in range(v)]
    rows = {
        s: checker._named(checker.Row([x.numerator * (D // x.denominator) for x in target(s)], D))
        for s in set(prefixes)
        for D in [math.lcm(*(x.denominator for x in target(s)))]
    }
    law = {b: checker.Ratio(m.numerator, m.denominator) for b, m in emitted.items()}
    assert checker._stream_gap(law, rows, "law", set()) == enumerated


# ---------------------------------------------------------------- the third review's cases (tests/data/trust/block_*.py)


@pytest.mark.parametrize("ids", [[[0]], [{}], ["a"], [1.5], [True, 1], [None]])
def test_law_ids_are_token_ids_before_anything_else(ids):
    doc = _genuine()
    doc["law"][0][0] = ids
    verdict = checker.check(json.loads(dumps(doc)))  # never an exception
    assert verdict.reason is R.TOKENS and "not a token id" in verdict.detail


@pytest.mark.parametrize(
    "edit,detail",
    [
        # a factor, a coin constant and a floor of more bits than a row may have
        (lambda d: d["rows"].update(big={"recipe": ["scaled", "p[]", "2/1"]}), None),
        (lambda d: d["rows"].update(big={"recipe": ["scaled", "p[]", f"1/{2**16385:#x}"]}), "constants hold up to"),
        (
            lambda d: _first(d, "coin")["event"]["coin"].update(
                upper={"source": ["const", f"1/{3**10400:#x}"], "strict": True}
            ),
            "constants hold up to",
        ),
        (
            lambda d: d["rows"].update(big={"recipe": ["floor-difference", "p[]", "q[]", f"1/{3**10400:#x}"]}),
            "constants hold up to",
        ),
        # numerators past the row's denominator: a given row of "n/1" values, a scaled row above 1
        (lambda d: d["rows"].update(big={"recipe": ["given"], "values": [f"{2**600}/1", "0/1"]}), "an entry above 1"),
        (lambda d: d["rows"].update(big={"recipe": ["scaled", "p[]", "7/4"]}), "an entry above 1"),
    ],
)
def test_rows_and_constants_are_bounded(edit, detail):
    doc = _genuine()
    edit(doc)
    verdict = _check(doc)
    if detail is None:  # a small constant: only the row rule applies (2 * 2/3 > 1)
        assert verdict.reason is R.MALFORMED and "an entry above 1" in verdict.detail
    else:
        assert verdict.reason is R.MALFORMED and detail in verdict.detail, verdict


def test_check_binds_only_the_inputs_the_tree_reads(tmp_path, capsys):
    # the tree drafts from trusted given rows q'; the input rows q (= --draft) are listed but unread
    from specproof.cli import main

    p, q, used = ["1/3", "2/3"], ["2/3", "1/3"], ["1/100", "99/100"]
    doc = block_verification_certificate(p, used, 2)
    for row in list(doc["rows"].values()):
        if row["recipe"][:2] == ["input", "q"]:
            prefix = row["recipe"][2]
            row["recipe"] = ["given"]
            doc["rows"][f"unread q{prefix}"] = {"recipe": ["input", "q", prefix], "values": q}
    verdict = _check(doc)
    assert verdict.valid and all(role == "p" for role, _ in verdict.facts[0]["reads"])
    (tmp_path / "c.json").write_text(dumps(doc))
    (tmp_path / "p.json").write_text(json.dumps(p))
    (tmp_path / "q.json").write_text(json.dumps(q))
    args = [
        "check",
        str(tmp_path / "c.json"),
        "--target",
        str(tmp_path / "p.json"),
        "--draft",
        str(tmp_path / "q.json"),
    ]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["unread_inputs"] == ["q"] and "q not read by the certified tree" in out["detail"]
    assert main(args) == 0
    assert "trusted as stated (given rows, not re-derived): q[0], q[1], q[]" in capsys.readouterr().out
    honest = block_verification_certificate(p, q, 2)  # its tree reads every q row: all bound
    assert {role for role, _ in _check(honest).facts[0]["reads"]} == {"p", "q"}


def test_plots_draw_names_as_text(tmp_path):
    pytest.importorskip("matplotlib")
    from specproof.cli import main

    doc = _genuine()
    doc["name"] = "costs $2^$ and $x$"
    (tmp_path / "c.json").write_text(dumps(doc))
    assert main(["transcript", str(tmp_path / "c.json"), "--out", str(tmp_path / "t.md"), "--plots"]) == 0
    assert "costs \\$2^\\$" in (tmp_path / "t.md").read_text() or (tmp_path / "t-0.svg").exists()


def test_many_children_no_block_reaches_count_together():
    # const coin c: blocks [0] (c) and [0, 0] (1 - c) at V = 5000; (0,) is live, its other 4999
    # children are not: their gaps are summed as one mass (tests/data/trust/block_dos_stream_gcd.py)
    v, c = 5000, F(2**16000 // 3, 2**16000)

    def nd(x):
        return f"{x.numerator:#x}/{x.denominator:#x}"

    uniform = [f"1/{v}"] * v
    coin = {"source": ["const", nd(c)]}
    doc = {
        "schema": checker.BLOCK_SCHEMA,
        "vocab_size": v,
        "gamma": 1,
        "rows": {
            "p[]": {"recipe": ["input", "p", []], "values": uniform},
            "p[0]": {"recipe": ["input", "p", [0]], "values": uniform},
        },
        "nodes": [
            {
                "label": "root",
                "reach": "1/1",
                "branches": [
                    {
                        "event": {"coin": {"model": "continuous", "lower": None, "upper": {**coin, "strict": False}}},
                        "probability": nd(c),
                        "child": {"leaf": [[0], 0]},
                    },
                    {
                        "event": {"coin": {"model": "continuous", "upper": None, "lower": {**coin, "strict": True}}},
                        "probability": nd(1 - c),
                        "child": {"leaf": [[0, 0], 1]},
                    },
                ],
            }
        ],
        "law": [[[0], nd(c)], [[0, 0], nd(1 - c)]],
        "totals": {"accepted_length": [nd(c), nd(1 - c)], "expected_emitted": nd(2 - c), "stream_tv": f"{v - 1}/{v}"},
        "claims": {"lossless": False},
    }
    # by hand (c > 1/V): the first tokens t != 0 count whole, 1/V each; (0,) is live with F(0) = 1/V - c:
    # |F(0, 0)| = |F(0)/V - (1 - c)| = 1 - c + c/V - 1/V^2, and (V - 1) |F(0)|/V for (0, t). Total 2 (V - 1)/V.
    verdict = _check(doc)
    assert verdict.valid, verdict
    assert verdict.facts[0]["stream_tv"] == F(v - 1, v)


@pytest.mark.parametrize("gamma", [4, pytest.param(6, marks=pytest.mark.slow)])  # gamma 6 in CI's slow run
def test_rule_block_certificates_at_larger_gamma_pass_the_checker(tmp_path, capsys, gamma):
    # each position tree derives a few rows from its inputs: the budget counts 8 per input row
    from specproof.cli import main

    cert = tmp_path / "b.json"
    assert (
        main(
            [
                "audit",
                *_files(tmp_path),
                "--policy",
                "le-float32-grid",
                "--gamma",
                str(gamma),
                "--block-certificate",
                str(cert),
                "--json",
            ]
        )
        == 1
    )
    out = json.loads(capsys.readouterr().out)
    verdict = checker.check_file(cert)
    assert verdict.valid, verdict
    assert verdict.facts[0]["stream_tv"] == F(out["stream_tv"]) > 0
    assert main(["check", str(cert), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["tv"] == [out["stream_tv"]]


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--gamma", "20"], "3^20 drafted blocks, above 20000"),
        (["--gamma", "1000000000"], "3^1000000000 drafted blocks, above 20000"),  # refused at once, no huge power
        (["--verifier", "tree", "--gamma", "30", "--drafts", "3"], "the token tree has more than 20000 nodes"),
        (["--gamma", "9", "--block-certificate", "x.json"], "3^9 x V = 59049 branches, above 20000"),
        (["--gamma", "2", "--stop-token", "5"], "--stop-token 5 is not a token id in [0, 3)"),
        (["--verifier", "block", "--gamma", "2", "--stop-token", "1"], "apply to the chain verifier"),
        (["--verifier", "typical", "--gamma", "2", "--policy", "le-float32-grid"], "apply to the chain verifier"),
    ],
)
def test_audit_refuses_what_it_cannot_do_before_working(tmp_path, capsys, extra, message):
    from specproof.cli import main

    assert main(["audit", *_files(tmp_path), *extra]) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------- mutation survivors of the block section


def test_constants_up_to_the_row_limit_are_accepted():
    doc = _hand([0], {"p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]}})
    for bits, valid in ((checker.MAX_ROW_BITS, True), (checker.MAX_ROW_BITS + 1, False)):
        c = f"1/{2 ** (bits - 1):#x}"  # a denominator of exactly `bits` bits
        doc["nodes"][0]["branches"][0]["event"] = {
            "coin": {"model": "fixed:0/1", "lower": None, "upper": {"source": ["const", c], "strict": False}}
        }
        verdict = _check(doc)
        assert verdict.valid is valid, (bits, verdict)


def test_the_stream_reads_are_reported_and_only_those():
    # the tree reads no row (a certain choice); the stream reads p[] and p[0] (live prefixes with a
    # gap), never p[1] (no block passes through (1,))
    rows = {
        "p[0]": {"recipe": ["input", "p", [0]], "values": ["1/4", "3/4"]},
        "p[1]": {"recipe": ["input", "p", [1]], "values": ["1/2", "1/2"]},
    }
    doc = _hand([0, 0], rows)
    doc["nodes"][0]["branches"][0]["child"]["leaf"][1] = 1
    doc["totals"].update(accepted_length=["0/1", "1/1"], expected_emitted="2/1", stream_tv="7/8")
    verdict = _check(doc)
    assert verdict.valid, verdict
    assert verdict.facts[0]["reads"] == [("p", ()), ("p", (0,))]


def test_gamma_at_the_limit_is_accepted():
    doc = _hand([0], {"p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]}}, gamma=checker.MAX_BLOCK_GAMMA)
    assert _check(doc).valid


def test_the_gamma_limit_is_16():
    # the documented limit itself (block_verification_certificate and typical_block_certificate refuse more)
    doc = _hand([0], {"p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]}}, gamma=16)
    assert _check(doc).valid
    doc = _hand([0], {"p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]}}, gamma=17)
    verdict = _check(doc)
    assert verdict.reason is R.MALFORMED and verdict.detail == "certificate.gamma is 17, not an integer in [1, 16]"


@pytest.mark.parametrize("nodes", [[], {}, None])
def test_a_block_needs_nodes(nodes):
    doc = _genuine()
    doc["nodes"] = nodes
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED and "nodes is not a non-empty list" in verdict.detail


def test_a_bad_child_names_the_block_leaf_form():
    doc = _genuine()
    _leaf_branch(doc)["child"] = "x"
    verdict = _check(doc)
    assert verdict.reason is R.MALFORMED and "a later node or a leaf [[ids], accepted]" in verdict.detail


def test_minimum_and_scaled_by_hand():
    rows = {
        "p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]},
        "a": {"recipe": ["given"], "values": ["1/2", "1/4"]},
        "b": {"recipe": ["given"], "values": ["1/3", "2/3"]},
        "m": {"recipe": ["minimum", "a", "b"]},
        "n": {"recipe": ["minimum", "b", "a"]},
        "s": {"recipe": ["scaled", "b", "3/2"]},
    }
    verdict = _check(_hand([0], rows))
    assert verdict.valid, verdict
    got = {k: [F(x.num, x.den) for x in verdict.facts[0]["rows"][k]] for k in ("m", "n", "s")}
    assert got == {"m": [F(1, 3), F(1, 4)], "n": [F(1, 3), F(1, 4)], "s": [F(1, 2), F(1)]}


def test_a_masses_threshold_reads_both_rows():
    # u < sum(q[]) / sum(g) = 1 / (1/2) = 2: probability 1; q[] is read by this coin only
    rows = {
        "p[0]": {"recipe": ["input", "p", [0]], "values": ["1/2", "1/2"]},
        "q[]": {"recipe": ["input", "q", []], "values": ["1/4", "3/4"]},
        "g": {"recipe": ["given"], "values": ["1/2", "0/1"]},
    }
    doc = _hand([0], rows)
    doc["nodes"][0]["branches"][0]["event"] = {
        "coin": {"model": "continuous", "lower": None, "upper": {"source": ["masses", "q[]", "g"], "strict": True}}
    }
    verdict = _check(doc)
    assert verdict.valid, verdict
    assert ("q", ()) in verdict.facts[0]["reads"]


@pytest.mark.parametrize(
    "policy, p, q",
    [
        ("lt-float32-coin", ["319/830", "131/830", "38/83"], ["368/1891", "815/1891", "708/1891"]),
        ("le-float32-grid", ["319/830", "131/830", "38/83"], ["368/1891", "815/1891", "708/1891"]),
        ("le-float32-coin", ["1/7", "2/7", "1/14", "3/14", "1/7", "1/7"], ["1/6", "1/9", "2/9", "1/6", "1/6", "1/6"]),
    ],
)
def test_a_float_rules_block_certificate_checks_with_the_audits_stream_tv(tmp_path, policy, p, q):
    # the bonus token is drawn from the row float code samples from (p rounded to float32), as the audit's law has
    # it; the certificate drew it from p itself, and the checker rejected the audit's stream TV (adversarial review)
    from specproof.cli import main
    from specproof.rules.audit import block_law
    from specproof.rules.policy import named_rule

    (tmp_path / "p.json").write_text(json.dumps(p))
    (tmp_path / "q.json").write_text(json.dumps(q))
    out = tmp_path / "b.json"
    assert main(
        [
            "audit",
            "--policy",
            policy,
            "--target",
            str(tmp_path / "p.json"),
            "--draft",
            str(tmp_path / "q.json"),
            "--gamma",
            "2",
            "--block-certificate",
            str(out),
        ]
    ) in (0, 1)
    doc = json.loads(out.read_text())
    verdict = checker.check(doc)
    assert verdict.valid, verdict
    want = block_law([F(x) for x in p], [F(x) for x in q], 2, named_rule(policy))
    assert {tuple(b): F(m) for b, m in doc["law"]} == {b: m for b, m in want.emitted.items() if m}
    assert F(doc["totals"]["stream_tv"]) == want.stream_tv
