"""The randomness sources the tracer controls: what each patches and how each call is modelled.

:mod:`~specproof.trace.sources.torch_calls` (PyTorch's random functions and tensor methods),
:mod:`~specproof.trace.sources.torch_mode` (the torch-function mode that decides exponential races,
reads thresholds and follows draws), :mod:`~specproof.trace.sources.numpy_generator` (the NumPy
generator the tracer provides and NumPy's legacy global functions), :mod:`~specproof.trace.sources.python_random`
(Python's :mod:`random`), :mod:`~specproof.trace.sources.mlx_random` (MLX's ``mx.random``),
:mod:`~specproof.trace.sources.gumbel` (Gumbel-max on torch uniforms, as a race),
:mod:`~specproof.trace.sources.triton_random` (Triton's ``tl.rand``/``tl.randint`` under ``TRITON_INTERPRET=1``). Each is a :class:`~specproof.trace.sources.base.Source` in the registry
:data:`SOURCES`; :func:`intercepted` puts every registered source's patches in place for the duration of a trace.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import Any

from specproof.trace.sources.base import SOURCES, Patcher, Source, register, unregister
from specproof.trace.sources.mlx_random import MlxSource
from specproof.trace.sources.numpy_generator import NumpySource, TracedGenerator
from specproof.trace.sources.python_random import PythonRandomSource
from specproof.trace.sources.system import SystemSource
from specproof.trace.sources.torch_calls import TorchSource
from specproof.trace.sources.triton_random import TritonSource

__all__ = ["intercepted", "Source", "Patcher", "register", "unregister", "SOURCES", "TracedGenerator"]

# the built-in sources, in installation order; a new source is one module with a Source subclass and this line
for _source in (TorchSource(), NumpySource(), PythonRandomSource(), SystemSource(), MlxSource(), TritonSource()):
    register(_source)


@contextlib.contextmanager
def intercepted() -> Iterator[None]:
    """Patch every modelled and refused random function for the duration of the block.

    The originals are restored on exit, also when the block raises. Within the block the modelled
    functions take their values from the active run (see :func:`~specproof.trace.tracer.trace`). Every
    registered source (:data:`SOURCES`) whose module is imported is installed; one whose module is
    imported later (a sampler that imports torch during a run) is installed by :func:`_install_late`.
    """
    patcher = Patcher()
    installed: set[str] = set()

    def install_ready() -> bool:
        new = False
        for source in list(SOURCES):
            if source.name not in installed and (source.module is None or source.module in sys.modules):
                source.install(patcher)
                installed.add(source.name)
                new = True
        return new

    try:
        install_ready()
        _INSTALLING.append((install_ready, installed))
        yield
    finally:
        patcher.undo()
        if _INSTALLING:
            _INSTALLING.pop()


#: While :func:`intercepted` is active: the function that installs the sources whose module was imported since,
#: and the names of the sources installed.
_INSTALLING: list[tuple[Callable[[], bool], set[str]]] = []


def _installed() -> frozenset[str]:
    """The names of the sources installed by the active :func:`intercepted` (empty outside one)."""
    return frozenset(_INSTALLING[-1][1]) if _INSTALLING else frozenset()


def _install_late() -> bool:
    """Install the sources whose module was imported since the trace began; True if any was."""
    return bool(_INSTALLING) and _INSTALLING[-1][0]()


def _states(generator: TracedGenerator | None) -> tuple:
    """The watched generators' states (every registered source's, then the provided NumPy generator's)."""
    out: list[Any] = [source.state() for source in SOURCES if source.module is None or source.module in sys.modules]
    if generator is not None:
        out.append(repr(generator.bit_generator.state))
    return tuple(out)


def _call_assumption(call: str) -> str:
    """The modelling assumption a registered source states for ``call``."""
    for source in SOURCES:
        if call in source.assumptions:
            return source.assumptions[call]
    return f"{call}: modelled by a source that states no assumption"
