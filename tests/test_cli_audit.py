"""Tests for `specproof audit`: every row of issue 11's fault table that is a (p, q) input,
through --json, compared with == on the parsed Fractions; exit codes; --list; --real."""

import json
from fractions import Fraction as F

import pytest

from specproof.cli import main

N24 = 2**24


def _write(tmp_path, name, values):
    path = tmp_path / name
    path.write_text(json.dumps(values), encoding="utf-8")
    return str(path)


def _audit(tmp_path, capsys, p, q, *extra):
    code = main(
        ["audit", "--target", _write(tmp_path, "p.json", p), "--draft", _write(tmp_path, "q.json", q), "--json", *extra]
    )
    return code, json.loads(capsys.readouterr().out)


def _fr(values):
    return [F(v) for v in values]


@pytest.mark.parametrize(
    "policy, p, q, law, tv",
    [
        ("accept-all", ["9/10", "1/10"], ["1/10", "9/10"], ["1/10", "9/10"], "4/5"),
        ("le-float32-coin", [0, 1], [1, 0], [F(1, N24), 1 - F(1, N24)], F(1, N24)),
        ("lt-float32-coin", [0, 1], [1, 0], [0, 1], 0),
        ("resample-from-target", ["1/2", "1/2"], ["1/4", "3/4"], ["3/8", "5/8"], "1/8"),
        ("residual-floor:1/1000", [0, "1/2", "1/2"], [1, 0, 0], ["1/1001", "500/1001", "500/1001"], "1/1001"),
        ("coin-reuse-inverse-cdf", ["1/4", "1/4", "1/2"], [1, 0, 0], ["1/4", "1/12", "2/3"], "1/6"),
        ("match-rule", ["1/2", "1/2"], ["1/4", "3/4"], ["1/2", "1/2"], 0),
        ("greedy-first-draft-unchecked", [0, 1], [1, 0], [1, 0], 1),
        ("greedy", [0, 1], [1, 0], [0, 1], 0),
        ("coin-reuse-inverse-cdf", ["1/2", "1/2", 0], [1, 0, 0], ["1/2", "1/2", 0], 0),
        ("temperature-ignored", ["3/5", "2/5"], ["1/2", "1/2"], [1, 0], "2/5"),
    ],
)
def test_fault_table_rows_through_json(tmp_path, capsys, policy, p, q, law, tv):
    code, out = _audit(tmp_path, capsys, p, q, "--policy", policy)
    assert _fr(out["law"]) == _fr(law) and F(out["tv"]) == F(tv)
    assert out["verdict"] == ("lossless" if F(tv) == 0 else "lossy")
    assert code == (0 if F(tv) == 0 else 1)


def test_alpha_columns_through_json(tmp_path, capsys):
    _, out = _audit(tmp_path, capsys, ["9/10", "1/10"], ["1/10", "9/10"], "--policy", "accept-all")
    assert F(out["textbook_alpha"]) == F(1, 5) and F(out["alpha"]) == 1
    _, out = _audit(tmp_path, capsys, ["1/2", "1/2"], ["1/4", "3/4"], "--policy", "resample-from-target")
    assert F(out["alpha"]) == F(3, 4)
    _, out = _audit(tmp_path, capsys, ["1/2", "1/2"], ["1/4", "3/4"], "--policy", "match-rule")
    assert F(out["alpha"]) == F(1, 2) and F(out["textbook_alpha"]) == F(3, 4)


def test_eos_row_through_json(tmp_path, capsys):
    half = ["1/2", "1/2"]
    code, out = _audit(tmp_path, capsys, half, half, "--gamma", "2", "--stop-token", "0")
    assert code == 0 and F(out["expected_emitted_to_stop"]) == F(7, 4) == F(out["expected_emitted"])
    code, out = _audit(
        tmp_path, capsys, half, half, "--gamma", "2", "--stop-token", "0", "--policy", "commit-past-stop"
    )
    assert F(out["expected_emitted"]) == 3 and F(out["expected_emitted_to_stop"]) == F(7, 4)


def test_flag_and_padding_rows_through_drafted(tmp_path, capsys):
    _, out = _audit(
        tmp_path, capsys, ["1/4", "3/4"], ["1/2", "1/2"], "--drafted", "0", "0", "0", "--policy", "flag-sum-count"
    )
    d = out["drafted"]
    assert _fr(d["accepted_length"]) == [F(1, 2), F(1, 4), F(1, 8), F(1, 8)]
    assert F(d["expected_accepted"]) == F(7, 8) and F(d["expected_counted"]) == F(3, 2)
    u = ["1/4"] * 4
    _, out = _audit(tmp_path, capsys, u, u, "--drafted", "1", "0", "1", "-1", "-1")
    assert out["drafted"]["real_drafts"] == 3 and _fr(out["drafted"]["accepted_length"]) == [0, 0, 0, 1]


def test_rule_file_and_search(tmp_path, capsys):
    rule = _write(tmp_path, "rule.json", {"comparison": "<=", "coin": "float32"})
    code, out = _audit(tmp_path, capsys, [0, 1], [1, 0], "--policy", rule)
    assert code == 1 and F(out["tv"]) == F(1, N24)
    assert out["rule_fields"]["coin"] == "float32"


def test_list_and_usage_errors(tmp_path, capsys):
    assert main(["audit", "--list", "--json"]) == 0
    names = {r["name"] for r in json.loads(capsys.readouterr().out)}
    assert {
        "standard",
        "accept-all",
        "le-float32-coin",
        "lt-float32-coin",
        "resample-from-target",
        "residual-floor:EPS",
        "coin-reuse-inverse-cdf",
        "match-rule",
        "first-draft-unchecked",
        "race-reuse",
    } <= names
    assert main(["audit", "--policy", "standard"]) == 2
    assert (
        main(
            [
                "audit",
                "--target",
                _write(tmp_path, "p.json", ["1/2", "1/2"]),
                "--draft",
                _write(tmp_path, "q.json", ["1/2", "1/2"]),
                "--policy",
                "no-such-rule",
            ]
        )
        == 2
    )
    assert "unknown rule 'no-such-rule'" in capsys.readouterr().err


def test_real_phone_pairs_standard_lossless_float32_float_faithful(capsys):
    assert main(["audit", "--real", "phone", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "lossless" and doc["rule"] == "standard" and doc["real"] == "phone"
    results = doc["pairs"]
    assert len(results) == 20 and all(r["verdict"] == "lossless" and r["tv"] == "0/1" for r in results)
    assert main(["audit", "--real", "phone", "--json", "--policy", "lt-float32-coin"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # tiny but not 0: each accept mass q(x) P(u < t) exceeds q(x) t by less than q(x) 2^-24 and the
    # rejection mass shrinks by the same total, so TV <= sum_x q(x) 2^-24 = 2^-24; and each law is a
    # float-ideal verifier's exactly (the float floor), as trace of the same code says
    assert doc["verdict"] == "float-faithful"
    assert all(r["verdict"] == "float-faithful" and 0 < F(r["tv"]) <= F(1, N24) for r in doc["pairs"])
    assert all(r["float_floor"]["nearest"].startswith("u < fl32(p/q)") for r in doc["pairs"])
    assert main(["audit", "--real", "phone", "--json", "--policy", "lt-float32-coin", "--strict"]) == 1
    capsys.readouterr()


def test_a_float_rule_gets_trace_s_three_way_verdict_with_its_float_floor_named(tmp_path, capsys):
    def audit(p, q, *extra):
        code = main(
            [
                "audit",
                "--target",
                _write(tmp_path, "p.json", p),
                "--draft",
                _write(tmp_path, "q.json", q),
                "--policy",
                "le-float32-coin",
                *extra,
            ]
        )
        return code, capsys.readouterr().out

    # the same rows and rule as trace's <= coin: float-faithful where no p = 0 token is drafted ...
    code, out = audit([0.6, 0.3, 0.1], [0.2, 0.5, 0.3])
    assert code == 0 and out.startswith("rule le-float32-coin: FLOAT-FAITHFUL\n")
    assert (
        "float floor: equals the float-ideal verifier with u <= fl32(p/q), residual fl32(max(p - q, 0)) as "
        "weights, float32 coin on [0, 1) exactly: the TV is its float floor"
    ) in out
    assert audit([0.6, 0.3, 0.1], [0.2, 0.5, 0.3], "--strict")[0] == 1
    code, doc = _audit(tmp_path, capsys, [0.6, 0.3, 0.1], [0.2, 0.5, 0.3], "--policy", "le-float32-coin")
    assert code == 0 and doc["verdict"] == "float-faithful" and doc["float_floor"]["tv_from_float_ideal"] == "0/1"
    # ... and a fault where the draft puts mass on a token the target never emits: the coin u = 0 accepts it
    code, out = audit([0.5, 0.5, 0], [0.25, 0.25, 0.5])
    assert code == 1 and out.startswith("rule le-float32-coin: LOSSY\n")
    assert "emits tokens the target gives probability 0 (mass 2.98023e-08): always a fault" in out
    # a block is not judged against the float family: LOSSY, and it says so
    code, out = audit([0.6, 0.3, 0.1], [0.2, 0.5, 0.3], "--gamma", "2")
    assert code == 1 and "float floor: not judged for a block" in out


def test_the_float_floor_s_reason_matches_its_verdict_whatever_the_rows_rounding(tmp_path, capsys):
    """Each of the three float-floor verdicts, on rows float32 holds exactly and on rows it rounds: the
    reason matches the verdict (a FLOAT-FAITHFUL verdict on exact rows was once explained as "a fault",
    and a LOSSY one on rounded rows raised KeyError)."""

    def audit(p, q, policy):
        code = main(
            ["audit", "--target", _write(tmp_path, "p.json", p), "--draft", _write(tmp_path, "q.json", q)]
            + ["--policy", policy]
        )
        out = capsys.readouterr().out
        return code, out.splitlines()[0], next(line for line in out.splitlines() if "float floor:" in line)

    # rows float32 holds exactly: float-faithful, the float-ideal member named, no word of a fault
    code, head, floor = audit([0.5, 0.125, 0.375], [0.25, 0.5, 0.25], "le-float32-coin")
    assert (code, head) == (0, "rule le-float32-coin: FLOAT-FAITHFUL")
    assert "equals the float-ideal verifier with u <= fl32(p/q)" in floor and "fault" not in floor
    assert "rows rounded" not in floor
    # rows float32 rounds, on which the rule is the exact verifier: the rounding is the whole TV
    code, head, floor = audit(["1/2", "1/3", "1/6"], ["1/6", "1/2", "1/3"], "lt-float32-coin")
    assert (code, head) == (0, "rule lt-float32-coin: FLOAT-FAITHFUL")
    assert "equals the exact verifier's law on the rows rounded to float32" in floor and "fault" not in floor
    assert "whose own law is at TV 7.45058e-09 from p's" in floor
    _, doc = _audit(tmp_path, capsys, ["1/2", "1/3", "1/6"], ["1/6", "1/2", "1/3"], "--policy", "lt-float32-coin")
    assert doc["verdict"] == "float-faithful" and doc["float_floor"]["rows_rounding_tv"] == doc["tv"] == "1/134217730"
    # a fault on rows float32 rounds: LOSSY, the fault named, then the rounding
    code, head, floor = audit(["1/3", "1/6", "1/2", "0"], ["1/4", "1/4", "1/4", "1/4"], "le-float32-coin")
    assert (code, head) == (1, "rule le-float32-coin: LOSSY")
    assert floor.index("always a fault") < floor.index("judged on the rows rounded to float32")


def test_the_rows_rounding_is_called_part_of_the_tv_only_when_it_is_not_more_than_it(tmp_path, capsys):
    """The rows' rounding was called "part of the TV above" even where it exceeds that TV (the arithmetic's own
    error moving the law back towards p): there it is said to be more than the TV."""
    rule = tmp_path / "rule.json"
    rule.write_text(json.dumps({"arithmetic": "float32"}))
    p, q = ["1/1000000000", "999999999/1000000000"], ["1/2", "1/2"]
    code, doc = _audit(tmp_path, capsys, p, q, "--policy", str(rule))
    floor = doc["float_floor"]
    assert (code, doc["verdict"], floor["verdict"], floor["tv_from_float_ideal"]) == (
        0,
        "float-faithful",
        "float-faithful",
        "0/1",
    )
    assert (doc["tv"], floor["rows_rounding_tv"]) == (
        "497541/17592186044416000000000",
        "263748191/9007199263748191000000000",
    )
    assert F(floor["rows_rounding_tv"]) > F(doc["tv"])
    assert floor["why"].endswith(
        "whose own law is at TV 2.92819e-17 from p's, more than the TV above (the arithmetic's own error offsets part of it)"
    )
    assert "part of the TV above" not in floor["why"]
    # where the rounding is the whole TV, or less, it is still part of it
    _, doc = _audit(tmp_path, capsys, ["1/2", "1/3", "1/6"], ["1/6", "1/2", "1/3"], "--policy", "lt-float32-coin")
    assert doc["float_floor"]["why"].endswith("whose own law is at TV 7.45058e-09 from p's, part of the TV above")


def test_proposal_file(tmp_path, capsys):
    # argmax drafts [1, 0] against q = [3/4, 1/4]: law [2/3, 1/3], TV 1/6 (tests/test_audit.py by hand)
    prop = _write(tmp_path, "r.json", [1, 0])
    code, out = _audit(tmp_path, capsys, ["1/2", "1/2"], ["3/4", "1/4"], "--proposal", prop)
    assert code == 1 and _fr(out["law"]) == [F(2, 3), F(1, 3)] and F(out["tv"]) == F(1, 6)


def test_a_degenerate_row_is_a_finding_not_a_usage_error(tmp_path, capsys):
    nan = tmp_path / "nan.json"
    nan.write_text("[NaN, NaN, NaN]")
    code = main(["audit", "--target", str(nan), "--draft", _write(tmp_path, "q.json", [0.25, 0.5, 0.25]), "--json"])
    out = json.loads(capsys.readouterr().out)
    # the standard rule's exact arithmetic has no NaN: what it emits is not modelled, and the output says so
    assert code == 1 and out["verdict"] == "degenerate" and out["modelled"] is False and out["law"] is None
    assert out["degenerate"] == ["p (nan.json): all 3 entries are NaN"] and "trace python" in out["note"]
    assert "no rational value" in out["notes"][0]
    q = _write(tmp_path, "q.json", [0.25, 0.5, 0.25])
    rule = tmp_path / "last.json"
    rule.write_text(json.dumps({"coin": "float32", "arithmetic": "float32", "fallback": "last"}))
    # float32: every ratio test fails on NaN, the residual's mass is NaN, the fallback emits id V - 1 (vLLM #53029)
    assert main(["audit", "--target", str(nan), "--draft", q, "--policy", str(rule), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["modelled"] is True and out["law"] == {"2": "1/1"} and out["raised"] == "0/1"
    assert out["outside_support"] == "1/1"
    zero = tmp_path / "zero.json"
    zero.write_text("[0.0, 0.0, 0.0]")
    assert main(["audit", "--target", str(zero), "--draft", q, "--policy", "le-float32-coin"]) == 1
    text = capsys.readouterr().out
    assert "DEGENERATE INPUT" in text and "p (zero.json): all 3 entries are zero" in text
    # u <= fl32(0 / q) passes at the coin u = 0 only: the drafted token, outside the (empty) support, w.p. 2^-24
    assert "id 1: 2.98023e-08 (1/33554432)" in text
    assert "the code raises instead: 1 - 5.96046e-08 (16777215/16777216)" in text
    assert (
        main(
            [
                "audit",
                "--target",
                _write(tmp_path, "p3.json", [0.5, 0.25, 0.25]),
                "--draft",
                str(zero),
                "--policy",
                "le-float32-coin",
            ]
        )
        == 1
    )
    text = capsys.readouterr().out  # the draft is drawn from the all-zero row: the draw raises, nothing is emitted
    assert (
        "q (zero.json): all 3 entries are zero" in text
        and "TV from the target's law (a raise emits nothing): 1" in text
    )


def test_a_log_space_rule_says_its_thresholds_are_library_results(tmp_path, capsys):
    rule = tmp_path / "rule.json"
    rule.write_text(
        json.dumps({"coin": "float32", "arithmetic": {"dtype": "float32", "test": "exp", "library": "numpy"}})
    )
    cert = tmp_path / "c.json"
    code, out = _audit(
        tmp_path, capsys, [0.5, 0.25, 0.25], [0.5, 0.25, 0.25], "--policy", str(rule), "--certificate", str(cert)
    )
    # p == q: fl32(log p - log q) = 0 and NumPy's exp(0) = 1, so every coin in [0, 1) accepts: lossless
    assert code == 0 and out["tv"] == "0/1" and out["alpha"] == "1/1"
    assert "u < numpy exp(fl32(log p - log q))" in out["arithmetic"] and "not modelled" in out["arithmetic"]
    assert "takes them as given" in json.loads(cert.read_text())["statement"]
    assert main(["check", str(cert)]) == 0


@pytest.mark.parametrize("coin, comparison, tv", [("fixed:0", "<=", "3/8"), ("fixed:1", "<", "1/8")])
@pytest.mark.parametrize("arithmetic", ["exact", "float32"])
def test_a_fixed_coin_at_0_or_1_writes_certificates_the_checker_accepts(
    tmp_path, capsys, coin, comparison, tv, arithmetic
):
    """A fixed coin at an integer value was written as the model 'fixed:0' (the checker reads 'n/d' only), so
    audit's own certificates of it were rejected as not-rational: they pass `check`, with audit's TV."""
    rule = tmp_path / "rule.json"
    rule.write_text(json.dumps({"coin": coin, "comparison": comparison, "arithmetic": arithmetic}))
    cert, block = tmp_path / "c.json", tmp_path / "b.json"
    p, q = [0.5, 0.125, 0.375], [0.25, 0.5, 0.25]
    code, out = _audit(tmp_path, capsys, p, q, "--policy", str(rule), "--certificate", str(cert))
    # u = 0 passes u <= p/q always: the law is q's; u = 1 passes u < p/q only where p/q > 1 (ids 0 and 2)
    assert (code, out["verdict"], out["tv"]) == (1, "lossy", tv)
    _, blocked = _audit(
        tmp_path, capsys, p, q, "--policy", str(rule), "--gamma", "1", "--block-certificate", str(block)
    )
    nodes = json.loads(cert.read_text())["nodes"]
    assert {b["event"]["coin"]["model"] for n in nodes for b in n["branches"] if "coin" in b["event"]} == {f"{coin}/1"}
    for path, want in ((cert, tv), (block, blocked["stream_tv"])):
        assert main(["check", str(path), "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["valid"], doc["tv"], doc["lossless"]) == (True, [want], [False])
        assert main(["check", str(path), "--require-lossless"]) == 1
        assert "--require-lossless: failed (exit 1): the certified verifier is not lossless" in capsys.readouterr().out


def test_a_block_certificate_of_a_rule_whose_target_row_is_given_names_p_after_a_full_block(tmp_path, capsys):
    """temperature-ignored samples the bonus token from its processed (given) target row, so p after a full block
    was left out of the block certificate, and the checker rejected audit's own certificate wherever the stream's
    gap there is not 0 ("no target row p after it"): p is listed there, and the certificate passes with audit's TV."""
    block = tmp_path / "b.json"
    p, q = ["1/2", "1/2", "0"], ["1/2", "0", "1/2"]  # both argmaxes are id 0: every draft is accepted
    code, out = _audit(
        tmp_path, capsys, p, q, "--policy", "temperature-ignored", "--gamma", "2", "--block-certificate", str(block)
    )
    assert (code, out["verdict"], out["accepted_length"], out["stream_tv"]) == (
        1,
        "lossy",
        ["0/1", "0/1", "1/1"],
        "7/8",
    )
    assert (
        main(
            [
                "check",
                str(block),
                "--json",
                "--target",
                _write(tmp_path, "p.json", p),
                "--draft",
                _write(tmp_path, "q.json", q),
            ]
        )
        == 0
    )
    doc = json.loads(capsys.readouterr().out)
    assert (doc["valid"], doc["tv"], doc["lossless"]) == (True, ["7/8"], [False])
    assert main(["check", str(block), "--require-lossless"]) == 1


def test_logits_on_the_command_line(tmp_path, capsys):
    from specproof.laws.outcome import FLOAT32
    from specproof.rules.audit import position_law
    from specproof.rules.policy import Arithmetic, Logits, Processing, Rule

    zp = tmp_path / "zp.json"
    zp.write_text('[1.0, 2.0, 0.0, "-inf"]')
    zq = _write(tmp_path, "zq.json", [2.0, 1.0, 0.5, 0.0])
    # the step drops min-p 1/2 (as vLLM PR #42802 did on verified tokens); the plain sampler applies it
    proc = {"temperature": 0.7}
    rule = tmp_path / "drop.json"
    rule.write_text(
        json.dumps(
            {
                "coin": "float32",
                "arithmetic": "float32",
                "target_processing": proc,
                "draft_processing": proc,
                "reference_processing": {**proc, "min_p": "1/2"},
            }
        )
    )
    assert (
        main(["audit", "--logits", "numpy", "--target", str(zp), "--draft", zq, "--policy", str(rule), "--json"]) == 1
    )
    out = json.loads(capsys.readouterr().out)
    t07 = Processing(temperature=0.7)
    want = position_law(
        Logits([1.0, 2.0, 0.0, -float("inf")], "numpy"),
        Logits([2.0, 1.0, 0.5, 0.0], "numpy"),
        Rule(
            coin=FLOAT32,
            arithmetic=Arithmetic("float32"),
            target_processing=t07,
            draft_processing=t07,
            reference_processing=Processing(temperature=0.7, min_p=F(1, 2)),
        ),
    )
    assert _fr(out["law"]) == list(want.law) and F(out["tv"]) == want.tv and want.tv > F(1, 10)
    assert want.reference[0] == 0 and want.reference[2:] == (0, 0)  # min-p 1/2 keeps id 1 alone
    assert "numpy" in out["arithmetic"] and "softmax" in out["arithmetic"] and "evaluated as data" in out["arithmetic"]
    twice = tmp_path / "two.json"
    twice.write_text("[[0.0, 1.0], [1.0, 0.0]]")
    for argv, message in (
        (["--target", str(zp), "--draft", zq], "give the rule a float arithmetic"),
        (["--target", str(twice), "--draft", zq, "--policy", str(rule)], "takes one row [V]"),
        (
            ["--target", str(zp), "--draft", zq, "--policy", str(rule), "--certificate", str(tmp_path / "c.json")],
            "without certificates",
        ),
    ):
        assert main(["audit", "--logits", "numpy", *argv]) == 2
        assert message in capsys.readouterr().err


def test_the_rule_may_be_named_as_a_positional_argument(tmp_path, capsys):
    # `specproof audit le-float32-coin ...`, as one types it after --list: the same as --policy
    args = [
        "--target",
        _write(tmp_path, "p.json", [0.6, 0.3, 0.1]),
        "--draft",
        _write(tmp_path, "q.json", [0.2, 0.5, 0.3]),
    ]
    assert main(["audit", "le-float32-coin", *args]) == 0
    positional = capsys.readouterr().out
    assert main(["audit", "--policy", "le-float32-coin", *args]) == 0
    assert capsys.readouterr().out == positional and positional.startswith("rule le-float32-coin: FLOAT-FAITHFUL")
    assert main(["audit", "le-float32-coin", "--policy", "accept-all", *args]) == 2
    assert "give the rule once" in capsys.readouterr().err


def test_a_certificate_the_checker_would_reject_is_not_written(tmp_path, capsys):
    """resample-from-target on the phone model's pairs: one pair's TV is over a denominator of 278,920
    bits, past the checker's MAX_MASS_BITS; audit once wrote that bundle, which check then rejected.
    Now it stops with the checker's reason (exit 2) and writes nothing; the standard rule's bundle is
    written and checks."""
    from specproof import checker

    path = tmp_path / "bundle.json"
    assert main(["audit", "--real", "phone", "--policy", "resample-from-target", "--certificate", str(path)]) == 2
    err = capsys.readouterr().err
    assert "not written: the trusted checker would reject this certificate (malformed:" in err
    assert "a mass over a denominator of 278920 bits (outcome and block trees hold masses up to 262144 bits)" in err
    assert not path.exists()
    assert main(["audit", "--real", "phone", "--certificate", str(path)]) == 0
    capsys.readouterr()
    assert checker.check_file(path).valid
