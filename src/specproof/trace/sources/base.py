"""The interface every randomness source implements, and the registry :func:`~specproof.trace.sources.intercepted` reads.

A *source* is one library's (or one module's) random functions under the tracer's control. It says
which library makes it active, puts its patches in place, names the generator state the tracer
watches as a catch-all, and states the modelling assumption behind each call it models. Inside a
patched function a source takes its values from the active run (:func:`specproof.trace.core._run`):
``_uniform_values(run, n, bits, call)`` for uniforms on the grid ``k / 2^bits``,
``_draw_categorical(run, values, probs, call)`` for an exact categorical, and raises
:class:`~specproof.trace.core.UnmodelledRandomness` for what it does not model. See
``docs/tracing.md``, "Adding a randomness source".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

__all__ = ["Source", "Patcher", "register", "unregister", "SOURCES"]


class Patcher:
    """Sets attributes for the duration of a trace and undoes every change afterwards (in reverse order)."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []

    def set(self, owner: Any, name: str, new: Any) -> None:
        """Replace ``owner.name`` by ``new`` (nothing if ``owner`` has no such attribute).

        Parameters
        ----------
        owner : module or class
            Where the name lives (``torch``, ``torch.Tensor``, ``numpy.random``, ``random.Random``).
        name : str
            The attribute.
        new : object
            Its value while the trace runs.
        """
        if name in vars(owner):
            old = vars(owner)[name]
            self._undo.append(lambda: setattr(owner, name, old))
        elif hasattr(owner, name):
            self._undo.append(lambda: delattr(owner, name))
        else:
            return
        setattr(owner, name, new)

    def at_exit(self, fn: Callable[[], None]) -> None:
        """Call ``fn`` when the trace ends (after later patches are undone)."""
        self._undo.append(fn)

    def undo(self) -> None:
        """Undo every change, the last first."""
        while self._undo:
            self._undo.pop()()


class Source:
    """One source of randomness under the tracer's control (subclass it; register an instance).

    Attributes
    ----------
    name : str
        A short unique name (``"torch"``, ``"numpy"``, ``"python-random"``).
    module : str or None
        The module whose import makes the source active (``"torch"``: installed only if the sampler
        uses torch, also when it imports torch during a run); None: always active.
    assumptions : dict of str -> str
        For each call name the source records (the ``call`` of its slots), the modelling assumption
        a result states when a run made that call.
    """

    name: str = ""
    module: str | None = None
    assumptions: dict[str, str] = {}

    def install(self, patcher: Patcher) -> None:
        """Put the source's patches in place through ``patcher`` (undone when the trace ends)."""
        raise NotImplementedError

    def state(self) -> Hashable | None:
        """The state of a generator the source watches (compared before and after every run: a change means a
        draw through a path that was not patched, which is refused); None: nothing to watch."""
        return None


#: The registered sources, in installation order (see :func:`register`).
SOURCES: list[Source] = []


def register(source: Source) -> Source:
    """Add ``source`` to the sources every later trace installs (replacing one of the same name).

    Parameters
    ----------
    source : Source
        An instance with a non-empty ``name``.

    Returns
    -------
    Source
        ``source`` itself.

    Raises
    ------
    specproof.errors.InvalidOption
        ``source`` is not a :class:`Source` or has no name, or a trace is running.
    """
    from specproof.errors import InvalidOption
    from specproof.trace.core import _ACTIVE

    if not isinstance(source, Source) or not source.name:
        raise InvalidOption(f"register takes a Source instance with a name, not {source!r}")
    if _ACTIVE:
        raise InvalidOption(f"source {source.name!r} registered while a trace is running")
    SOURCES[:] = [s for s in SOURCES if s.name != source.name]
    SOURCES.append(source)
    return source


def unregister(name: str) -> None:
    """Remove the source called ``name`` from the sources later traces install.

    Parameters
    ----------
    name : str
        The source's ``name``; nothing happens if no source has it.
    """
    SOURCES[:] = [s for s in SOURCES if s.name != name]
