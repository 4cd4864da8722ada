"""Which uniforms a Triton kernel reads, under ``TRITON_INTERPRET=1`` (SGLang's coins).

SGLang's ``_verify_coins`` draws ``torch.rand_like(candidates)``, one coin per slot of the chain, and its kernel
reads only the coins of the drafts it verifies: the last is never loaded. A coin that reaches a kernel is not
readable from comparisons (the interpreter compares NumPy values), so it was bisected, and an unused coin
multiplied the trace's runs by three (its law is the law of the rest at three grid points, each traced in full).

Here a uniform tensor drawn by ``torch.rand`` or ``torch.rand_like`` while the interpreter is on has its memory
recorded (:func:`watch`); every load of the interpreter (its one ``load`` of memory) marks the uniforms whose bytes
it reads (:func:`install`), an atomic marks all of them, and a kernel launch whose host copy of such a tensor is
not the tensor's own memory (or that runs hooks on the host copies) marks its uniforms as used. The
torch-function mode marks the uniforms of any tensor it sees in a call other than reading its shape and layout
(:data:`METADATA`), or, inside a launch, the interpreter's plumbing (:data:`PLUMBING`). A uniform none of these marked was
not read by the run: the tracer gives it the law at its default where no run of that law read it
(:meth:`specproof.trace.explore._Tracer._unread_law`), after the same guard runs as a threshold read from its
comparisons.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from specproof.trace.core import _ACTIVE

#: Calls on a tensor that read no value: its shape, layout and type.
METADATA = frozenset(
    {"storage_offset", "stride", "size", "is_contiguous", "element_size", "numel", "dim", "dtype", "device", "shape"}
)
#: And, inside a kernel launch of the interpreter only, what it does with an argument before the kernel loads from its
#: memory (the loads are watched): the same calls elsewhere hand the memory to code that is not watched.
PLUMBING = METADATA | frozenset({"untyped_storage", "data_ptr", "new_empty", "is_cuda"})


def _interpreting() -> bool:
    import os

    return os.environ.get("TRITON_INTERPRET") == "1" and "triton.runtime.interpreter" in sys.modules


def watch(run: Any, tensor: Any, first: int) -> None:
    """Record the memory of ``tensor``, whose element i is the uniform of slot ``first + i`` (a fresh contiguous CPU
    tensor from ``torch.rand``/``torch.rand_like``), if the interpreter is on and the mode watches the run."""
    if run.mode is None or not _interpreting():
        return
    import torch

    with torch._C.DisableTorchFunction():  # the tracer's own look at the tensor: not a use the mode should see
        if tensor.device.type != "cpu" or not tensor.is_contiguous():
            return
        count = tensor.numel()
        if count == 0 or len(run.slots) != first + count:
            return
        address, size = tensor.data_ptr(), tensor.element_size()
    run.keep.append(tensor)  # its memory is not reused during the run
    run.kernel_memory.append((address, size, first, count))


def unread(run: Any) -> frozenset[int]:
    """The uniforms of the watched tensors that nothing in the run read (see the module's docstring)."""
    handed = run.__dict__.get("kernel_handed", set())  # only uniforms passed to a kernel launch: else not watched
    drawn = {s for _, _, first, count in run.kernel_memory for s in range(first, first + count)}
    return frozenset((drawn & handed) - run.kernel_read - run.torch_used)


def used_by_torch(run: Any, name: str, tensors: Any) -> None:
    """A torch call ``name`` on ``tensors`` while the mode watches: the uniforms they hold are used, unless the call
    is plumbing."""
    if name in (PLUMBING if run.__dict__.get("launching") else METADATA):
        return
    for t in tensors:
        held = run.taint.get(id(t))
        if held:
            run.torch_used.update(held)


def _mark(run: Any, addresses: np.ndarray, width: int) -> None:
    """The uniforms whose bytes a load of ``width`` bytes at each of ``addresses`` overlaps are read."""
    for start, size, first, count in run.kernel_memory:
        end = start + size * count
        over = addresses[(addresses < end) & (addresses + width > start)]
        for a in over.tolist():
            lo = max((a - start) // size, 0)
            hi = min((a + width - 1 - start) // size, count - 1)
            run.kernel_read.update(range(first + lo, first + hi + 1))


def _mark_all(run: Any) -> None:
    for _, _, first, count in run.kernel_memory:
        run.kernel_read.update(range(first, first + count))


class _Memory:
    """The interpreter's C module with its reads of memory watched."""

    def __init__(self, real: Any) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def load(self, ptrs: Any, mask: Any, other: Any, dtype: Any) -> Any:
        if _ACTIVE and _ACTIVE[-1].kernel_memory:
            addresses = np.asarray(ptrs).astype(np.int64).reshape(-1)
            m = np.asarray(mask, dtype=bool).reshape(-1)
            _mark(_ACTIVE[-1], addresses[m] if m.size == addresses.size else addresses, np.dtype(dtype).itemsize)
        return self._real.load(ptrs, mask, other, dtype)

    def atomic_cas(self, *args: Any) -> Any:
        if _ACTIVE:
            _mark_all(_ACTIVE[-1])
        return self._real.atomic_cas(*args)

    def atomic_rmw(self, *args: Any) -> Any:
        if _ACTIVE:
            _mark_all(_ACTIVE[-1])
        return self._real.atomic_rmw(*args)


def _host_args(original: Any) -> Any:
    def init_args_hst(self: Any, args_dev: Any, kwargs: Any) -> Any:
        args_hst, kwargs_hst = original(self, args_dev, kwargs)
        if _ACTIVE and _ACTIVE[-1].kernel_memory:
            run = _ACTIVE[-1]
            pairs = list(zip(args_dev, args_hst)) + [(kwargs[k], kwargs_hst[k]) for k in kwargs if k in kwargs_hst]
            for dev, hst in pairs:
                if hasattr(dev, "data_ptr") and id(dev) in run.taint:
                    run.__dict__.setdefault("kernel_handed", set()).update(run.taint[id(dev)])
                    # a copy (the kernel's loads are not of the watched memory), or hooks run on the host copies
                    if self.pre_run_hooks or not hasattr(hst, "data_ptr") or dev.data_ptr() != hst.data_ptr():
                        run.torch_used.update(run.taint[id(dev)])
        return args_hst, kwargs_hst

    return init_args_hst


def _launching(original: Any) -> Any:
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        active = _ACTIVE[-1] if _ACTIVE else None
        if active is None:
            return original(self, *args, **kwargs)
        before = active.launching
        active.launching = before + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            active.launching = before

    return run


def install(patcher: Any) -> None:
    """Watch the interpreter's loads and atomics, and its host copies of a launch's arguments."""
    interpreter = sys.modules.get("triton.runtime.interpreter")
    if interpreter is None or not hasattr(interpreter, "_interpreter"):
        return
    patcher.set(interpreter, "_interpreter", _Memory(interpreter._interpreter))
    patcher.set(interpreter.InterpretedFunction, "run", _launching(interpreter.InterpretedFunction.run))
    if hasattr(interpreter.GridExecutor, "_init_args_hst"):
        patcher.set(interpreter.GridExecutor, "_init_args_hst", _host_args(interpreter.GridExecutor._init_args_hst))
