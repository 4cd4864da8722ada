"""Tests for the trusted checker: valid certificates pass, every tampering is caught with
its reason, nothing crashes, and the module itself stays small and standard-library only."""

import ast
import copy
import json
from fractions import Fraction
from pathlib import Path

import pytest

from specproof import checker
from specproof.certify.certificate import build_bundle, build_certificate, dumps
from specproof.checker import Reason, check, check_file

SAMPLES = {
    "mixed": (["1/2", "1/4", "1/4", 0], ["1/4", "1/4", 0, "1/2"]),
    "equal": (["1/3", "2/3"], ["1/3", "2/3"]),
    "disjoint": ([1, 0], [0, 1]),
    "v1": ([1], [1]),
}


@pytest.fixture(params=sorted(SAMPLES))
def cert(request):
    p, q = SAMPLES[request.param]
    return build_certificate(p, q, name=request.param)


def test_valid_certificates_and_bundles_pass(cert):
    assert check(cert) == checker.Verdict(True, None, "re-verified 1 certificate(s)")
    assert check(dumps(cert)).valid
    assert check(dumps(cert).encode()).valid
    bundle = build_bundle([cert, cert], name="b", statement="s")
    assert check(bundle).valid and check(bundle).detail == "re-verified 2 certificate(s)"


def _mixed():
    return build_certificate(*SAMPLES["mixed"], name="mixed")


def _edit(fn):
    cert = _mixed()
    fn(cert)
    return cert


# Each tampering: (edit, expected reason, a piece of the expected detail)
TAMPERINGS = {
    "residual entry": (
        lambda c: c["rows"][0].update(residual="1/8"),
        Reason.RESIDUAL,
        "rows[0].residual: expected 1/4, claimed 1/8",
    ),
    "accept entry": (
        lambda c: c["rows"][3].update(accept="1/2"),
        Reason.ACCEPT,
        "rows[3].accept: expected 0/1, claimed 1/2",
    ),
    "emitted entry": (
        lambda c: c["rows"][1].update(emitted="1/5"),
        Reason.EMITTED,
        "rows[1].emitted: expected 1/4, claimed 1/5",
    ),
    "alpha off by 1/10^9": (
        lambda c: c["totals"].update(alpha=_plus(c["totals"]["alpha"], Fraction(1, 10**9))),
        Reason.TOTAL,
        "totals.alpha: expected 1/2, claimed 500000001/1000000000",
    ),
    "tv off": (lambda c: c["totals"].update(tv="1/3"), Reason.TOTAL, "totals.tv"),
    "normalizer off": (lambda c: c["totals"].update(normalizer="1/3"), Reason.TOTAL, "totals.normalizer"),
    "dropped row": (lambda c: c["rows"].pop(2), Reason.TOKENS, "vocab_size 4 but 3 rows"),
    "dropped row and vocab_size": (
        lambda c: (c["rows"].pop(1), c.update(vocab_size=3)),
        Reason.TOKENS,
        "rows[1] is token 2, expected token 1",
    ),
    "duplicated row": (
        lambda c: (c["rows"].append(copy.deepcopy(c["rows"][0])), c.update(vocab_size=5)),
        Reason.TOKENS,
        "rows[4] is token 0, expected token 4",
    ),
    "p sums to 1 + 1/n": (lambda c: c["rows"][2].update(p="9/28"), Reason.NOT_NORMALIZED, "p sums to 15/14, not 1"),
    "q sums to less than 1": (lambda c: c["rows"][3].update(q="1/3"), Reason.NOT_NORMALIZED, "q sums to 5/6, not 1"),
    "float where a rational belongs": (
        lambda c: c["rows"][0].update(p=0.5),
        Reason.NOT_RATIONAL,
        "rows[0].p is 0.5, not an 'n/d' string",
    ),
    "decimal string": (lambda c: c["rows"][0].update(q="0.25"), Reason.NOT_RATIONAL, "'0.25'"),
    "integer where a rational belongs": (lambda c: c["totals"].update(alpha=1), Reason.NOT_RATIONAL, "alpha"),
    "zero denominator": (lambda c: c["rows"][0].update(p="1/0"), Reason.NOT_RATIONAL, "zero denominator"),
    "negative mass": (
        lambda c: c["rows"][1].update(residual="-1/4"),
        Reason.NEGATIVE,
        "rows[1].residual is -1/4, which is negative",
    ),
    "swapped p/q columns": (
        lambda c: [r.update(p=r["q"], q=r["p"]) for r in c["rows"]],
        Reason.RESIDUAL,
        "rows[0].residual: expected 0/1, claimed 1/4",
    ),
    "unknown schema version": (
        lambda c: c.update(schema="specproof.certificate/2"),
        Reason.SCHEMA,
        "unknown schema 'specproof.certificate/2'",
    ),
    "missing totals": (lambda c: c.pop("totals"), Reason.MISSING_FIELD, "no field 'totals'"),
    "missing row field": (lambda c: c["rows"][0].pop("emitted"), Reason.MISSING_FIELD, "no field 'emitted'"),
    "claim flipped": (
        lambda c: c["claims"].update(dist_equals_p=False),
        Reason.CLAIM,
        "claims.dist_equals_p: expected True, claimed False",
    ),
    "claim not a bool": (
        lambda c: c["claims"].update(alpha_equals_one_minus_tv="yes"),
        Reason.MALFORMED,
        "not true/false",
    ),
    "token id a string": (lambda c: c["rows"][0].update(token="0"), Reason.TOKENS, "token '0'"),
    "rows not a list": (lambda c: c.update(rows={}), Reason.MALFORMED, "rows is not a non-empty list"),
}


def _plus(text, delta):
    x = Fraction(text) + delta
    return f"{x.numerator}/{x.denominator}"


@pytest.mark.parametrize("name", sorted(TAMPERINGS))
def test_tampering_is_caught(name):
    edit, reason, detail = TAMPERINGS[name]
    verdict = check(_edit(edit))
    assert not verdict.valid
    assert verdict.reason is reason, verdict
    assert detail in verdict.detail


def test_tampered_certificate_inside_a_bundle_names_its_index():
    good = _mixed()
    bad = _edit(TAMPERINGS["residual entry"][0])
    verdict = check(build_bundle([good, bad], name="b", statement="s"))
    assert verdict.reason is Reason.RESIDUAL
    assert verdict.detail.startswith("certificates[1].rows[0].residual")
    bundle = build_bundle([good], name="b", statement="s")
    bundle["count"] = 2
    assert check(bundle).reason is Reason.TOKENS


def test_a_lossy_law_claimed_lossless_is_rejected():
    # A consistent certificate of a verifier that forgot the residual would need emitted = accept;
    # the checker recomputes the law itself, so the claim fails on the emitted column.
    cert = _mixed()
    for row in cert["rows"]:
        row["emitted"] = row["accept"]
    assert check(cert).reason is Reason.EMITTED


def test_honest_certificate_of_a_false_claim_is_not_a_proof():
    cert = _mixed()
    cert["claims"]["dist_equals_p"] = False  # claims the law is not p: a false claim
    assert check(cert).reason is Reason.CLAIM


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{",
        dumps(_mixed())[:200],
        dumps(_mixed())[:-3],
        "[1, 2]",
        "null",
        '"x"',
        "NaN",
        '{"schema": "specproof.certificate/1"}',
        b"\xff\xfe",
        "[" * 100000 + "]" * 100000,
    ],
)
def test_malformed_input_never_crashes(text):
    verdict = check(text)
    assert not verdict.valid
    assert verdict.reason in (Reason.MALFORMED, Reason.MISSING_FIELD)


def test_truncated_and_missing_files(tmp_path):
    path = tmp_path / "cert.json"
    path.write_text(dumps(_mixed())[:-40], encoding="utf-8")
    assert check_file(path).reason is Reason.MALFORMED
    assert check_file(tmp_path / "nope.json").reason is Reason.UNREADABLE
    assert check_file(tmp_path).reason is Reason.UNREADABLE
    missing = check_file(tmp_path / "nope.json")
    assert not missing.valid and missing.detail.startswith("cannot read ") and missing.facts == ()


def test_nan_and_float_literals_in_json_are_not_rational():
    text = dumps(_mixed()).replace('"accept": "1/4"', '"accept": NaN', 1)
    assert check(text).reason is Reason.NOT_RATIONAL
    text = dumps(_mixed()).replace('"accept": "1/4"', '"accept": 0.25', 1)
    assert check(text).reason is Reason.NOT_RATIONAL


# ---------------------------------------------------------------- audit of the module itself

CHECKER_SOURCE = Path(checker.__file__).read_text(encoding="utf-8")
# the standard library only; fractions and itertools serve the outcome-tree primitives, collections
# (collections.abc) the type annotations
ALLOWED_IMPORTS = {
    "base64",
    "json",
    "re",
    "struct",
    "math",
    "typing",
    "dataclasses",
    "enum",
    "fractions",
    "itertools",
    "collections",
}
# imported for annotations only, under `if TYPE_CHECKING:` (never when the checker runs)
TYPE_CHECKING_IMPORTS = {"os"}


def _imports(nodes):
    imported = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, "no relative imports: the checker depends on nothing in specproof"
            imported.add(node.module.split(".")[0])
    return imported


def test_checker_imports_only_the_allow_list():
    tree = ast.parse(CHECKER_SOURCE)
    guarded = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    assert not any(node.orelse for node in guarded)
    type_only = _imports(n for node in guarded for stmt in node.body for n in ast.walk(stmt))
    assert type_only == TYPE_CHECKING_IMPORTS
    tree.body = [node for node in tree.body if node not in guarded]
    imported = _imports(ast.walk(tree))
    assert imported <= ALLOWED_IMPORTS, imported - ALLOWED_IMPORTS


def test_checker_has_no_float_literals_or_float_calls():
    tree = ast.parse(CHECKER_SOURCE)
    for node in ast.walk(tree):
        assert not (isinstance(node, ast.Constant) and isinstance(node.value, (float, complex))), node.lineno
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in {"float", "complex", "eval", "exec", "__import__"}, node.lineno
        if isinstance(node, ast.Attribute):
            assert node.attr not in {"from_float", "from_decimal", "fromhex"}, node.lineno


# ---------------------------------------------------------------- compact certificates

import base64  # noqa: E402

import numpy as np  # noqa: E402

from specproof.certify.certificate import build_compact_certificate  # noqa: E402


def _compact(v=300, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.ones(v) * 0.3)
    q = rng.dirichlet(np.ones(v) * 0.3)
    p[5] = 0.0
    p /= p.sum()
    return build_compact_certificate(p, q, name="compact", atol=1e-3, labels=[f"t{i}" for i in range(v)])


def _floats(cert, key):
    return np.frombuffer(base64.b64decode(cert["inputs"][key]), dtype="<f8").copy()


def _set_floats(cert, key, x):
    cert["inputs"][key] = base64.b64encode(np.asarray(x, dtype="<f8").tobytes()).decode()


def test_compact_certificate_is_valid_and_small():
    cert = _compact()
    assert cert["schema"] == "specproof.compact-certificate/2"
    assert 5 <= len(cert["rows"]) < 30
    assert 5 in [r["token"] for r in cert["rows"]]  # a zero of p is shown
    assert check(cert).valid


def _bump(cert, key, i, factor):
    x = _floats(cert, key)
    x[i] *= factor
    _set_floats(cert, key, x)


COMPACT_TAMPERINGS = {
    "one input float changed": (lambda c: _bump(c, "q", 0, 1 + 2**-40), Reason.INPUT),
    "a row's p differs from the inputs": (lambda c: c["rows"][0].update(p="1/3"), Reason.INPUT),
    "a row's residual": (lambda c: c["rows"][-1].update(residual="1/7"), Reason.RESIDUAL),
    "input sums off by more than atol": (
        lambda c: _bump(c, "p", int(np.argmax(_floats(c, "p"))), 1.5),
        Reason.NOT_NORMALIZED,
    ),
    "NaN input": (lambda c: _bump(c, "p", 1, float("nan")), Reason.NOT_RATIONAL),
    "negative input": (lambda c: _bump(c, "q", 1, -1.0), Reason.NEGATIVE),
    "dropped input entry": (lambda c: _set_floats(c, "p", _floats(c, "p")[:-1]), Reason.TOKENS),
    "not base64": (lambda c: c["inputs"].update(p="***"), Reason.MALFORMED),
    "rows out of order": (lambda c: c["rows"].reverse(), Reason.TOKENS),
    "row token beyond V": (lambda c: c["rows"][-1].update(token=300), Reason.TOKENS),
    "unknown encoding": (lambda c: c["inputs"].update(encoding="float32"), Reason.SCHEMA),
    "alpha off by 1/10^9": (
        lambda c: c["totals"].update(alpha=_plus(c["totals"]["alpha"], Fraction(1, 10**9))),
        Reason.TOTAL,
    ),
}


@pytest.mark.parametrize("name", sorted(COMPACT_TAMPERINGS))
def test_compact_tampering_is_caught(name):
    edit, reason = COMPACT_TAMPERINGS[name]
    cert = _compact()
    edit(cert)
    verdict = check(cert)
    assert verdict.reason is reason, verdict


def test_float_bits_are_decoded_exactly():
    values = [0.0, 5e-324, 2.2250738585072014e-308, 0.1, 1.0, 3.0, 2.0**60]
    bits = np.array(values, dtype="<f8").view("<u8").tolist()
    parts = [checker._float64_parts(b, "x") for b in bits]
    assert [Fraction(m) * Fraction(2) ** e for m, e in parts] == [Fraction(v) for v in values]
    assert checker._float64_parts(1 << 63, "x")[0] == 0  # -0.0 is zero
    # a row is made exact and divided by its exact sum; the raw sum is kept for the transcript
    text = base64.b64encode(np.array([0.25, 0.75, 5e-324], dtype="<f8").tobytes()).decode()
    row, raw_sum = checker._float_row(text, "x", 3)
    assert Fraction(raw_sum.num, raw_sum.den) == 1 + Fraction(5e-324)
    assert [Fraction(n, row.den) for n in row.nums] == [
        Fraction(x) / (1 + Fraction(5e-324)) for x in (0.25, 0.75, 5e-324)
    ]


def test_hostile_documents_are_rejected_without_crashing():
    base = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="t")
    huge = copy.deepcopy(base)
    huge["rows"][0]["p"] = f"1/{2**10000}"
    huge["rows"][1]["p"] = f"1/{3**6000}"
    verdict = check(huge)
    assert verdict.reason is Reason.NOT_NORMALIZED and "10001/19510 bits" in verdict.detail
    assert check(json.dumps(base).replace('"alpha": "', '"alpha": "9/10", "alpha": "', 1)).reason is Reason.MALFORMED
    extra = copy.deepcopy(base)
    extra["claims"]["lossless_for_every_gamma"] = True
    assert check(extra).reason is Reason.MALFORMED
    extra = copy.deepcopy(base)
    extra["totals"]["kl"] = "0/1"
    assert check(extra).reason is Reason.MALFORMED
    big_int = copy.deepcopy(base)
    big_int["vocab_size"] = 10**5000
    assert check(big_int).reason is Reason.TOKENS
    compact = _compact()
    compact["inputs"]["atol"] = "3/4"  # a document cannot choose its own tolerance
    assert check(compact).reason is Reason.MALFORMED


@pytest.mark.parametrize("token", ["1", None, 1.5, [1], {"a": 1}, True, -1, 300])
def test_a_compact_row_token_of_any_type_is_rejected_not_raised(token):
    cert = _compact()
    cert["rows"][1]["token"] = token
    verdict = check(cert)
    assert verdict.reason is Reason.TOKENS and "rows[1] is token" in verdict.detail


def test_zeros_in_a_float_row_do_not_widen_its_integers():
    # a zero's exponent (-1074) must not set the row's scale: 1/2 = 2^52 * 2^-53 and 1/4 = 2^52 * 2^-54
    # are 2^53 and 2^52 at the scale 2^-54, not numbers of 1000 bits
    text = base64.b64encode(np.array([0.5, 0.0, 0.25, 0.25], dtype="<f8").tobytes()).decode()
    row, raw_sum = checker._float_row(text, "x", 4)
    assert row == checker.Row([2**53, 0, 2**52, 2**52], 2**54) and Fraction(raw_sum.num, raw_sum.den) == 1


# ---------------------------------------------------------------- found by mutation testing (issue 14)


def test_a_verdict_is_a_frozen_hashable_value_whose_repr_omits_facts():
    verdict = check(_mixed())
    assert verdict.facts  # the recomputed facts are there ...
    assert "facts" not in repr(verdict)  # ... but not in its repr (they are large)
    assert hash(verdict) == hash(checker.Verdict(True, None, "re-verified 1 certificate(s)"))
    with pytest.raises(AttributeError):
        verdict.valid = False


def test_a_rejection_reads_as_its_detail():
    with pytest.raises(checker.Rejection) as caught:
        checker.parse("{")
    assert caught.value.reason is Reason.MALFORMED
    assert str(caught.value) == caught.value.detail != ""
    assert str(checker.Rejection(Reason.TOKENS, "row 3")) == "row 3"


def test_a_byte_order_mark_before_json_text_is_skipped():
    text = dumps(_mixed())
    assert check("\ufeff" + text).valid
    assert checker.parse("\ufeff[1]") == [1]
    assert checker.parse("\ufeff{}") == {}


def test_a_repeated_key_is_named_and_only_it():
    with pytest.raises(checker.Rejection) as caught:
        checker.parse('{"a": 1, "b": 2, "a": 3}')
    assert caught.value.reason is Reason.MALFORMED
    assert caught.value.detail == "a JSON object repeats the key(s) ['a']"


def test_a_lone_surrogate_in_a_key_is_rejected():
    for document in ('{"\\ud800": 1}', {"\ud800": 1}, [{"schema": {"\udc00": "x"}}]):
        verdict = check(document)
        assert verdict.reason is Reason.MALFORMED and "lone surrogate" in verdict.detail, document


def test_number_text_up_to_2_to_the_17_characters_is_read():
    longest = "0x1" + "0" * (2**17 - 7) + "/0x1"  # exactly 2^17 characters: 2^(4 (2^17 - 7))
    assert len(longest) == 131072
    assert checker._rational(longest, "x") == (1 << (4 * (2**17 - 7)), 1)
    with pytest.raises(checker.Rejection) as caught:
        checker._rational("0x10" + longest[3:], "x")  # one character more
    assert caught.value.reason is Reason.NOT_RATIONAL and "131073 characters: too many digits" in caught.value.detail


def test_a_decimal_number_past_the_digit_limit_is_rejected_not_raised():
    import sys

    limit = sys.get_int_max_str_digits()
    if not limit:
        pytest.skip("this Python has no limit on decimal digits")
    cert = _mixed()
    cert["totals"]["tv"] = "1" * (limit + 1) + "/1"
    verdict = check(cert)
    assert verdict.reason is Reason.NOT_RATIONAL and "too many digits" in verdict.detail


@pytest.mark.parametrize("size", [True, 0, -1, "1", 1.0])
def test_vocab_size_must_be_a_positive_integer(size):
    cert = build_certificate([1], [1], name="v1")
    assert check(cert).valid
    cert["vocab_size"] = size  # True == 1 and 1.0 == 1 would fit the one row
    verdict = check(cert)
    assert verdict.reason is Reason.TOKENS and verdict.detail == f"certificate has vocab_size {size!r}"


def test_float_bytes_that_are_not_whole_floats_are_rejected():
    cert = _compact(v=8)
    raw = base64.b64decode(cert["inputs"]["p"])
    cert["inputs"]["p"] = base64.b64encode(raw + b"\0\0\0").decode()  # still 8 floats by // 8
    verdict = check(cert)
    assert verdict.reason is Reason.MALFORMED and "not a whole number of 8-byte floats" in verdict.detail


def test_a_float_row_far_from_1_shows_its_exact_raw_sum():
    # every entry >= 2^52 has a float exponent >= 0: the raw sum is the integer 2^60 + 2^53
    text = base64.b64encode(np.array([2.0**60, 2.0**53], dtype="<f8").tobytes()).decode()
    with pytest.raises(checker.Rejection) as caught:
        checker._float_row(text, "x", 2)
    assert caught.value.reason is Reason.NOT_NORMALIZED
    assert caught.value.detail.startswith(f"x sums to {2**60 + 2**53}/1, off from 1")


def test_a_float_row_of_zeros_is_not_normalized():
    text = base64.b64encode(np.zeros(3, dtype="<f8").tobytes()).decode()
    with pytest.raises(checker.Rejection) as caught:
        checker._float_row(text, "x", 3)
    assert caught.value.reason is Reason.NOT_NORMALIZED and caught.value.detail.startswith("x sums to 0/1, off from 1")


def test_emitted_masses_are_checked_when_p_equals_q():
    # p == q: Z = 0, no residual draw; the emitted law is p itself and a wrong claim is caught
    cert = build_certificate(["1/3", "2/3"], ["1/3", "2/3"], name="equal")
    cert["rows"][0]["emitted"] = "1/2"
    verdict = check(cert)
    assert (
        verdict.reason is Reason.EMITTED and verdict.detail == "certificate.rows[0].emitted: expected 1/3, claimed 1/2"
    )


def test_compact_row_tokens_start_at_0_and_never_repeat():
    cert = _compact(v=8)
    assert [r["token"] for r in cert["rows"]] == list(range(8)) and check(cert).valid
    before = copy.deepcopy(cert)
    before["rows"].insert(0, dict(cert["rows"][-1], token=-1))  # token -1 carrying token 7's values
    verdict = check(before)
    assert verdict.reason is Reason.TOKENS and "rows[0] is token -1" in verdict.detail
    twice = copy.deepcopy(cert)
    twice["rows"].insert(3, copy.deepcopy(cert["rows"][2]))  # token 2 listed twice
    verdict = check(twice)
    assert verdict.reason is Reason.TOKENS and "rows[3] is token 2, expected a token above 2" in verdict.detail


def test_values_in_messages_are_reduced_cut_or_described_by_size():
    R_ = checker.Ratio
    assert checker._show(R_(2, 4)) == "1/2" and checker._show(Fraction(6, 9)) == "2/3"
    assert checker._show(R_(0, 5)) == "0/1"
    assert checker._show(R_(2**255, 1)) == f"{2**255}/1"  # 256 bits: written out (79 characters)
    assert checker._show(R_(2**256, 1)) == "a rational of 257/1 bits"
    assert checker._show(R_(1, 2**256)) == "a rational of 1/257 bits"
    assert checker._show(2**255) == str(2**255)
    assert checker._show(2**256) == "an integer of 257 bits"
    assert checker._show(True) == "True" and checker._show("x") == "'x'"
    assert checker._cut("a" * 80) == "a" * 80
    assert checker._cut("a" * 81) == "a" * 80 + "..."
    assert checker._show(R_(10**40 + 1, 10**41)) == f"{10**40 + 1}/{10**41}"[:80] + "..."


def test_documents_of_every_input_type():
    text = dumps(_mixed())
    for document in (text, text.encode(), bytearray(text.encode()), json.loads(text)):
        assert check(document) == checker.Verdict(True, None, "re-verified 1 certificate(s)")
    nested = "[" * 100_000 + "]" * 100_000
    for document in (nested, nested.encode()):
        assert check(document) == checker.Verdict(False, Reason.MALFORMED, "nested too deeply")


@pytest.mark.parametrize("certificates", [[], {}, "x"])
def test_a_bundle_of_no_certificates_is_malformed(certificates):
    bundle = build_bundle([_mixed()], name="b", statement="s")
    bundle.update(certificates=certificates, count=0)
    verdict = check(bundle)
    assert verdict == checker.Verdict(False, Reason.MALFORMED, "bundle.certificates is not a non-empty list")


def test_a_deeply_nested_value_given_as_an_object_is_rejected_not_raised():
    deep = []
    for _ in range(100_000):
        deep = [deep]
    # the checker reaches it only to describe it in a message (repr recurses)
    verdict = check({"schema": checker.CERTIFICATE_SCHEMA, "vocab_size": deep})
    assert verdict == checker.Verdict(False, Reason.MALFORMED, "nested too deeply") and not verdict.valid


def test_a_position_over_a_wide_denominator_is_not_bound_by_the_trees_mass_limit():
    """The textbook position's tree is the kernel's own: its masses (products of a few of p's and
    q's numbers: alpha's coin is sum(accept) q.den / (D sum(q)), here over 300,000 bits) are
    bounded by the rows' budget, not by MAX_MASS_BITS."""
    from specproof.report.transcript import exact_text

    a, b = 3**63000, 5**43000  # about 100,000 bits each: D = a b, and the coin's den a b b
    p, q = [Fraction(1, a), Fraction(a - 1, a)], [Fraction(1, b), Fraction(b - 1, b)]
    accept, residual = [min(x, y) for x, y in zip(p, q)], [max(x - y, 0) for x, y in zip(p, q)]
    rows = [
        {
            "token": t,
            "p": exact_text(p[t]),
            "q": exact_text(q[t]),
            "accept": exact_text(accept[t]),
            "residual": exact_text(residual[t]),
            "emitted": exact_text(p[t]),
        }
        for t in range(2)
    ]
    alpha = sum(accept)
    cert = {
        "schema": checker.CERTIFICATE_SCHEMA,
        "name": "wide",
        "vocab_size": 2,
        "rows": rows,
        "totals": {
            "alpha": exact_text(alpha),
            "tv": exact_text(1 - alpha),
            "normalizer": exact_text(sum(residual)),
            "rejection": exact_text(1 - alpha),
        },
        "claims": {"alpha_equals_one_minus_tv": True, "dist_equals_p": True},
    }
    verdict = check(cert)
    assert verdict.valid and verdict.facts[0]["claims"]["dist_equals_p"], verdict
    assert (a * b * b).bit_length() > checker.MAX_MASS_BITS


@pytest.mark.slow
def test_checker_is_clean_under_mypy_strict(tmp_path):
    # CI's `mypy` step checks the same on every run, through pyproject.toml's override for
    # specproof.checker; this runs --strict on the file alone (about 4 s, so in the slow run;
    # skipped where mypy is not installed)
    api = pytest.importorskip("mypy.api")
    out, err, status = api.run(["--strict", "--python-version", "3.11", "--cache-dir", str(tmp_path), checker.__file__])
    assert (status, err) == (0, ""), out + err
    assert out.startswith("Success: no issues found in 1 source file"), out
