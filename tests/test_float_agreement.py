"""Agreement, no tolerance: the law a rule's float arithmetic gives (specproof.rules.audit) equals the traced
law of code that computes it, for every member of the float-ideal family and the named float rules.

Each member is written below as a small PyTorch verifier (and the float64 ones also in NumPy); the
transformers verifier is the installed one. Rows: random float rows and hand-picked edge rows (a
ratio on a grid point, p = 0 at a drafted token, q = 0, p == q, subnormals, an overflowing ratio).
A member and its code must give the same exact law, or both refuse (a rejection with an empty
residual: the code's multinomial raises, the audit raises ResidualUndefined).
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from specproof.rules.audit import block_law, position_law  # noqa: E402
from specproof.errors import ResidualUndefined  # noqa: E402
from specproof.rules.faithful import FAMILY, member_law  # noqa: E402
from specproof.rules.policy import named_rule  # noqa: E402
from specproof.trace.tracer import SamplerRaised, trace  # noqa: E402

TORCH_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
                "float64": torch.float64}
FLOAT_MEMBERS = [m for m in FAMILY if not m.rule.arithmetic.is_exact]


def torch_verifier(rule):
    """The textbook verifier in PyTorch, written the way the rule's arithmetic says."""
    arith, coin = rule.arithmetic, rule.coin
    coin_dtype = torch.float32 if coin.bits == 24 else torch.float64

    def run(p, q):
        x = int(torch.multinomial(q.double(), 1))  # the draft's law: q's values over their exact sum
        u = torch.rand((), dtype=coin_dtype)
        if coin.open_closed:
            u = 1 - u  # (0, 1]; exact in the coin's format
        if arith.test == "ratio":
            t = p[x] / q[x]
            accept = bool(u < t) if rule.comparison == "<" else bool(u <= t)
        else:
            prod = u * q[x]  # promoted to the wider format
            accept = bool(prod < p[x]) if rule.comparison == "<" else bool(prod <= p[x])
        if accept:
            return x
        r = torch.clamp(p - q, min=0)
        if arith.normalization == "divide":
            r = r / r.sum()
        return int(torch.multinomial(r.double(), 1))
    return run


def numpy_verifier(rule):
    """A float64 NumPy verifier (float64 coin on [0, 1), residual divided by its sum for choice)."""
    def run(p, q, rng):
        x = int(rng.choice(len(q), p=q / q.sum()))
        u = rng.random()
        t = p[x] / q[x] if rule.arithmetic.test == "ratio" else None
        if t is not None:
            accept = u < t if rule.comparison == "<" else u <= t
        else:
            accept = u * q[x] < p[x] if rule.comparison == "<" else u * q[x] <= p[x]
        if accept:
            return x
        w = np.maximum(p - q, 0)
        return int(rng.choice(len(p), p=w / w.sum()))
    return run


def _rows(dtype, seed, n):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        w = rng.random((2, 3)) ** 2
        rows = torch.tensor(w / w.sum(axis=1, keepdims=True), dtype=TORCH_DTYPES[dtype])
        out.append((rows[0], rows[1]))
    return out


EDGES = {
    "ratio on a grid point": ([0.5, 0.25, 0.25], [0.375, 0.375, 0.25]),
    "p = 0 at a drafted token": ([0.5, 0.5, 0.0], [0.25, 0.25, 0.5]),
    "q = 0 where p > 0": ([0.5, 0.25, 0.25], [0.5, 0.5, 0.0]),
    "p == q": ([0.2, 0.3, 0.5], [0.2, 0.3, 0.5]),
    "subnormal q (overflowing ratio)": ([0.25, 0.25, 0.5], [1e-40, 0.5, 0.5]),
    "subnormal p": ([1e-41, 0.5, 0.5], [0.25, 0.25, 0.5]),
}


def _edge_rows(dtype):
    return [(torch.tensor(p, dtype=TORCH_DTYPES[dtype]), torch.tensor(q, dtype=TORCH_DTYPES[dtype]))
            for p, q in EDGES.values()]


def _agree(code, rule, p, q, **kw):
    """The code's traced law and the rule's law on the same rows, or both refuse."""
    try:
        want = position_law(p, q, rule)
    except ResidualUndefined:
        with pytest.raises(SamplerRaised):  # 0/0 of an empty residual: NaN weights, on which torch raises
            trace(code, (p, q), **kw)
        return
    got = trace(code, (p, q), **kw).law
    assert got == {i: m for i, m in enumerate(want.law) if m}, (rule.describe(), p, q)


@pytest.mark.parametrize("member", FLOAT_MEMBERS, ids=[m.name for m in FLOAT_MEMBERS])
def test_every_float_member_is_computed_by_torch_code(member):
    dtype = member.rule.arithmetic.dtype
    for p, q in _edge_rows(dtype) + _rows(dtype, 0, 1):
        _agree(torch_verifier(member.rule), member.rule, p, q)


def test_member_law_reads_the_rows_as_given():
    member = FLOAT_MEMBERS[0]
    p, q = _rows("float32", 1, 1)[0]
    assert member_law(member, p, q) == trace(torch_verifier(member.rule), (p, q)).law


@pytest.mark.parametrize("test", ["ratio", "product"])
@pytest.mark.parametrize("cmp", ["<", "<="])
def test_float64_members_are_computed_by_numpy_code(test, cmp):
    member = next(m for m in FLOAT_MEMBERS if m.rule.arithmetic.dtype == "float64" and m.rule.coin.name == "float64"
                  and m.rule.arithmetic.test == test and m.rule.comparison == cmp
                  and m.rule.arithmetic.normalization == "divide")
    rng = np.random.default_rng(2)
    rows = [(np.array(p), np.array(q)) for p, q in EDGES.values() if not np.array_equal(p, q)]
    for _ in range(5):
        w = rng.random((2, 3)) ** 2
        rows.append(tuple(w / w.sum(axis=1, keepdims=True)))
    for p, q in rows:
        _agree(numpy_verifier(member.rule), member.rule, p, q, numpy_rng="rng")


def _named_rule_agreement(n, seed):
    for name in ("lt-float32-coin", "le-float32-coin"):
        rule = named_rule(name)
        code = torch_verifier(rule)
        for p, q in _edge_rows("float32") + _rows("float32", seed, n):
            _agree(code, rule, p, q)


def test_named_float32_rules_agree_with_their_code():
    _named_rule_agreement(40, 3)


@pytest.mark.slow
def test_named_float32_rules_agree_with_their_code_on_1000_rows():
    _named_rule_agreement(1000, 4)


def _transformers_agreement(n, seed):
    pytest.importorskip("transformers")
    from specproof.trace.adapters.transformers import block_law as traced_block

    rng = np.random.default_rng(seed)
    rule = named_rule("le-float32-coin")
    for _ in range(n):
        target = rng.normal(size=(2, 3)).astype(np.float32) * 2
        draft = rng.normal(size=(1, 3)).astype(np.float32) * 2
        # the rows transformers' verifier computes from these logits: softmax in float32, as it does
        t = torch.tensor(target).softmax(dim=-1)
        d = torch.tensor(draft).softmax(dim=-1)
        got = traced_block(target.tolist(), draft.tolist())
        want = block_law(lambda s: t[len(s)], lambda s: d[0], 1, rule)
        assert got.law == {b: m for b, m in want.emitted.items() if m}


def test_transformers_speculative_sampling_is_the_le_float32_rule():
    _transformers_agreement(15, 5)


@pytest.mark.slow
def test_transformers_speculative_sampling_is_the_le_float32_rule_on_1000_rows():
    _transformers_agreement(1000, 6)
