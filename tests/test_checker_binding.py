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
from specproof.certify.certificate import build_certificate, write
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
        ("[-0.5, 1.5]", checker.Reason.NEGATIVE, "negative"),
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
