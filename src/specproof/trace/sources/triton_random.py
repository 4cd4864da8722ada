"""Triton's ``tl.rand`` / ``tl.randint`` (Philox) under ``TRITON_INTERPRET=1``, under the tracer's control.

Under the interpreter a Triton kernel runs as Python on NumPy-backed blocks, and ``tl.rand(seed, offset)`` calls
``tl.randint(seed, offset)`` (Philox) then ``uint_to_uniform_float``. This source replaces ``randint`` and
``randint4x`` (in ``triton.language`` and ``triton.language.random``): each element's 32 random bits come from a
slot ``k`` uniform on ``0 .. 2^32 - 1``, mapped one to one onto the int32 values (``k >> 1`` for even ``k``,
``~(k >> 1)`` for odd ``k``, so that ``tl.rand``, which maps ``x`` and ``~x`` to the same float, is monotone in
``k``); ``tl.rand`` then computes its float with Triton's own code in the interpreter, so the law is exact for
Triton's arithmetic. Philox is a function of ``(seed, offset)``: within a run the same ``(seed, offset, stream)``
gives the same bits again (memoized), distinct ones independent draws (the idealization stated). ``tl.randn``,
``randn4x`` and a direct ``tl.philox`` are refused; a kernel compiled without the interpreter is not seen (it does
not run on a CPU-only machine).
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from specproof.trace.core import UnmodelledRandomness, _refuser, _run, _Uniform
from specproof.trace.sources.base import Patcher, Source

CALL = "tl.randint"


def _bits_of(k: int) -> int:
    """The int32 value of slot value ``k`` (a bijection of 0 .. 2^32 - 1 onto the int32 values)."""
    return (k >> 1) if k % 2 == 0 else ~(k >> 1)


def _values(x: Any) -> np.ndarray:
    return np.asarray(x.handle.data) if hasattr(x, "handle") else np.asarray(x)


def _block(seed: Any, offset: Any, streams: int) -> tuple:
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if isinstance(offset, int) and -(2**31) <= offset < 2**32:  # a constant offset: a 32-bit word, as Triton takes it
        offset = np.array(offset, dtype=np.int64)
        offs = offset
    else:
        offs = _values(offset)
    dtype = getattr(getattr(offset, "type", None), "scalar", getattr(offset, "dtype", None))
    # A 64-bit offset is two 32-bit Philox counter words (Triton's randint4x: its low and high halves), still 32
    # random bits per (seed, offset, stream): memoized by the whole offset (vLLM 0.34's tl.rand(seed, pos), int64 pos)
    if offs.dtype.kind not in "iu" or (offs.dtype.itemsize not in (4, 8) and hasattr(offset, "handle")):
        raise UnmodelledRandomness(
            f"{CALL}: offsets of dtype {offs.dtype} ({dtype}): only 32-bit and 64-bit offsets "
            "(Philox on 32-bit counter words) are modelled"
        )
    seeds = (
        np.broadcast_to(_values(seed), offs.shape)
        if np.size(_values(seed)) > 1
        else np.full(offs.shape, _values(seed).reshape(-1)[0] if np.size(_values(seed)) else 0)
    )
    run = _run()
    memo = run.__dict__.setdefault("triton_bits", {})
    out = []
    for s in range(streams):
        vals = np.empty(offs.shape, dtype=np.int32)
        for idx in np.ndindex(offs.shape) if offs.shape else [()]:
            key = (int(seeds[idx]), int(offs[idx]), s)
            if key not in memo:
                memo[key] = _bits_of(run.take(_Uniform(32, CALL)))
            vals[idx] = memo[key]
        ty = (
            offset.type.with_element_ty(tl.int32)
            if getattr(offset, "type", None) is not None and offset.type.is_block()
            else tl.int32
        )
        out.append(tl.tensor(TensorHandle(vals, tl.int32), ty))
    return tuple(out)


def _randint(seed: Any, offset: Any, n_rounds: Any = None) -> Any:
    return _block(seed, offset, 1)[0]


def _randint4x(seed: Any, offset: Any, n_rounds: Any = None) -> Any:
    return _block(seed, offset, 4)


class TritonSource(Source):
    """Triton under the interpreter: ``tl.randint``/``randint4x`` from 32-bit slots memoized by (seed, offset), so
    ``tl.rand``/``rand4x`` are exact for Triton's float conversion; ``randn``, ``randn4x``, ``philox`` refused."""

    name = "triton"
    module = "triton.language"
    assumptions = {
        CALL: "tl.randint / tl.rand (Triton's Philox, under TRITON_INTERPRET=1): IDEALIZED: Philox as a random "
        "function of (seed, offset): each (seed, offset, stream) is an independent draw uniform on all 2^32 "
        "bit patterns, the same (seed, offset, stream) the same bits within a run; tl.rand's float computed "
        "from them by Triton's own uint_to_uniform_float in the interpreter (fl32(x) * fl32(4.6566127342e-10) "
        "with x or ~x)",
    }

    def install(self, patcher: Patcher) -> None:
        tl = sys.modules["triton.language"]
        random = sys.modules.get("triton.language.random")
        for owner in (tl, random):
            if owner is None:
                continue
            patcher.set(owner, "randint", _randint)
            patcher.set(owner, "randint4x", _randint4x)
            for name in ("randn", "randn4x", "philox"):
                patcher.set(owner, name, _refuser(f"tl.{name}", " (Triton)"))
        from specproof.trace.sources import triton_race

        triton_race.install(patcher)  # the exponential race inside a kernel (vLLM V1's recovered tokens)
        from specproof.trace.sources import triton_reads

        triton_reads.install(patcher)  # which uniforms a kernel loads (SGLang's unused last coin)
