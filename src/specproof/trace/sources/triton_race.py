"""The exponential race inside a Triton kernel under ``TRITON_INTERPRET=1`` (vLLM V1's recovered tokens).

vLLM V1 (0.33) draws ``E = q.exponential_()``, takes ``inv_q = E.reciprocal()`` in torch, and passes ``inv_q`` to
``sample_recovered_tokens_kernel``, which computes ``prob * inv_q`` and its argmax per row in Triton. In torch the
race is decided where ``w * E.reciprocal()`` is computed (:mod:`specproof.trace.sources.torch_mode`); here the
multiplication happens in the interpreter. When ``E.reciprocal()`` leaves torch for the interpreter
(:func:`hand_over`), its elements are overwritten by tagged NaNs carrying their index; the interpreter's ``fmul``
(:func:`_fmul`) that meets a block of tagged lanes times a block of weights ``w`` of the same shape decides the race
of each row it covers exactly as in torch (one exact categorical over ``w``; ``E`` then ``+inf`` but at the winner,
so ``w * (1 / E)`` is the code's own product with that E), and computes the product with those values. Refused,
naming the operation: any other interpreter operation on a tagged value (a store, an add, a comparison), a row
whose lanes are split over several products (a vocabulary wider than the kernel's tile), a second product of the
same race, and a kernel launch that read the race without deciding it.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from specproof.trace.core import _ACTIVE, UnmodelledRandomness

#: Tagged NaNs: a quiet NaN with a marker bit, the element's index in its low bits.
_TAGS = {
    np.dtype(np.float32): (np.uint32, 0x7FE00000, 0xFFE00000, 21),
    np.dtype(np.float64): (np.uint64, 0x7FFC000000000000, 0xFFFC000000000000, 50),
}

#: Whether the interpreter's builder is patched for this trace (installed when Triton's interpreter was imported
#: as the trace began); without it tagged values would reach the kernel unwatched, so a hand-over is refused.
_STATE = {"installed": False}

_WHY = (
    "specproof models E.reciprocal() passed to a Triton kernel (TRITON_INTERPRET=1) only as vLLM V1 uses it: "
    "multiplied once by a block of weights covering whole rows (score = w * inv_E), then reduced by an argmax"
)


def _races(run: Any) -> list:
    return run.__dict__.setdefault("kernel_races", [])


def hand_over(run: Any, r: Any, draw: Any, e: Any) -> None:
    """``r = E.reciprocal()`` is about to be read by the Triton interpreter: tag its elements (called inside the
    torch-function mode, so the torch calls here are not intercepted)."""
    import torch

    if not _STATE["installed"]:
        raise UnmodelledRandomness(
            f"E.reciprocal() passed to a Triton kernel, but Triton's interpreter was not "
            f"imported when the trace began (its operations are not watched): {_WHY}; import "
            "the kernels before tracing"
        )
    dtype = np.dtype(str(r.dtype).replace("torch.", ""))
    if dtype not in _TAGS or not r.is_contiguous() or tuple(r.shape) != tuple(draw.shape) or r.device.type != "cpu":
        raise UnmodelledRandomness(
            f"E.reciprocal() passed to a Triton kernel as a {r.dtype} tensor of shape "
            f"{list(r.shape)}: {_WHY}, on a contiguous float32 or float64 CPU tensor of E's "
            "shape"
        )
    races = _races(run)
    for race in races:
        if race["r"] is r:
            return  # already tagged (the interpreter asks for the storage more than once)
    base = sum(race["size"] for race in races)
    uint, tag, _, bits = _TAGS[dtype]
    size = r.numel()
    if base + size >= 2**bits:
        raise UnmodelledRandomness(
            f"E.reciprocal() passed to a Triton kernel: {base + size} elements to tag, more than {2**bits}"
        )
    values = (np.arange(base, base + size, dtype=np.uint64) | np.uint64(tag)).astype(uint).view(dtype)
    with torch.no_grad():
        r.copy_(torch.from_numpy(values.reshape(tuple(r.shape))))
    races.append({"r": r, "draw": draw, "e": e, "base": base, "size": size, "dtype": dtype, "decided": set()})


def _tagged(data: Any) -> Any:
    """The tag indices of a float block's lanes (-1 where a lane holds no tag), or None if none does."""
    data = np.asarray(data)
    if data.dtype not in _TAGS:
        return None
    uint, tag, mask, bits = _TAGS[data.dtype]
    raw = np.ascontiguousarray(data).view(uint)
    hit = (raw & uint(mask)) == uint(tag)
    if not hit.any():
        return None
    return np.where(hit, (raw & uint((1 << bits) - 1)).astype(np.int64), -1)


def _fmul(original: Any) -> Any:
    def create_fmul(self: Any, lhs: Any, rhs: Any) -> Any:
        if not _ACTIVE or not _ACTIVE[-1].__dict__.get("kernel_races"):
            return original(self, lhs, rhs)
        run = _ACTIVE[-1]
        tl_, tr = _tagged(lhs.data), _tagged(rhs.data)
        if tl_ is None and tr is None:
            return original(self, lhs, rhs)
        if tl_ is not None and tr is not None:
            raise UnmodelledRandomness(
                f"E.reciprocal() multiplied by itself or another race in a Triton kernel: {_WHY}"
            )
        tags, noise, w = (tl_, lhs, rhs) if tl_ is not None else (tr, rhs, lhs)
        weights = np.asarray(w.data)
        if weights.shape != tags.shape:
            raise UnmodelledRandomness(
                f"E.reciprocal() multiplied in a Triton kernel by a value of shape "
                f"{list(weights.shape)}, not a block of weights of its shape {list(tags.shape)}: "
                f"{_WHY}"
            )
        from specproof.trace.sources.torch_mode import _decide_race

        inv = np.array(noise.data, copy=True)
        for race in _races(run):
            inside = (tags >= race["base"]) & (tags < race["base"] + race["size"])
            if not inside.any():
                continue
            v = race["draw"].shape[-1]
            flat = tags[inside] - race["base"]
            rows, cols = flat // v, flat % v
            for row in np.unique(rows).tolist():
                lanes = np.flatnonzero(inside.reshape(-1))[rows == row]
                got = np.sort(cols[rows == row])
                if row in race["decided"] or len(got) != v or (got != np.arange(v)).any():
                    raise UnmodelledRandomness(
                        f"E.reciprocal()'s row {row} is multiplied in a Triton kernel {'again' if row in race['decided'] else 'in parts (a vocabulary wider than the kernel tile)'}: "
                        f"{_WHY}"
                    )
                order = np.argsort(cols[rows == row])
                lane_of = lanes[order]  # lane_of[c]: the lane holding column c
                row_w = [float(x) for x in weights.reshape(-1)[lane_of]]
                fill = np.full(v, np.inf)
                fill = _decide_race(run, row_w, int(row), fill)
                race["decided"].add(row)
                with np.errstate(divide="ignore"):
                    inv.reshape(-1)[lane_of] = np.reciprocal(np.asarray(fill, dtype=np.float64).astype(race["dtype"]))
            if len(race["decided"]) == race["size"] // race["draw"].shape[-1]:
                race["draw"].resolved = True
        substituted = type(noise)(inv.astype(np.asarray(noise.data).dtype), noise.dtype)
        return original(self, substituted, w) if tl_ is not None else original(self, w, substituted)

    return create_fmul


def _refusing(name: str, original: Any) -> Any:
    def op(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _ACTIVE and _ACTIVE[-1].__dict__.get("kernel_races"):
            for a in (*args, *kwargs.values()):
                if hasattr(a, "data") and _tagged(a.data) is not None:
                    raise UnmodelledRandomness(f"E.reciprocal() is used by the Triton interpreter's {name}: {_WHY}")
        return original(self, *args, **kwargs)

    return op


def _launch(original: Any) -> Any:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = original(self, *args, **kwargs)
        if _ACTIVE:
            for race in _ACTIVE[-1].__dict__.get("kernel_races", []):
                if not race["draw"].resolved and not race["decided"]:
                    raise UnmodelledRandomness(
                        f"a Triton kernel read E.reciprocal() and did not multiply it by weights: {_WHY}"
                    )
        return out

    return call


def install(patcher: Any) -> None:
    """Patch the interpreter's builder (``fmul`` decides races; every other op refuses tagged values) and its kernel
    launch (a race read but not decided is refused)."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is None:
        return
    builder = interpreter.InterpreterBuilder
    for name in dir(builder):
        if not name.startswith("create_") or name in (
            "create_load",
            "create_masked_load",
            "create_tensor_pointer_load",
            "create_get_program_id",
            "create_get_num_programs",
        ):
            continue
        original = getattr(builder, name)
        if not callable(original):
            continue
        patcher.set(builder, name, _fmul(original) if name == "create_fmul" else _refusing(name, original))
    patcher.set(interpreter.GridExecutor, "__call__", _launch(interpreter.GridExecutor.__call__))
    _STATE["installed"] = True
    patcher.at_exit(lambda: _STATE.update(installed=False))
