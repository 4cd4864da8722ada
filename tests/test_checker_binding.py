"""The binding of `check --target --draft` in the kernel (issue 30, item 4): JSON rows read by the checker with
the standard library alone (`checker.input_rows`), compared by `checker.bind`, gated by `checker.gate`."""

import json
import subprocess
import sys
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof import checker
from specproof.certify.certificate import build_bundle, build_certificate, build_chain_certificate, write
from specproof.cli import main
from specproof.cli.loaders import load_distributions

ATOL = Fraction(1, 1000)


def _rows(value):
    return checker.input_rows(json.dumps(value), "--target", ATOL)


def test_exact_rows_are_read_as_written():
    assert _rows(["1/4", "3/4"]) == [(Fraction(1, 4), Fraction(3, 4))]
    assert _rows([1, 0]) == [(Fraction(1), Fraction(0))]
    assert _rows(["1", "0"]) == [(Fraction(1), Fraction(0))]
    assert _rows([["1/2", "1/2"], ["0", "1"]]) == [(Fraction(1, 2), Fraction(1, 2)), (Fraction(0), Fraction(1))]


def test_decimal_rows_are_their_float64_values_divided_by_their_exact_sum():
    row = _rows([0.1, 0.2, 0.7])[0]
    total = Fraction(0.1) + Fraction(0.2) + Fraction(0.7)
    assert row == (Fraction(0.1) / total, Fraction(0.2) / total, Fraction(0.7) / total)
    assert _rows([1, 0.0]) == [(Fraction(1), Fraction(0))]  # an integer among floats is that float


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.floats(min_value=0, max_value=1, allow_nan=False, allow_subnormal=True, width=64), min_size=1, max_size=6
    )
)
def test_decimal_rows_equal_the_loaders_reading(tmp_path_factory, weights):
    # the kernel's reading (decimal text -> the nearest float64 by exact rounding) equals the library's (json's
    # correctly rounded float, then NumPy's exact frexp) on every row both accept
    total = sum(weights)
    if not total:
        return
    row = [w / total for w in weights]
    path = tmp_path_factory.mktemp("rows") / "p.json"
    path.write_text(json.dumps(row))
    try:
        library = [v.fractions() for v in load_distributions(path, "p", atol=float(ATOL)).vectors]
    except Exception:
        library = None
    try:
        kernel = checker.input_rows(path.read_bytes(), "p", ATOL)
    except checker.Rejection:
        kernel = None
    assert kernel == library


@pytest.mark.parametrize(
    "text, reason, words",
    [
        ("[NaN, 1]", checker.Reason.NOT_RATIONAL, "not a finite decimal number"),
        ("[Infinity, 0]", checker.Reason.NOT_RATIONAL, "not a finite decimal number"),
        ("[1e309, 0.0]", checker.Reason.NOT_RATIONAL, "past the largest float64"),
        ("[1.7976931348623159e308, 0.0]", checker.Reason.NOT_RATIONAL, "past the largest float64"),
        ("[1e99999999999999, 0.0]", checker.Reason.NOT_RATIONAL, "not a finite decimal number"),
        ("[1e9999999, 0.0]", checker.Reason.NOT_RATIONAL, "past the largest float64"),  # 10^9999999 not computed
        ("[0." + "1" * 5000 + ", 0.0]", checker.Reason.NOT_RATIONAL, "has 5002 characters: too many digits"),
        ("[-0.5, 1.5]", checker.Reason.NEGATIVE, "negative"),
        ("[-1, 2]", checker.Reason.NEGATIVE, "--target[0] is -1, which is negative"),
        ("[-1, 2.0]", checker.Reason.NEGATIVE, "--target[0] is -1, which is negative"),
        ('["-1/2", "3/2"]', checker.Reason.NEGATIVE, "negative"),
        ('[0.5, "1/2"]', checker.Reason.INPUT, "among decimal numbers"),
        ("[9007199254740993, 0.0]", checker.Reason.INPUT, "a float64 cannot hold"),
        ('["1/3", "1/3"]', checker.Reason.INPUT, "not 1"),
        ("[0.5, 0.4]", checker.Reason.INPUT, "off from 1 by more than 1/1000"),
        ("[0.0, 0.0]", checker.Reason.INPUT, "off from 1"),
        ("[]", checker.Reason.INPUT, "non-empty JSON list"),
        ('{"p": [1]}', checker.Reason.INPUT, "non-empty JSON list"),
        ("[[1], 1]", checker.Reason.INPUT, "mixes numbers and lists"),
        ("[[1, 0], [1]]", checker.Reason.INPUT, "different lengths"),
        ("[[]]", checker.Reason.INPUT, "an empty row"),
        ("[true, 0]", checker.Reason.NOT_RATIONAL, "not a number"),
        ('["0.5", "0.5"]', checker.Reason.NOT_RATIONAL, "not an 'n/d' string"),
        ("[0." + "0" * 200000 + "1]", checker.Reason.NOT_RATIONAL, "not a finite decimal number"),
        ('["' + "1" * 5000 + '/1"]', checker.Reason.NOT_RATIONAL, "too many digits"),
        ("[" * 100000 + "]" * 100000, checker.Reason.MALFORMED, "nested too deeply"),
        ("[0.5, 0.5", checker.Reason.MALFORMED, "not valid JSON"),
    ],
)
def test_hostile_rows_are_rejected_quickly(text, reason, words):
    start = time.process_time()
    with pytest.raises(checker.Rejection) as info:
        checker.input_rows(text, "--target", ATOL)
    assert info.value.reason is reason and words in info.value.detail, info.value.detail
    assert time.process_time() - start < 0.5


def test_tiny_and_huge_exponents_cost_nothing():
    # 10^-9999999 rounds to 0 and 10^9999999 is past the largest float64: both known from the exponent alone,
    # never by computing a power of ten with ten million digits (about 10 s)
    start = time.process_time()
    assert checker.input_rows("[1, 1e-9999999]", "--target", ATOL) == [(Fraction(1), Fraction(0))]
    assert checker.input_rows("[1, 0.0]", "--target", ATOL) == [(Fraction(1), Fraction(0))]
    assert time.process_time() - start < 0.5


def _files(tmp_path, p, q):
    write(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g"), tmp_path / "c.json")
    (tmp_path / "p.json").write_text(json.dumps(p))
    (tmp_path / "q.json").write_text(json.dumps(q))
    return [str(tmp_path / "c.json"), "--target", str(tmp_path / "p.json"), "--draft", str(tmp_path / "q.json")]


def test_check_with_json_rows_imports_nothing_outside_the_checker_and_the_standard_library(tmp_path):
    args = _files(tmp_path, [0.5, 0.5], ["1/4", "3/4"])
    code = (
        f"import sys; from specproof.cli import main; code = main(['check', *{args!r}, '--require-lossless', '-q']); "
        "print(code, sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'specproof', 'numpy', 'sympy', 'torch', 'jinja2', 'scipy', 'tqdm'}))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the command line's own modules (parsing the options, printing) and the kernel: nothing outside the standard
    # library (tqdm, the progress bar, is imported only when a bar is drawn, after 2 s)
    allowed = ["specproof", "specproof.checker", "specproof.cli", "specproof.cli._common", "specproof.cli.check"]
    allowed += ["specproof.cli.record", "specproof.errors"]
    assert run.stdout.strip().splitlines()[-1] == f"0 {sorted(allowed)}"


def test_rows_read_outside_the_checker_are_named(tmp_path, capsys):
    args = _files(tmp_path, [0.5, 0.5], ["1/4", "3/4"])
    assert main(["check", *args]) == 0
    assert "outside the trusted checker" not in capsys.readouterr().out
    (tmp_path / "p.txt").write_text("0.5\n0.5\n")
    args[2] = str(tmp_path / "p.txt")
    assert main(["check", *args]) == 0
    assert "--target read by NumPy (specproof.cli.loaders), outside the trusted checker" in capsys.readouterr().out
    assert main(["check", *args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["read_outside_checker"] == ["--target"]


def test_a_bad_json_row_is_a_usage_error_naming_the_entry(tmp_path, capsys):
    args = _files(tmp_path, [0.5, "NaN"], ["1/4", "3/4"])
    (tmp_path / "p.json").write_text("[0.5, NaN]")
    assert main(["check", *args]) == 2
    assert "[1] is 'NaN', not a finite decimal number" in capsys.readouterr().err


def test_bind_and_gate_in_the_kernel(tmp_path):
    verdict = checker.check_file(_files(tmp_path, [0.5, 0.5], ["1/4", "3/4"])[0])
    p, q = [(Fraction(1, 2), Fraction(1, 2))], [(Fraction(1, 4), Fraction(3, 4))]
    failure, binding = checker.bind(verdict.facts, p, q)
    assert failure == "" and binding == {"bound": ["p", "q"], "unread": [], "unbound": []}
    assert checker.gate(verdict.facts, binding) == []
    failure, binding = checker.bind(verdict.facts, q, q)
    assert failure == "certificate 0: p(0) is 1/2, but --target gives 1/4" and binding == {}
    assert (
        checker.bind(verdict.facts, p * 2, q * 3)[0]
        == "--target holds 2 rows and --draft 3; give the same number, or one row for all"
    )
    assert checker.bind(verdict.facts, p, [(Fraction(1),) * 1])[0] == "--target has V = 2 tokens and --draft V = 1"
    assert checker.gate(verdict.facts, {"bound": ["q"], "unbound": []}) == ["no p row was compared with --target"]


# ---------------------------------------------------------------- boundaries the mutation run found untested


def test_a_decimal_row_off_by_exactly_atol_is_accepted():
    # 0.5 + (0.5 + 2^-10) = 1 + 2^-10 exactly: off from 1 by atol, not more (--atol is a float, so a dyadic atol
    # is what the command line passes)
    row = checker.input_rows("[0.5, 0.5009765625]", "--target", Fraction(1, 1024))
    total = Fraction(1) + Fraction(1, 1024)
    assert row == [(Fraction(1, 2) / total, (Fraction(1, 2) + Fraction(1, 1024)) / total)]
    with pytest.raises(checker.Rejection) as info:
        checker.input_rows("[0.5, 0.5009765625]", "--target", Fraction(1, 2048))
    assert info.value.detail == "--target sums to 1025/1024, off from 1 by more than 1/2048"


def test_a_decimal_number_as_long_as_the_limit_is_read_and_one_longer_refused():
    at_limit = "0." + "0" * (checker.MAX_NUMBER_CHARS - 3) + "5"  # 5 10^-131070: rounds to 0
    assert len(at_limit) == checker.MAX_NUMBER_CHARS
    assert checker.input_rows(f"[1, {at_limit}]", "--target", ATOL) == [(Fraction(1), Fraction(0))]
    with pytest.raises(checker.Rejection) as info:
        checker.input_rows(f"[1, {at_limit}0]", "--target", ATOL)
    assert info.value.reason is checker.Reason.NOT_RATIONAL and "not a finite decimal number" in info.value.detail


def test_an_exponent_of_twelve_characters_is_read_and_one_of_thirteen_refused():
    # the exponent's sign counts: "-99999999999" is 12 characters, 10^-99999999999 rounds to 0
    assert checker.input_rows("[1, 1e-99999999999]", "--target", ATOL) == [(Fraction(1), Fraction(0))]
    assert checker.input_rows("[1, 0.0e99999999999]", "--target", ATOL) == [(Fraction(1), Fraction(0))]
    for text in ("[1, 1e-999999999999]", "[1, 1e+999999999999]"):
        with pytest.raises(checker.Rejection) as info:
            checker.input_rows(text, "--target", ATOL)
        assert info.value.detail == f"--target[1] is '{text[4:-1]}', not a finite decimal number"


@pytest.mark.parametrize(
    "text, value",
    [
        ("25e1", Fraction(250)),
        ("1E+0", Fraction(1)),
        ("0.1e1", Fraction(1)),
        ("5e-1", Fraction(1, 2)),
        ("0.0e5", Fraction(0)),
        ("1e22", Fraction(10**22)),  # the largest power of ten a float64 holds exactly
        ("1e23", Fraction(99999999999999991611392)),  # 10^23 rounded to nearest: below it
        ("1.7976931348623157e308", Fraction((2**53 - 1) * 2**971)),  # the largest float64
        ("4.9e-324", Fraction(1, 2**1074)),  # the least subnormal
        ("2.4703282292062328e-324", Fraction(1, 2**1074)),  # just above half of it: rounds up
        ("2.4703282292062327e-324", Fraction(0)),  # just below half of it: rounds to 0
    ],
)
def test_a_decimal_is_the_float64_nearest_to_it(text, value):
    # exponents of either sign and 0, as json.loads and Python's float read them
    assert Fraction(*checker._decimal_float64(text, "x")) == value == Fraction(float(text))


def test_integers_among_decimal_numbers_up_to_two_to_the_53_are_exact():
    assert checker._input_value(107, "x", True) == Fraction(107)
    assert checker._input_value(2**53, "x", True) == Fraction(2**53)  # a float64 holds 2^53
    with pytest.raises(checker.Rejection) as info:
        checker._input_value(2**53 + 1, "x", True)
    assert info.value.detail == "x is the integer 9007199254740993, which a float64 cannot hold exactly"
    assert checker._input_value(2**53 + 1, "x", False) == Fraction(2**53 + 1)  # exact rows: any integer


def _two_positions(p0, q0, p1, q1):
    bundle = build_bundle(
        [build_certificate(p0, q0, name="a"), build_certificate(p1, q1, name="b")], name="two", statement="s"
    )
    verdict = checker.check(json.dumps(bundle))
    assert verdict.valid and len(verdict.facts) == 2
    return verdict.facts


def test_bind_pairs_row_i_with_certificate_i_or_one_row_with_every_certificate():
    F = Fraction
    p0, p1, q0, q1 = (F(1, 2), F(1, 2)), (F(1, 3), F(2, 3)), (F(1, 4), F(3, 4)), (F(1, 5), F(4, 5))
    bound = {"bound": ["p", "q"], "unread": [], "unbound": []}
    facts = _two_positions(["1/2", "1/2"], ["1/4", "3/4"], ["1/3", "2/3"], ["1/4", "3/4"])
    assert checker.bind(facts, [p0, p1], [q0]) == ("", bound)  # one --draft row for both
    assert checker.bind(facts, [p0, p1], [q0, q0]) == ("", bound)  # two rows each
    assert checker.bind(facts, [p1, p0], [q0]) == ("certificate 0: p(0) is 1/2, but --target gives 1/3", {})
    # one row for every certificate only for a tree or block (the same pair at every position)
    assert checker.bind(facts, [p0], [q0])[0] == "the certificate holds 2 pair(s), --target and --draft give 1"
    facts = _two_positions(["1/2", "1/2"], ["1/4", "3/4"], ["1/2", "1/2"], ["1/5", "4/5"])
    assert checker.bind(facts, [p0], [q0, q1]) == ("", bound)  # one --target row for both
    assert checker.bind(facts, [p0], [q1, q0]) == ("certificate 0: q(0) is 1/4, but --draft gives 1/5", {})
    assert checker.bind(facts, [p0, p0, p0], [q0, q1, q0]) == (
        "the certificate holds 2 pair(s), --target and --draft give 3",
        {},
    )


def test_bind_refuses_a_chain_certificate():
    chain = build_chain_certificate(lambda s: ["1/2", "1/2"], lambda s: ["1/4", "3/4"], 1, name="one")
    verdict = checker.check(json.dumps(chain))
    assert verdict.valid and "law" not in verdict.facts[0]
    row, draft = [(Fraction(1, 2), Fraction(1, 2))], [(Fraction(1, 4), Fraction(3, 4))]
    assert checker.bind(verdict.facts, row, draft) == (
        "--target/--draft bind one-position certificates; a chain certificate holds many rows",
        {},
    )


def test_bind_reads_one_row_pair_at_every_position_of_a_tree():
    from specproof.certify.certificate import build_outcome_certificate
    from specproof.rules.audit import position_law
    from specproof.rules.policy import named_rule

    tree = build_outcome_certificate(
        position_law(["1/2", "1/2"], ["1/4", "3/4"], named_rule("standard")).tree, name="a", statement="s"
    )
    verdict = checker.check(json.dumps(build_bundle([tree, tree], name="two", statement="s")))
    assert verdict.valid and [f["reads"] for f in verdict.facts] == [["p", "q"], ["p", "q"]]
    p, q = [(Fraction(1, 2), Fraction(1, 2))], [(Fraction(1, 4), Fraction(3, 4))]
    bound = {"bound": ["p", "q"], "unread": [], "unbound": []}
    assert checker.bind(verdict.facts, p, q) == ("", bound)  # the one pair at both trees
    assert checker.bind(verdict.facts, p * 2, q * 2) == ("", bound)  # a pair for each tree
    assert checker.bind(verdict.facts, p * 3, q) == ("the certificate holds 2 pair(s), --target and --draft give 3", {})


def test_lossless_reads_the_claim_of_each_kind():
    assert checker.lossless({"claims": {"lossless": True}}) is True
    assert checker.lossless({"claims": {"dist_equals_p": True}}) is True
    assert checker.lossless({"claims": {"stream_equals_target_law": True}}) is True
    assert checker.lossless({"claims": {"lossless": False, "dist_equals_p": True}}) is False
    assert checker.lossless({"claims": {}}) is False


def test_gate_names_every_reason_a_document_does_not_certify_p():
    ok = {
        "claims": {"dist_equals_p": True},
        "schema": checker.CERTIFICATE_SCHEMA,
    }  # a one-position certificate: no reference
    tree = {"claims": {"lossless": True}, "schema": checker.OUTCOME_SCHEMA, "reference_source": "p"}
    lossy = {
        "claims": {"lossless": False},
        "schema": checker.OUTCOME_SCHEMA,
        "reference_source": "argmax of given row g",
        "stated": ["s1", "s2"],
        "given_reads": ["g1", "g2", "g3", "g4", "g5", "g6"],
    }
    assert checker.gate([ok], None) == [] and checker.gate([tree], None) == []
    assert checker.gate([lossy], None) == [
        "the certified verifier is not lossless",
        "its reference is argmax of given row g, not p",
        "the verdict depends on 2 stated value(s), not re-derived",
        "the tree reads given rows (g1, g2, g3, g4, g5), stated, not re-derived",
    ]
    assert checker.gate([ok, lossy], None)[:2] == [
        "certificate 1: the certified verifier is not lossless",
        "certificate 1: its reference is argmax of given row g, not p",
    ]
    assert checker.gate([ok], {"bound": ["p", "q"], "unbound": []}) == []
    assert checker.gate([ok], {"bound": ["p after [0]"], "unbound": []}) == []
    assert checker.gate([ok], {"bound": ["p"], "unbound": list("abcdef")}) == [
        "rows the tree reads are bound to nothing: a, b, c, d, e"
    ]
    assert checker.gate([ok], {"bound": ["q", "q after [0]"], "unbound": []}) == ["no p row was compared with --target"]
    assert checker.gate([ok], {}) == ["no p row was compared with --target"]


def test_bind_refuses_rows_longer_than_the_certificates_even_where_they_agree():
    verdict = checker.check(json.dumps(build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="g")))
    p, q = [(Fraction(1, 2), Fraction(1, 2), Fraction(0))], [(Fraction(1, 4), Fraction(3, 4), Fraction(0))]
    assert checker.bind(verdict.facts, p, q) == ("certificate 0: p has 2 tokens, --target has 3", {})
