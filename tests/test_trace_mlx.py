"""MLX's ``mx.random`` under the tracer's control (issue 33, item 2): uniform, bernoulli, randint from 32-bit slots
with MLX's own float32 arithmetic, categorical as an exact categorical draw, and every other path refused.

Skipped where MLX does not import (its CPU wheel: ``pip install mlx mlx-cpu`` on Linux)."""

from __future__ import annotations

import functools
import math
import os
from fractions import Fraction as F

import numpy as np
import pytest

try:
    import mlx.core as mx
    from mlx.core.random import categorical as categorical_bound_before_tracing
except ImportError as exc:  # pragma: no cover - depends on the machine
    if os.environ.get("SPECPROOF_REQUIRE_ENGINES") == "1":  # CI, after installing the engines extra
        raise
    pytest.skip(
        f"mlx does not import here ({exc}); on Linux its CPU wheel is pip install mlx mlx-cpu", allow_module_level=True
    )

from specproof.trace.testing import compare  # noqa: E402
from specproof.trace.tracer import UncontrolledRandomness, UnmodelledRandomness, trace  # noqa: E402


def softmax(row):
    top = max(row)
    ws = [F(math.exp(x - top)) for x in row]
    return [w / sum(ws) for w in ws]


def test_a_uniform_coin_is_exact_for_mlx_arithmetic():
    got = trace(lambda: bool(mx.random.uniform() < 0.25))
    # u = fl32(k) / 2^32: below 1/4 exactly for k < 2^30 - 32 (from 2^30 - 32 on, k rounds to 2^30 in float32)
    assert got.law == {True: F(2**30 - 32, 2**32), False: 1 - F(2**30 - 32, 2**32)}
    assert got.calls == ("mx.random.uniform",)
    assert any("min(fl32(k) / fl32(2^32 - 1), 1 - 2^-24)" in a for a in got.assumptions)
    low = trace(lambda: bool(mx.random.uniform(2.0, 4.0) < 3.0)).law  # scaled to [low, high): 2 u + 2 in float32
    k = np.arange(2**31 - 2**12, 2**31 + 2**12, dtype=np.uint64)  # every k outside this window is clearly below/above
    u = np.minimum(k.astype(np.float32) / np.float32(2**32), np.nextafter(np.float32(1), np.float32(0)))
    below = 2**31 - 2**12 + int(np.count_nonzero(np.float32(2) * u + np.float32(2) < np.float32(3)))
    assert low == {True: F(below, 2**32), False: 1 - F(below, 2**32)} and below == 2**31 - 320


def test_bernoulli_is_mlx_bits_against_the_scaled_p():
    # fl32(k) < fl32(0.25 * (2^32 + 512)) = 2^30 + 128: k <= 2^30 + 64 (the tie rounds to the even 2^30)
    assert trace(lambda: bool(mx.random.bernoulli(0.25))).law == {
        True: F(2**30 + 65, 2**32),
        False: 1 - F(2**30 + 65, 2**32),
    }


def test_randint_is_the_floored_float32_uniform():
    got = trace(lambda: int(mx.random.randint(0, 3)))
    assert set(got.law) == {0, 1, 2} and sum(got.law.values()) == 1
    assert all(abs(m - F(1, 3)) < F(1, 2**24) for m in got.law.values()) and got.law[0] != F(1, 3)


def test_categorical_is_an_exact_categorical_over_the_softmax_weights():
    logits = mx.array([[1.0, 2.0, 0.5], [0.0, -math.inf, 3.0]])
    got = trace(lambda: tuple(mx.random.categorical(logits).tolist()))
    rows = [softmax([float(x) for x in r]) for r in logits.tolist()]
    assert got.law == {(i, j): rows[0][i] * rows[1][j] for i in range(3) for j in (0, 2)}
    assert got.calls == ("mx.random.categorical",) and got.runs == 6
    two = trace(lambda: tuple(mx.random.categorical(logits[0], num_samples=2).tolist())).law
    assert two == {(i, j): rows[0][i] * rows[0][j] for i in range(3) for j in range(3)}


@functools.partial(mx.compile, inputs=mx.random.state, outputs=mx.random.state)
def mlx_lm_categorical_sampling(logits, temp):
    """MLX-LM's sampler (sample_utils.categorical_sampling), compiled as MLX-LM compiles it."""
    return mx.random.categorical(logits * (1 / temp))


def test_a_compiled_mlx_lm_style_sampler_is_traced_not_run_once():
    logits = mx.array([1.0, 0.0, -1.0])
    got = trace(lambda: int(mlx_lm_categorical_sampling(logits, 0.7)))
    assert got.law == dict(enumerate(softmax([float(x) for x in (logits * (1 / 0.7)).tolist()])))
    assert got.runs == 3


def textbook(p, q):
    p, q = mx.array(p), mx.array(q)
    x = int(mx.random.categorical(mx.log(q)))
    if mx.random.uniform() < p[x] / q[x]:
        return x
    return int(mx.random.categorical(mx.log(mx.maximum(p - q, 0))))


def test_a_textbook_mlx_sampler_is_within_the_float_floor_and_a_wrong_one_is_lossy():
    p, q = [0.5, 0.25, 0.25], [0.25, 0.5, 0.25]
    good = compare(textbook, p, q)
    assert good.tv < F(1, 10**8)  # MLX's coin is 2^-26 off at 1/2, its logs and exps round: no logic fault
    bad = compare(lambda p, q: int(mx.random.categorical(mx.log(mx.array(q)))), p, q)
    assert bad.verdict == "lossy" and abs(bad.tv - F(1, 4)) < F(1, 10**7)


def match_rule(p, q):
    """MLX-LM's speculative step in small: draft and target each sample their own row with
    mx.random.categorical on log-probabilities in the rows' own format; the draft is kept when the
    target's sample equals it, else the target's sample is emitted (either way, the target's)."""
    dtype = mx.float64 if getattr(p, "dtype", None) == np.float64 else mx.float32

    def logprobs(row):
        logits = mx.log(mx.array(row, dtype=dtype))
        return logits - mx.logsumexp(logits, axis=-1, keepdims=True)

    drafted = int(mx.random.categorical(logprobs(q)))
    sampled = int(mx.random.categorical(logprobs(p)))
    return drafted if sampled == drafted else sampled


def test_float64_logits_keep_their_bits_so_the_match_rule_is_float_faithful():
    # The categorical draw once rounded float64 logits to float32 first: re-traced in float64, the
    # match rule's TV did not fall and correct code read "lossy, 1.4e-8" (MLX-LM 0.32's own step).
    p, q = np.array([0.6, 0.3, 0.1], np.float32), np.array([0.2, 0.5, 0.3], np.float32)
    got = compare(match_rule, p, q)
    assert got.verdict == "float-faithful", got.report()
    assert got.floor.argument == "widening" and got.floor.tv_wide < F(1, 10**15) < got.tv < F(1, 10**7)
    wide = trace(lambda: int(mx.random.categorical(mx.array([0.0, math.log(0.1)], dtype=mx.float64))))
    assert wide.law[1] == F(math.exp(math.log(0.1))) / (1 + F(math.exp(math.log(0.1))))


def test_draws_with_explicit_keys_are_fresh_draws_and_a_reused_key_is_refused():
    def split_draws(key):
        k1, k2 = mx.random.split(key)
        return bool(mx.random.uniform(key=k1) < 0.5), bool(mx.random.uniform(key=k2) < 0.5)

    got = trace(split_draws, (mx.random.key(7),))
    half = F(2**31 - 64, 2**32)
    assert got.law[(True, True)] == half * half and len(got.law) == 4
    with pytest.raises(UnmodelledRandomness, match="key already used in this run"):
        trace(
            lambda key: (float(mx.random.uniform(key=key)), float(mx.random.uniform(key=key)))[0] < 0.5,
            (mx.random.key(7),),
            max_runs=5,
        )


@pytest.mark.parametrize(
    "run,error,match",
    [
        (lambda: float(mx.random.normal()) < 0, UnmodelledRandomness, r"mx\.random\.normal"),
        (lambda: int(mx.argmax(mx.random.gumbel((3,)))), UnmodelledRandomness, r"mx\.random\.gumbel"),
        (lambda: (mx.random.seed(0), bool(mx.random.uniform() < 0.5))[1], UncontrolledRandomness, r"seeds MLX"),
        (lambda: bool(mx.random.uniform(key=mx.random.key(0)) < 0.5), UncontrolledRandomness, r"mx\.random\.key"),
        (lambda: int(categorical_bound_before_tracing(mx.array([0.0, 0.0]))), UncontrolledRandomness, r"source 'mlx'"),
    ],
)
def test_mlx_paths_not_modelled_are_refused_never_given_a_verdict(run, error, match):
    with pytest.raises(error, match=match):
        trace(run, max_runs=20)


@pytest.fixture(scope="module")
def mlx_lm_sample_utils(tmp_path_factory):
    """MLX-LM's own sample_utils, loaded from its published wheel (``pip download --no-deps``); never committed."""
    import importlib
    import subprocess
    import sys
    import zipfile

    where = tmp_path_factory.mktemp("mlx_lm")
    got = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "mlx-lm", "-d", str(where)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    wheels = list(where.glob("mlx_lm-*.whl"))
    if got.returncode != 0 or not wheels:
        pytest.skip(f"the mlx-lm wheel cannot be had here: {got.stderr.strip()[-200:]}")
    with zipfile.ZipFile(wheels[0]) as z:
        z.extractall(where)
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module("mlx_lm.sample_utils")
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m == "mlx_lm" or m.startswith("mlx_lm.")]:
            del sys.modules[name]


@pytest.mark.slow
def test_mlx_lm_own_compiled_sampler_is_traced_with_its_exact_law(mlx_lm_sample_utils):
    logp = mx.log(mx.array([0.5, 0.25, 0.125, 0.125]))[None]
    plain = mlx_lm_sample_utils.make_sampler(temp=1.0)
    got = trace(lambda: int(plain(logp)[0]))  # before: run once, "LOSSY, TV 15/16"
    assert got.law == dict(enumerate(softmax([float(x) for x in (logp[0] * 1.0).tolist()])))
    assert got.calls == ("mx.random.categorical",) and got.runs == 4
    top2 = mlx_lm_sample_utils.make_sampler(temp=1.0, top_k=2)
    law = trace(lambda: int(top2(logp)[0])).law
    assert set(law) == {0, 1} and abs(law[0] - F(2, 3)) < F(1, 10**8)
    assert trace(lambda: int(mlx_lm_sample_utils.make_sampler(temp=0.0)(logp)[0])).law == {0: F(1)}
