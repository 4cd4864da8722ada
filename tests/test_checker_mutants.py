"""Tests that kill the checker's mutants no other test caught (issue 14, the re-score after the
outcome-certificate rewrite): each one pins a value or a rejection reason on an input where the
mutated rule and the checker's rule differ. Values are hand-derived; exact ones compared with ==.

`python benchmarks/mutation.py checker --match ':: FUNCTION ::'` runs one function's mutants."""

import json
from fractions import Fraction as F

import pytest

from specproof import checker

R = checker.Reason
ALWAYS = {"choice": {"condition": ["always"]}}


def _ratio(value):
    """An "n/d" string (hexadecimal past 64 bits, as decimal text stops at 4300 digits)."""
    value = F(value)
    if max(value.numerator, value.denominator).bit_length() > 64:
        return f"{value.numerator:#x}/{value.denominator:#x}"
    return f"{value.numerator}/{value.denominator}"


def _outcome(rows, branches, law, totals, lossless=False, size=None, reference="p", nodes=None):
    """An outcome certificate: ``rows`` name -> recipe or (recipe, values); one root node with
    ``branches`` (event, probability, child) unless ``nodes`` is given."""
    spec = {}
    for name, row in rows.items():
        recipe, values = row if isinstance(row, tuple) else (row, None)
        spec[name] = {"recipe": recipe} if values is None else {"recipe": recipe, "values": [_ratio(v) for v in values]}
    if nodes is None:
        nodes = [
            {
                "label": "root",
                "reach": "1/1",
                "branches": [
                    {"event": event, "probability": _ratio(probability), "child": child}
                    for event, probability, child in branches
                ],
            }
        ]
    size = len(law) if size is None else size
    return {
        "schema": checker.OUTCOME_SCHEMA,
        "vocab_size": size,
        "reference": reference,
        "rows": spec,
        "nodes": nodes,
        "law": [_ratio(v) for v in law],
        "totals": {k: _ratio(v) for k, v in totals.items()},
        "claims": {"lossless": lossless},
    }


def _leaf(token, accepted=True):
    return {"leaf": [token, accepted]}


def _input(name, values):
    return ["input", name], values


def _facts(verdict):
    assert verdict.valid, verdict
    return verdict.facts[0]


def _fractions(ratios):
    return [F(r.num, r.den) for r in ratios]


# ---------------------------------------------------------------- _derive


def test_a_positive_part_keeps_the_inputs_common_denominator_up_to_the_row_bit_limit():
    """positive-part a b is over lcm(a.den, b.den) (its floor 0 is 0/1, adding no factor): with p
    and q over one odd D of exactly MAX_ROW_BITS = 2^14 bits the derived row is within the limit;
    a floor of 0/2 (floor-difference) doubles D, one bit past the limit."""
    d = 2**2**14 - 1
    p, q = [F(1, d), 1 - F(1, d)], [F(2, d), 1 - F(2, d)]
    rows = {"p": _input("p", p), "q": _input("q", q), "pp": ["positive-part", "p", "q"]}
    doc = _outcome(rows, [(ALWAYS, 1, _leaf(0))], [1, 0], {"alpha": 1, "out_of_range": 0, "tv": 1 - F(1, d)})
    facts = _facts(checker.check(doc))
    assert facts["rows"]["pp"] == [checker.Ratio(0, d), checker.Ratio(1, d)]
    assert d.bit_length() == 16384
    doc["rows"]["pp"] = {"recipe": ["floor-difference", "p", "q", "0/2"]}
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED, verdict
    assert verdict.detail == (
        "certificate.rows.pp: a row over a common denominator of 16385 bits "
        "(outcome certificates hold rows up to 16384 bits)"
    )


# ---------------------------------------------------------------- the rows an event reads

P2, Q2, PROPOSAL2 = [F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)], [F(1, 3), F(2, 3)]
INPUTS2 = {"p": _input("p", P2), "q": _input("q", Q2), "proposal": _input("proposal", PROPOSAL2)}


def _coin(lower=None, upper=None):
    return {"coin": {"model": "continuous", "lower": lower, "upper": upper}}


@pytest.mark.parametrize(
    "branches,law,reads",
    [
        # draw from q: law q, TV(q, p) = 1/4
        (
            [
                ({"draw": {"row": "q", "token": 0}}, F(1, 4), _leaf(0)),
                ({"draw": {"row": "q", "token": 1}}, F(3, 4), _leaf(1)),
            ],
            [F(1, 4), F(3, 4)],
            ["p", "q"],
        ),
        # a choice on q: q[0] > 0 always holds
        ([({"choice": {"condition": ["positive", "q", 0]}}, 1, _leaf(0))], [1, 0], ["p", "q"]),
        # a coin below the cdf of q at 0 (1/4), and above it
        (
            [
                (_coin(upper={"source": ["cdf", "q", 0], "strict": True}), F(1, 4), _leaf(0)),
                (_coin(lower={"source": ["cdf", "q", 0], "strict": True}), F(3, 4), _leaf(1)),
            ],
            [F(1, 4), F(3, 4)],
            ["p", "q"],
        ),
        # a coin below proposal[0] / q[0] = 4/3: both rows of the ratio are read
        (
            [(_coin(upper={"source": ["ratio", "proposal", "q", 0], "strict": True}), 1, _leaf(0))],
            [1, 0],
            ["p", "proposal", "q"],
        ),
        # the same with the rows' roles exchanged: q[0] / proposal[0] = 3/4
        (
            [
                (_coin(upper={"source": ["ratio", "q", "proposal", 0], "strict": True}), F(3, 4), _leaf(0)),
                (_coin(lower={"source": ["ratio", "q", "proposal", 0], "strict": True}), F(1, 4), _leaf(1)),
            ],
            [F(3, 4), F(1, 4)],
            ["p", "proposal", "q"],
        ),
        # reading only p (the reference): no other input is named
        ([(ALWAYS, 1, _leaf(0))], [1, 0], ["p"]),
    ],
)
def test_the_facts_name_every_input_row_an_event_reads(branches, law, reads):
    tv = sum(abs(e - r) for e, r in zip(law, P2)) / 2
    doc = _outcome(INPUTS2, branches, law, {"alpha": 1, "out_of_range": 0, "tv": tv})
    facts = _facts(checker.check(doc))
    assert facts["reads"] == reads
    assert facts["reference_source"] == "p"
    assert _fractions(facts["law"]) == law


def test_the_facts_name_both_rows_a_race_reads():
    """Given 0 wins the race on q = [1/4, 3/4] (E_1 > 3 E_0), it wins the race on proposal =
    [1/3, 2/3] (E_1 > 2 E_0) with the same clocks: probability 1."""
    race = {"race": {"first": "q", "given": 0, "second": "proposal", "winner": 0}}
    doc = _outcome(INPUTS2, [(race, 1, _leaf(0))], [1, 0], {"alpha": 1, "out_of_range": 0, "tv": F(1, 2)})
    assert _facts(checker.check(doc))["reads"] == ["p", "proposal", "q"]


# ---------------------------------------------------------------- the race's size limits


def _race_rows(first_bits, second_bits):
    """Given rows a and b over odd denominators of exactly these many bits."""
    rows = {"p": _input("p", P2)}
    for name, bits in (("a", first_bits), ("b", second_bits)):
        d = 2**bits - 1
        rows[name] = (["given"], [F(1, d), 1 - F(1, d)])
    return rows


def _race_doc(first_bits, second_bits):
    # with equal bits a = b, the same race: 1 wins the second race iff it wins the first (probability 1)
    race = {"race": {"first": "a", "given": 1, "second": "b", "winner": 1}}
    return _outcome(
        _race_rows(first_bits, second_bits),
        [(race, 1, _leaf(0))],
        [1, 0],
        {"alpha": 1, "out_of_range": 0, "tv": F(1, 2)},
    )


def test_a_race_on_rows_of_exactly_max_race_bits_is_checked():
    bits = checker.MAX_RACE_BITS
    assert bits == 256
    facts = _facts(checker.check(_race_doc(bits, bits)))
    assert facts["given"] == ["a", "b"] and facts["reads"] == ["p"]


@pytest.mark.parametrize("first_bits,second_bits", [(256, 257), (257, 256), (8, 257), (257, 8)])
def test_a_race_on_a_row_of_more_than_max_race_bits_is_refused(first_bits, second_bits):
    """Either row past the limit refuses the race (the larger denominator decides)."""
    verdict = checker.check(_race_doc(first_bits, second_bits))
    assert verdict.reason is R.MALFORMED, verdict
    assert verdict.detail == (
        "certificate.nodes[0].branches[0].event: races are checked up to V = 32 and rows over denominators of 256 bits"
    )


# ---------------------------------------------------------------- the reference row

P_REF = [F(1, 4), F(3, 4)]
REF_ROWS = {
    "p": _input("p", P_REF),
    "q": _input("q", [F(1, 2), F(1, 2)]),
    "cp": ["copy", "p"],
    "am": ["one-hot-argmax", "p"],
    "amc": ["one-hot-argmax", "cp"],
    "cam": ["copy", "am"],
    "g": (["given"], [F(1, 5), F(4, 5)]),
    "np": ["normalized", "p"],
    "pp": ["positive-part", "p", "q"],
    "wp": ["without", "p", [0]],
    "fp": ["floor-difference", "p", "q", "0/1"],
    "un": ["uniform"],
}
REF_VALUES = {"p": P_REF, "cp": P_REF, "am": [0, 1], "amc": [0, 1], "cam": [0, 1], "g": [F(1, 5), F(4, 5)]}


def _reference_doc(reference):
    values = REF_VALUES.get(reference, P_REF)
    tv = (abs(1 - values[0]) + values[1]) / 2  # the law [1, 0]
    return _outcome(
        REF_ROWS, [(ALWAYS, 1, _leaf(0))], [1, 0], {"alpha": 1, "out_of_range": 0, "tv": tv}, reference=reference
    )


@pytest.mark.parametrize(
    "reference,source",
    [
        ("p", "p"),
        ("cp", "p"),
        ("am", "argmax of p"),
        ("amc", "argmax of p"),
        ("cam", "argmax of p"),
        ("g", "given row g"),
    ],
)
def test_the_reference_source_says_how_it_derives_from_p(reference, source):
    facts = _facts(checker.check(_reference_doc(reference)))
    assert facts["reference_source"] == source
    assert _fractions(facts["reference"]) == REF_VALUES[reference]


@pytest.mark.parametrize("reference", ["np", "pp", "wp", "fp", "un", "q"])
def test_a_reference_derived_by_another_recipe_is_refused(reference):
    """normalized p equals p here, and positive-part p q, without p [0] and floor-difference
    p q read p first: none is p, a copy of it or its argmax."""
    verdict = checker.check(_reference_doc(reference))
    assert verdict.reason is R.MALFORMED, verdict
    assert verdict.detail == "certificate.reference must be p, a copy or the argmax of p, or a given row"


# ---------------------------------------------------------------- work linear in the document


def test_the_rows_an_event_reads_are_found_once_each_in_a_diamond_of_recipes():
    """d_k = positive-part d_(k-1) d_(k-1): 2^76 paths from d_76 down to p, 78 rows. V = 1 and
    61 branches allow 16 + 61 derived rows; the choice "d_76 is zero at 0" holds (p - p = 0). A
    walk of the recipes that visits a row once per path never ends: no timer here (no test depends
    on the machine's speed); the mutation tool's timeout counts such a mutant killed."""
    depth = 76
    rows = {"p": _input("p", [1]), "d0": ["copy", "p"]}
    rows.update({f"d{k}": ["positive-part", f"d{k - 1}", f"d{k - 1}"] for k in range(1, depth + 1)})
    zero_top = {"choice": {"condition": ["zero", f"d{depth}", 0]}}
    never = {"choice": {"condition": ["zero", "p", 0]}}
    branches = [(zero_top, 1, _leaf(0))] + [(never, 0, _leaf(0))] * 60
    doc = _outcome(rows, branches, [1], {"alpha": 1, "out_of_range": 0, "tv": 0}, lossless=True)
    facts = _facts(checker.check(doc))
    assert facts["reads"] == ["p"] and facts["rows"][f"d{depth}"] == [checker.Ratio(0, 1)]


# ---------------------------------------------------------------- the third review's limits (issue 18)


def _const(value, strict):
    return {"source": ["const", _ratio(value)], "strict": strict}


def _four_coins():
    """One node, four coins on [0, 1/2), [1/2, 5/6), [5/6, 41/42), [41/42, 1]: probabilities 1/2,
    1/3, 1/7, 1/42 as the checker re-derives them (1/2, 4/12, 36/252, 1/42 unreduced)."""
    cuts = [F(1, 2), F(5, 6), F(41, 42)]
    branches = [
        (_coin(upper=_const(cuts[0], True)), F(1, 2), _leaf(0)),
        (_coin(lower=_const(cuts[0], False), upper=_const(cuts[1], True)), F(1, 3), _leaf(1)),
        (_coin(lower=_const(cuts[1], False), upper=_const(cuts[2], True)), F(1, 7), _leaf(2)),
        (_coin(lower=_const(cuts[2], False)), F(1, 42), _leaf(3)),
    ]
    law = [F(1, 2), F(1, 3), F(1, 7), F(1, 42)]
    return _outcome({"p": _input("p", law)}, branches, law, {"alpha": 1, "out_of_range": 0, "tv": 0}, lossless=True)


def test_a_node_sum_past_the_mass_limit_is_rejected_inside_the_sum(monkeypatch):
    """_sum merges [1/2, 4/12] (den 24) and [36/252, 1/42] (den 10584, 14 bits) first: at
    MAX_MASS_BITS = 10 the larger is rejected there, naming its 14 bits; every single mass (dens up
    to 252) is within the limit. At 18 bits the node's whole sum (den 254016, 18 bits) is."""
    doc = _four_coins()
    assert checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 10)
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED
    assert verdict.detail == (
        "certificate.nodes[0].branches: a mass over a denominator of 14 bits "
        "(outcome and block trees hold masses up to 10 bits)"
    )
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 18)  # the node's sum passes (the TV's sum, 25 bits, does not)
    assert checker.check(doc).detail.startswith("certificate.totals.tv: a mass over a denominator of 25 bits")
    monkeypatch.setattr(checker, "MAX_MASS_BITS", 17)
    assert checker.check(doc).detail.startswith("certificate.nodes[0].branches: a mass over a denominator of 18 bits")


def _rows_bits(doc):
    """What the rows of a checked outcome certificate hold: V x max(1, bits of each row's den)."""
    facts = checker.check(doc).facts[0]
    return sum(len(row) * max(1, row[0].den.bit_length()) for row in facts["rows"].values())


def _rows_budget_is_exact(doc, monkeypatch, row=None):
    """With the budget exactly the rows' V x bits (stated characters free) ``doc`` passes; with one
    bit less it is rejected (at the row ``row``, when given). Returns the bits needed."""
    need = _rows_bits(doc)
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 0)
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need)
    assert checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - 1)
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED and "the rows hold more than" in verdict.detail, verdict
    if row is not None:
        assert verdict.detail.startswith(f"certificate.rows.{row}: the rows hold more than"), verdict
    return need


def test_the_rows_budget_is_exact(monkeypatch):
    """MAX_TABLE_BITS + STATED_ROW_BITS_PER_CHAR x (characters of stated values): a document
    needing exactly the budget passes, one bit more is rejected; the stated characters count."""
    p = [F(1, 3), F(2, 3)]
    doc = _outcome(
        {"p": _input("p", p), "c": ["copy", "p"], "u": ["uniform"], "g": (["given"], [F(1, 5), F(4, 5)])},
        [
            ({"draw": {"row": "c", "token": 0}}, F(1, 3), _leaf(0)),
            ({"draw": {"row": "c", "token": 1}}, F(2, 3), _leaf(1)),
        ],
        p,
        {"alpha": 1, "out_of_range": 0, "tv": 0},
        lossless=True,
    )
    need = _rows_bits(doc)  # p 2 x 2, c 2 x 2, u 2 x 2, g 2 x 3 bits
    assert need == 18
    chars = len("1/3") + len("2/3") + len("1/5") + len("4/5")
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 0)
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need)
    assert checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - 1)
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED and "the rows hold more than" in verdict.detail
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - chars)  # the characters pay the rest
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 1)
    assert checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - chars - 1)
    assert not checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - 2 * chars)
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 2)
    assert checker.check(doc).valid


def test_the_position_budget_is_exact(monkeypatch):
    """V x bits(lcm(p, q)) against MAX_TABLE_BITS + STATED_ROW_BITS_PER_CHAR x characters of p, q."""
    from specproof.certify.certificate import build_certificate

    doc = build_certificate(["1/2", "1/4", "1/4"], ["1/3", "1/3", "1/3"], name="budget")
    need = 3 * (12).bit_length()  # V = 3, lcm(4, 3) = 12: 4 bits
    chars = sum(len(row[k]) for row in doc["rows"] for k in "pq")
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 0)
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need)
    assert checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - 1)
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED and verdict.detail == (
        "certificate: p and q over a common denominator of 4 bits at V = 3: more than 11 + 0 x (characters of p "
        "and q) bits"
    )
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - chars)
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 1)
    assert checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - chars - 1)
    assert not checker.check(doc).valid
    monkeypatch.setattr(checker, "MAX_TABLE_BITS", need - 2 * chars)
    monkeypatch.setattr(checker, "STATED_ROW_BITS_PER_CHAR", 2)
    assert checker.check(doc).valid


def test_a_mass_at_the_limit_passes():
    """_bounded_mass: a denominator of exactly MAX_MASS_BITS bits is allowed, one more is not."""
    assert checker._bounded_mass(checker.Ratio(1, 2 ** (checker.MAX_MASS_BITS - 1)), "w")
    with pytest.raises(checker.Rejection):
        checker._bounded_mass(checker.Ratio(1, 2**checker.MAX_MASS_BITS), "w")


def test_progress_is_called_once_per_certificate():
    from specproof.certify.certificate import build_bundle, build_certificate

    one = build_certificate(["1/2", "1/2"], ["1/4", "3/4"], name="one")
    calls = []
    assert checker.check(one, progress=lambda: calls.append(1)) and calls == [1]
    calls.clear()
    bundle = json.loads(json.dumps(build_bundle([one, one, one], name="b", statement="s")))
    assert checker.check(bundle, progress=lambda: calls.append(1)) and calls == [1, 1, 1]
    calls.clear()
    bundle["certificates"][1]["totals"]["alpha"] = "1/9"
    assert not checker.check(bundle, progress=lambda: calls.append(1)) and calls == [1]


@pytest.mark.parametrize(
    "recipe",
    [
        ["uniform"],
        ["copy", "p"],
        ["normalized", "p"],
        ["one-hot-argmax", "p"],
        ["times-capped-ratio", "p", "q", "p", 0],
        ["times-capped-ratio", "p", "p", "q", 0],
        ["scaled", "p", "1/7"],
        ["without", "p", [0]],
        ["minimum", "p", "q"],
        ["positive-part", "p", "q"],
        ["floor-difference", "p", "q", "1/11"],
    ],
)
def test_every_derived_row_is_counted_in_the_rows_budget(recipe, monkeypatch):
    """Each recipe reports its row's denominator to the budget before the row is built: with the
    budget exactly the rows' V x bits the document passes, one bit less it is rejected at that row."""
    p, q = [F(1, 3), F(2, 3)], [F(1, 2), F(1, 2)]
    doc = _outcome(
        {"p": _input("p", p), "q": _input("q", q), "d": recipe},
        [
            ({"draw": {"row": "p", "token": 0}}, F(1, 3), _leaf(0)),
            ({"draw": {"row": "p", "token": 1}}, F(2, 3), _leaf(1)),
        ],
        p,
        {"alpha": 1, "out_of_range": 0, "tv": 0},
        lossless=True,
    )
    _rows_budget_is_exact(doc, monkeypatch)


# ---------------------------------------------------------------- the limits at their values


def test_the_position_budget_at_its_real_limits():
    """A certificate/1 over a dyadic denominator of 2^14000 (14001 bits) at V tokens: the law may
    hold V x 14001 bits up to 2^25 + 32 x (characters of p and q). V = 2400 is within it and
    checks; V = 2500 is over it and is rejected before the law is built."""
    from specproof.certify.certificate import build_certificate

    def doc(v):
        d = 2**14000
        p = [F(1, d), 1 - F(1, d)] + [F(0)] * (v - 2)
        q = [F(1, 2), F(1, 2)] + [F(0)] * (v - 2)
        return build_certificate(p, q, name="budget")

    small = doc(2400)
    chars = sum(len(row[k]) for row in small["rows"] for k in "pq")
    assert 2400 * 14001 <= 2**25 + 32 * chars
    assert checker.check(small).valid
    big = doc(2500)
    chars = sum(len(row[k]) for row in big["rows"] for k in "pq")
    assert 2500 * 14001 > 2**25 + 32 * chars
    verdict = checker.check(big)
    assert verdict.reason is R.MALFORMED
    assert verdict.detail == (
        "certificate: p and q over a common denominator of 14001 bits at V = 2500: more than "
        "33554432 + 32 x (characters of p and q) bits"
    )


@pytest.mark.parametrize(
    "name,largest,halfway",
    [
        ("float16", 2**16 - 2**5, 2**16 - 2**4),  # 65504, and 65520
        ("bfloat16", 2**128 - 2**120, 2**128 - 2**119),
        ("float32", 2**128 - 2**104, 2**128 - 2**103),
        ("float64", 2**1024 - 2**971, 2**1024 - 2**970),
    ],
)
def test_each_float_format_overflows_at_its_own_largest_value(name, largest, halfway):
    """The largest finite value (2 - 2^(1 - precision)) 2^emax is kept; a value below the halfway
    point to 2^(emax + 1) rounds to it; the halfway point rounds to even, 2^(emax + 1): +inf (None)."""
    fmt = checker.FLOAT_FORMATS[name]
    got = checker._round_float(checker.Ratio(largest, 1), fmt)
    assert F(got.num, got.den) == largest
    got = checker._round_float(checker.Ratio(2 * halfway - 1, 2), fmt)
    assert F(got.num, got.den) == largest
    assert checker._round_float(checker.Ratio(halfway, 1), fmt) is None


def test_a_minimum_of_a_row_listed_after_it():
    """Rows are derived in the order of their dependencies, not as listed: ``minimum pp q`` before
    ``pp = positive-part p q``. p = (1/2, 1/2), q = (1/4, 3/4): pp = (1/4, 0), min(pp, q) = (1/4, 0)."""
    p, q = [F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]
    rows = {"p": _input("p", p), "q": _input("q", q), "m": ["minimum", "pp", "q"], "pp": ["positive-part", "p", "q"]}
    doc = _outcome(
        rows,
        [
            ({"draw": {"row": "p", "token": 0}}, F(1, 2), _leaf(0)),
            ({"draw": {"row": "p", "token": 1}}, F(1, 2), _leaf(1)),
        ],
        p,
        {"alpha": 1, "out_of_range": 0, "tv": 0},
        lossless=True,
    )
    facts = _facts(checker.check(doc))
    assert _fractions(facts["rows"]["m"]) == [F(1, 4), F(0)]
    assert _fractions(facts["rows"]["pp"]) == [F(1, 4), F(0)]
    doc["rows"]["m"]["recipe"] = ["minimum", "m", "q"]
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED and verdict.detail == "certificate.rows.m depends on itself through m"


@pytest.mark.parametrize(
    "name,smallest",
    [("float16", 2**-24), ("bfloat16", F(1, 2**133)), ("float32", F(1, 2**149)), ("float64", F(1, 2**1074))],
)
def test_each_float_format_underflows_below_its_own_smallest_subnormal(name, smallest):
    """The smallest subnormal 2^(emin - precision + 1) is kept, 3/4 of it rounds up to it, and half
    of it (halfway to 0) rounds to even: 0."""
    fmt = checker.FLOAT_FORMATS[name]
    smallest = F(smallest)

    def rounded(x):
        got = checker._round_float(checker.Ratio(x.numerator, x.denominator), fmt)
        return F(got.num, got.den)

    assert rounded(smallest) == smallest and rounded(3 * smallest / 4) == smallest
    assert rounded(smallest / 2) == 0


# ---------------------------------------------------------------- the kernel's second half (issue 21 item 3)


def _draws_p(rows, p, **kwargs):
    """An outcome certificate over ``rows`` whose tree draws from p: valid, lossless."""
    return _outcome(
        rows,
        [({"draw": {"row": "p", "token": t}}, x, _leaf(t)) for t, x in enumerate(p)],
        p,
        {"alpha": 1, "out_of_range": 0, "tv": 0},
        lossless=True,
        **kwargs,
    )


def test_float_normalized_divides_by_the_float_sum():
    """fl(a_i / fl-sum(a)): the given row (1/4, 1/4) becomes (1/2, 1/2); (1/3, 1/3, 1/6) in
    float32 is divided by its float32 sum fl(fl(1/3) + fl(1/3)) + fl(1/6) rounded each step."""
    from specproof.laws.floats import FORMATS

    p = [F(1, 2), F(1, 2)]
    doc = _draws_p(
        {"p": _input("p", p), "g": (["given"], [F(1, 4), F(1, 4)]), "n": ["float-normalized", "g", "float32"]}, p
    )
    assert _fractions(_facts(checker.check(doc))["rows"]["n"]) == [F(1, 2), F(1, 2)]
    third = [F(1, 3), F(1, 3), F(1, 6)]
    doc = _draws_p(
        {"p": _input("p", [F(1, 3)] * 3), "g": (["given"], third), "n": ["float-normalized", "g", "float32"]},
        [F(1, 3)] * 3,
    )
    fmt = FORMATS["float32"]
    total = fmt.sum(third)
    want = [fmt.round(x / total) for x in third]
    assert _fractions(_facts(checker.check(doc))["rows"]["n"]) == want


def test_a_row_with_mass_at_its_last_token_only_is_divided_by_both_recipes():
    """(0, 1/4): its mass is not 0 (only its last running sum says so), so both float recipes divide it
    by its float sum 1/4, giving (0, 1), and never keep it as a row of mass 0."""
    p = [F(1, 2), F(1, 2)]
    for recipe in (
        ["float-normalized", "g", "float32"],
        ["float-divided", "g", "float32", ["left-to-right", "float32"]],
    ):
        doc = _draws_p({"p": _input("p", p), "g": (["given"], [F(0), F(1, 4)]), "n": recipe}, p)
        assert _fractions(_facts(checker.check(doc))["rows"]["n"]) == [F(0), F(1)], recipe


def test_a_float_sum_of_zero_is_refused_by_both_recipes():
    """(2^-30, 0) sums to 2^-30 in the float32 accumulator, which float16 rounds to 0 (below half
    its smallest subnormal 2^-24): float code would divide by 0, so float-normalized refuses the row,
    as float-divided does with the same sum derived left to right or stated (one semantics)."""
    p = [F(1, 2), F(1, 2)]
    tiny = [F(1, 2**30), F(0)]
    for recipe in (
        ["float-normalized", "z", "float16"],
        ["float-divided", "z", "float16", ["left-to-right", "float32"]],
        ["float-divided", "z", "float16", ["tree", "float32", [1, 0]]],
    ):
        doc = _draws_p({"p": _input("p", p), "z": (["given"], tiny), "n": recipe}, p)
        verdict = checker.check(doc)
        assert not verdict.valid and verdict.reason == checker.Reason.TOTAL, verdict
        assert verdict.detail == (
            "certificate.rows.n: the float sum of row z is 0 while its mass is not 0 "
            "(float code would divide by it: inf or NaN entries)"
        )
    doc = _draws_p({"p": _input("p", p), "z": (["given"], tiny), "n": ["float-divided", "z", "float16", "0/1"]}, p)
    assert checker.check(doc).reason == checker.Reason.TOTAL


def test_float_divided_keeps_a_row_of_mass_zero(monkeypatch):
    """A stated sum 0 of a row of mass 0 (p scaled by 0/1024: zeros over 2048): the row is kept as it
    is, over its own denominator (never divided by 0), and that denominator is charged to the rows'
    budget."""
    p = [F(1, 2), F(1, 2)]
    doc = _draws_p(
        {"p": _input("p", p), "z": ["scaled", "p", "0/1024"], "n": ["float-divided", "z", "float32", "0/1"]}, p
    )
    facts = _facts(checker.check(doc))
    assert _fractions(facts["rows"]["n"]) == [0, 0] and facts["rows"]["n"][0].den == 2048
    assert _rows_budget_is_exact(doc, monkeypatch, "n") == 2 * 2 + 2 * 12 + 2 * 12  # p, z, n


def test_float_divided_divides_by_the_stated_sum():
    """fl(a_i / s) for the stated s: (1/4, 1/4) over s = 1/2 is (1/2, 1/2); a stated sum of 1/d is
    divided by, not taken for an empty row."""
    p = [F(1, 2), F(1, 2)]
    doc = _draws_p(
        {"p": _input("p", p), "g": (["given"], [F(1, 4), F(1, 4)]), "n": ["float-divided", "g", "float32", "1/2"]}, p
    )
    assert _fractions(_facts(checker.check(doc))["rows"]["n"]) == [F(1, 2), F(1, 2)]
    doc = _draws_p(
        {"p": _input("p", p), "g": (["given"], [F(1, 2), F(1, 2)]), "n": ["float-divided", "g", "float32", "1/1"]}, p
    )
    assert _fractions(_facts(checker.check(doc))["rows"]["n"]) == [F(1, 2), F(1, 2)]


@pytest.mark.parametrize(
    "source",
    [
        ["ratio", "p", "q", 0, "float64"],
        ["float-ratio", "p", "q", 0],
        ["float-ratio", "p", "q", 0, "float64", "x"],
        ["cdf", "p", 0, "float64", "x"],
        ["ratio", "p", "q", 0, "float32", "continuous", "<"],
        ["float-product", "p", "q", 0, "float32", "continuous"],
    ],
)
def test_a_threshold_source_of_the_wrong_length_is_refused(source):
    """A source is read by its kind and its exact length: a ratio with a format (or with a
    float-product's seven entries), a float-ratio without a format or with one more entry, a
    float-product without its comparison are none of the known sources."""
    p, q = [F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]
    coin = _coin(upper={"source": source, "strict": True})
    doc = _outcome(
        {"p": _input("p", p), "q": _input("q", q)},
        [(coin, 1, _leaf(0))],
        [1, 0],
        {"alpha": 1, "out_of_range": 0, "tv": F(1, 2)},
    )
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED, verdict
    assert verdict.detail.startswith("certificate.nodes[0].branches[0].event.upper has source ")


@pytest.mark.parametrize("p", [[F(1, 2), F(1, 2)], [F(1), F(0)]])
def test_a_float_ratio_over_a_zero_entry_is_refused(p):
    """fl(a[x] / b[x]) with b[x] = 0 is refused, whether a[x] is positive (inf) or 0 (NaN)."""
    q = [F(1), F(0)]
    coin = _coin(upper={"source": ["float-ratio", "p", "q", 1, "float32"], "strict": True})
    doc = _outcome(
        {"p": _input("p", p), "q": _input("q", q)},
        [(coin, 1, _leaf(0))],
        [1, 0],
        {"alpha": 1, "out_of_range": 0, "tv": 1 - p[0]},
    )
    verdict = checker.check(doc)
    assert verdict.reason is R.MALFORMED, verdict
    assert verdict.detail == "certificate.nodes[0].branches[0].event.upper divides by q[1] = 0"


def test_the_facts_name_both_rows_a_float_ratio_reads():
    """u < fl(q[0] / p[0]) = 1/2 (float32): the coin reads q and p; q is read nowhere else."""
    p, q = [F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)]
    bound = {"source": ["float-ratio", "q", "p", 0, "float32"], "strict": True}
    doc = _outcome(
        {"p": _input("p", p), "q": _input("q", q)},
        [(_coin(upper=bound), F(1, 2), _leaf(0)), (_coin(lower={**bound, "strict": False}), F(1, 2), _leaf(1))],
        p,
        {"alpha": 1, "out_of_range": 0, "tv": 0},
        lossless=True,
    )
    assert _facts(checker.check(doc))["reads"] == ["p", "q"]


@pytest.mark.parametrize("model", ["float32-(0,1]", "fixed:1/1", "continuous"])
def test_a_float_ratio_that_overflows_is_above_every_coin(model):
    """fl(p[0] / q[0]) = fl(2^19) in float16 is +inf (past 65504): u < +inf holds for every coin,
    u = 1 included (the top of the (0, 1] grid, a fixed coin at 1)."""
    p, q = [F(1, 2), F(1, 2)], [F(1, 2**20), 1 - F(1, 2**20)]
    coin = {
        "coin": {
            "model": model,
            "lower": None,
            "upper": {"source": ["float-ratio", "p", "q", 0, "float16"], "strict": True},
        }
    }
    doc = _outcome(
        {"p": _input("p", p), "q": _input("q", q)},
        [(coin, 1, _leaf(0))],
        [1, 0],
        {"alpha": 1, "out_of_range": 0, "tv": F(1, 2)},
    )
    verdict = checker.check(doc)
    assert verdict.valid, verdict
    doc["nodes"][0]["branches"][0]["event"]["coin"]["upper"]["source"] = ["const", "1/1"]  # u < 1: u = 1 fails
    verdict = checker.check(doc)
    assert verdict.valid is (model == "continuous"), verdict
