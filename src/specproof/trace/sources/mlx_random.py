"""MLX's ``mx.random`` under the tracer's control: ``uniform``, ``bernoulli``, ``randint`` and ``categorical``.

MLX (``mlx.core.random``, random.cpp) draws 32 random bits ``k`` per element (Threefry on a key) and computes
everything else from them in float32: ``uniform`` is ``min(fl32(k) / fl32(2^32 - 1), 1 - 2^-24)`` scaled to
``[low, high)``, ``bernoulli(p)`` is ``fl32(k) < fl32(p * nextafter(fl32(2^32 - 1), inf))``, ``randint`` is the
float32 uniform on ``[low, high)`` floored (MLX 0.32). Each is traced here with ``k`` a slot uniform on
``0 .. 2^32 - 1`` and the rest computed by MLX's own ops on those ``k``, so the law is exact for MLX's arithmetic.
``categorical(logits)`` (MLX: ``argmax(logits + gumbel)``) is an exact categorical draw over
``exp(l - max l)`` in float64: the Gumbel-max idealization stated in the result. ``mx.random.gumbel``,
``normal``, ``truncated_normal``, ``laplace``, ``multivariate_normal``, ``permutation``, seeding inside a run
(``mx.random.seed``, ``mx.random.key``) and a key used twice in one run are refused, naming the call and its line.
A draw with an explicit ``key=`` passed in is traced as a fresh draw (the key taken as random). ``mx.compile``
is disabled for the trace (a compiled sampler runs its Python code, so its draws are seen), and MLX's global key
is watched: a draw through a function bound before tracing changes it and is refused.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.trace.core import (
    _ACTIVE,
    SamplerRaised,
    UncontrolledRandomness,
    UnmodelledRandomness,
    _call_site,
    _draw_categorical,
    _importing,
    _refuser,
    _run,
    _Uniform,
)
from specproof.trace.sources.base import Patcher, Source

_REFUSED = ("gumbel", "normal", "truncated_normal", "laplace", "multivariate_normal", "permutation")
#: fl32(2^32 - 1) = 2^32 (MLX divides the 32 bits by it) and the largest float32 below 1.
_MAXVAL = np.float32(4294967295.0)
_BELOW_ONE = np.nextafter(np.float32(1.0), np.float32(0.0))
#: bernoulli's scale: the float32 after fl32(2^32 - 1), so p >= 1 gives true and p <= 0 false.
_BERNOULLI_UPPER = np.nextafter(np.float32(4294967295.0), np.float32(np.inf))


def _mx() -> Any:
    return sys.modules["mlx.core"]


def _shape(shape: Any) -> tuple[int, ...]:
    if shape is None:
        return ()
    if isinstance(shape, int):
        return (shape,)
    return tuple(int(s) for s in shape)


def _used_key(key: Any, call: str) -> None:
    """A draw with an explicit key: refused if the same key drew before in this run (the same bits)."""
    if key is None:
        return
    run = _run()
    seen = run.__dict__.setdefault("mlx_keys", set())
    value = np.array(key).tobytes()
    if value in seen:
        where = _call_site(3)
        raise UnmodelledRandomness(
            f"{call}{f' at {where}' if where else ''} draws with an MLX key already used in this run: two draws with "
            "one key give the same bits (correlated), which specproof.trace.tracer does not model; split the key "
            "(mx.random.split) for each draw"
        )
    seen.add(value)


def _bits(n: int, call: str) -> Any:
    """``n`` slots of 32 random bits, as an MLX uint32 array (flat)."""
    run = _run()
    ks = [run.take(_Uniform(32, call)) for _ in range(n)]
    return _mx().array(np.array(ks, dtype=np.uint32))


def _uniform(
    low: Any = 0, high: Any = 1, shape: Any = (), dtype: Any = None, key: Any = None, stream: Any = None
) -> Any:
    mx = _mx()
    call = "mx.random.uniform"
    dtype = mx.float32 if dtype is None else dtype
    if dtype != mx.float32:
        raise UnmodelledRandomness(f"{call} with dtype {dtype}: only float32 is modelled")
    _used_key(key, call)
    shape = _shape(shape)
    lo, hi = mx.array(low).astype(dtype), mx.array(high).astype(dtype)
    if tuple(np.broadcast_shapes(shape, tuple((hi - lo).shape))) != shape:
        raise SamplerRaised(
            f"{call}: bounds of shape {list((hi - lo).shape)} do not broadcast to shape {list(shape)} "
            "(the real call raises)"
        )
    out = _bits(math.prod(shape), call).reshape(shape)
    out = mx.minimum(mx.divide(out, mx.array(_MAXVAL)), mx.array(_BELOW_ONE)).astype(dtype)
    return mx.add(mx.multiply(hi - lo, out), lo)


def _bernoulli(p: Any = 0.5, shape: Any = None, key: Any = None, stream: Any = None) -> Any:
    mx = _mx()
    call = "mx.random.bernoulli"
    p = p if isinstance(p, mx.array) else mx.array(p, dtype=mx.float32)
    if not mx.issubdtype(p.dtype, mx.floating):
        raise SamplerRaised(f"{call}: p has dtype {p.dtype}, not a float type (the real call raises)")
    _used_key(key, call)
    shape = tuple(p.shape) if shape is None else _shape(shape)
    k = _bits(math.prod(shape), call).reshape(shape)
    return mx.less(k, mx.multiply(p, mx.array(_BERNOULLI_UPPER)))


def _randint(low: Any, high: Any, shape: Any = (), dtype: Any = None, key: Any = None, stream: Any = None) -> Any:
    mx = _mx()
    call = "mx.random.randint"
    dtype = mx.int32 if dtype is None else dtype
    if mx.issubdtype(dtype, mx.inexact):
        raise SamplerRaised(f"{call} with dtype {dtype} (the real call raises: integer dtypes only)")
    lo, hi = mx.array(low).astype(mx.float32), mx.array(high).astype(mx.float32)
    u = _uniform(lo, hi, shape, mx.float32, key)
    return mx.maximum(u, lo).astype(dtype)


def _categorical(
    logits: Any, axis: int = -1, shape: Any = None, num_samples: Any = None, key: Any = None, stream: Any = None
) -> Any:
    mx = _mx()
    call = "mx.random.categorical"
    if shape is not None and num_samples is not None:
        raise SamplerRaised(f"{call}: both shape and num_samples given (the real call raises)")
    _used_key(key, call)
    wide = logits if logits.dtype == mx.float64 else logits.astype(mx.float32)  # float64 logits keep their bits
    values = np.moveaxis(np.array(wide, dtype=np.float64), axis, -1)
    batch = values.shape[:-1]
    rows = values.reshape(-1, values.shape[-1]) if values.size else values.reshape(0, max(values.shape[-1], 0))
    laws = []
    for r, row in enumerate(rows.tolist()):
        if any(math.isnan(x) or x == math.inf for x in row):
            raise UnmodelledRandomness(f"{call}: row {r} of the logits has a NaN or +inf: not modelled")
        top = max(row)
        if top == -math.inf:
            raise UnmodelledRandomness(f"{call}: row {r} of the logits is all -inf: not modelled")
        ws = [Fraction(math.exp(x - top)) for x in row]
        total = sum(ws, Fraction(0))
        laws.append(tuple(w / total for w in ws))
    index = np.arange(len(laws)).reshape(batch) if batch else np.array(0)
    if num_samples is not None:
        which = np.broadcast_to(index[..., None], (*batch, int(num_samples)))
    elif shape is not None:
        which = np.broadcast_to(index, _shape(shape))
    else:
        which = index
    run = _run()
    out = [_draw_categorical(run, tuple(range(len(laws[i]))), laws[i], call) for i in which.reshape(-1).tolist()]
    return mx.array(np.array(out, dtype=np.uint32).reshape(which.shape))


def _seeding(name: str) -> Any:
    original = getattr(sys.modules["mlx.core"].random, name)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        if not _ACTIVE or _importing():
            return original(*args, **kwargs)
        where = _call_site(2)
        raise UncontrolledRandomness(
            f"the sampler seeds MLX (mx.random.{name}{f' at {where}' if where else ''}): a sampler that seeds itself "
            "draws the same values on every call, and its law is not that of its draws; draw from MLX's global "
            "state, or take a key as an argument",
            f"mx.random.{name}",
            where,
        )

    refuse.__name__ = name
    return refuse


class MlxSource(Source):
    """MLX: ``mx.random.uniform``, ``bernoulli``, ``randint`` (from 32-bit slots, MLX's arithmetic) and
    ``categorical`` (exact, softmax weights) modelled; the other draws and seeding refused; the global key watched."""

    name = "mlx"
    module = "mlx.core"
    assumptions = {
        "mx.random.uniform": "mx.random.uniform (float32): 32 random bits k, uniform on 0 .. 2^32 - 1, and MLX's "
        "arithmetic on them: min(fl32(k) / fl32(2^32 - 1), 1 - 2^-24), scaled to [low, high)",
        "mx.random.bernoulli": "mx.random.bernoulli(p): 32 random bits k, uniform on 0 .. 2^32 - 1, and MLX's test "
        "fl32(k) < fl32(p * nextafter(fl32(2^32 - 1), inf))",
        "mx.random.randint": "mx.random.randint: MLX 0.32's floor of the float32 uniform on [low, high) (see "
        "mx.random.uniform), not exactly uniform",
        "mx.random.categorical": "mx.random.categorical: IDEALIZED: MLX's argmax(l + Gumbel noise) with exact Gumbel "
        "noise, an exact categorical over exp(l - max l) in float64 (relative error below "
        "2^-52) per row; MLX's float32 noise is not traced",
    }

    def install(self, patcher: Patcher) -> None:
        mx = sys.modules["mlx.core"]
        random = mx.random
        for name, fn in (
            ("uniform", _uniform),
            ("bernoulli", _bernoulli),
            ("randint", _randint),
            ("categorical", _categorical),
        ):
            patcher.set(random, name, fn)
        for name in _REFUSED:
            patcher.set(random, name, _refuser(f"mx.random.{name}", " (MLX)"))
        for name in ("seed", "key"):
            patcher.set(random, name, _seeding(name))
        if hasattr(mx, "disable_compile"):  # a compiled sampler runs as Python, so its draws go through the patches
            mx.disable_compile()
            patcher.at_exit(mx.enable_compile)

    def state(self) -> bytes:
        return np.array(sys.modules["mlx.core"].random.state[0]).tobytes()
