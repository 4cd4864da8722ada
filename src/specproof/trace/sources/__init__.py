"""The randomness sources the tracer controls: what each patches and how each call is modelled.

:mod:`~specproof.trace.sources.torch_calls` (PyTorch's random functions and tensor methods),
:mod:`~specproof.trace.sources.torch_mode` (the torch-function mode that decides exponential races,
reads thresholds and follows draws), :mod:`~specproof.trace.sources.numpy_generator` (the NumPy
generator the tracer provides and NumPy's legacy global functions), :mod:`~specproof.trace.sources.python_random`
(Python's :mod:`random`). :func:`intercepted` puts every patch in place for the duration of a trace.
"""

from __future__ import annotations

import contextlib
import random as _pyrandom
import sys
from typing import Any, Callable, Iterator

import numpy as np

from specproof.trace.core import _refuser
from specproof.trace.sources.numpy_generator import _NUMPY_LEGACY, TracedGenerator
from specproof.trace.sources.python_random import _PY_RANDOM
from specproof.trace.sources.torch_calls import _TENSOR_REFUSED, _TORCH_REFUSED, _torch_patches


@contextlib.contextmanager
def intercepted() -> Iterator[None]:
    """Patch every modelled and refused random function for the duration of the block.

    The originals are restored on exit, also when the block raises. Within the block the modelled
    functions take their values from the active run (see :func:`trace`).
    """
    undo: list[Callable[[], None]] = []

    def patch(owner: Any, name: str, new: Any) -> None:
        if name in vars(owner):
            old = vars(owner)[name]
            undo.append(lambda: setattr(owner, name, old))
        elif hasattr(owner, name):
            undo.append(lambda: delattr(owner, name))
        else:
            return
        setattr(owner, name, new)

    def patch_torch() -> None:
        import torch

        # tiny tensors: one intra-op thread (measured: softmax of a [1, 3, 16] tensor took ~13 ms with
        # the default thread pool on a shared 2-core machine, ~10 us with one thread); restored below
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        undo.append(lambda: torch.set_num_threads(threads))
        fns = _torch_patches()
        for name in ("rand", "rand_like", "multinomial", "randint"):
            patch(torch, name, fns[name])
        patch(torch.Tensor, "uniform_", fns["uniform_"])
        patch(torch.Tensor, "multinomial", fns["tensor_multinomial"])
        for name in _TORCH_REFUSED:
            patch(torch, name, _refuser(f"torch.{name}"))
        patch(torch.Tensor, "exponential_", fns["exponential_"])
        for name in _TENSOR_REFUSED:
            patch(torch.Tensor, name, _refuser(f"Tensor.{name}"))
        _TORCH_PATCHED.append(True)

    try:
        if "torch" in sys.modules:  # a NumPy-only sampler does not import torch
            patch_torch()
        _LATE_TORCH.append(patch_torch)
        for name in _NUMPY_LEGACY:
            hint = ("; take the generator trace() provides (numpy_rng=...)" if name == "default_rng"
                    else " (NumPy's global legacy generator)")
            patch(np.random, name, _refuser(f"numpy.random.{name}", hint))
        for name in _PY_RANDOM:
            patch(_pyrandom, name, _refuser(f"random.{name}", " (Python's random module)"))
        yield
    finally:
        for fn in reversed(undo):
            fn()
        _TORCH_PATCHED.clear()
        if _LATE_TORCH:
            _LATE_TORCH.pop()


#: While :func:`intercepted` is active: the function that patches torch (called when a sampler imports
#: torch during a run), and whether torch is patched.
_LATE_TORCH: list[Callable[[], None]] = []
_TORCH_PATCHED: list[bool] = []


def _states(generator: TracedGenerator | None) -> tuple:
    out: list[Any] = [_pyrandom.getstate()]
    name, keys, pos, has_gauss, cached = np.random.mtrand._rand.get_state(legacy=True)
    out.append((keys.tobytes(), pos, has_gauss, cached))
    torch = sys.modules.get("torch")
    if torch is not None:
        out.append(bytes(torch.default_generator.get_state().numpy()))
    if generator is not None:
        out.append(repr(generator.bit_generator.state))
    return tuple(out)
