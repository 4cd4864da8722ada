"""A float floor for any code: re-trace it on the same rows in a wider format.

The float-ideal family (:mod:`specproof.rules.faithful`) names the float floor of the textbook verifier
only. Correct code outside it (EAGLE-style posterior evaluation, a speculative step that applies its
sampling parameters inside itself, a whole step compared with its plain sampler) is off from its
reference by a TV of the same size, and the family cannot tell it from a fault. This module makes the
scaling argument instead (docs/float-arithmetic.md, "A float floor for any code"):

- a *float artefact* of correct code is a rounding error, and its TV scales with the unit roundoff
  ``u`` of the format the code computes in;
- a *logic fault* has a TV in exact arithmetic, which a wider format does not remove.

So the same code is traced again with its rows widened, exactly (a float32 value is a float64 value;
``x.to(float64)``, ``astype(float64)``, a callable's rows likewise), and with PyTorch's default dtype
float64 (so ``torch.rand(())`` and new tensors are float64 too). The rows' values, hence the target's
law, are unchanged; only the code's arithmetic is wider. If the TV falls at least to
``TV * sqrt(u_wide / u_narrow)`` (the geometric middle of "did not fall" and "fell as u did"; for
float32 to float64 a fall by at least 2^-14.5, where a float artefact falls by about 2^-29), the TV is a
float artefact: ``float-faithful``. If not, it is ``lossy``. The argument is made only where it can be:
rows already float64 cannot be widened, code that raises on float64 rows or computes in a narrower
format on them (a ``dtype=torch.float32``, a ``.float()``; seen by a PyTorch function mode) leaves the
TV where it was for no reason of its own: then the verdict is ``undecided``, with the reason. The re-trace
stops at the first such tensor (usually in its first run): from there its TV could not change that verdict,
and finishing it cost a second whole trace (SGLang's block verification at gamma 2: about 400 s of CPU).

It runs only when the first verdict would be ``lossy`` with no mass outside the target's support (an
output of probability 0 is always a fault) and a TV below :func:`gross_threshold` (a gross fault needs
no floor).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from types import FrameType
from typing import Any

from specproof.laws.numtext import number_text

__all__ = [
    "FloorArgument",
    "argue",
    "code_of",
    "gross_threshold",
    "narrower_than",
    "narrowest",
    "row_format",
    "sum_error",
    "widen",
    "widened",
]

#: Formats that can be widened, and their precision (significand bits, the hidden one included).
_PRECISION = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}

#: The format the rows are widened to.
WIDE = "float64"


@dataclass(frozen=True)
class FloorArgument:
    """How a small TV was argued to be a float artefact or a fault (or why it could not be).

    Attributes
    ----------
    argument : str
        ``"widening"``: the same code re-traced on the same rows in ``wide``.
    outcome : {"float artefact", "fault", "not made"}
    narrow, wide : str
        The rows' format as given and the format of the re-trace (``wide`` is ``""`` when not made).
    tv : Fraction
        The exact TV as given (rows in ``narrow``).
    tv_wide : Fraction or None
        The exact TV of the re-trace (None when not made).
    threshold : Fraction or None
        The re-trace's TV must be at most this for a float artefact: ``tv * sqrt(u_wide / u_narrow)``,
        rounded down to a power of two times ``tv``.
    reason : str
        One sentence: the observation and what follows from it.
    runs : int
        Runs of the re-trace (0 when not made).
    """

    argument: str
    outcome: str
    narrow: str
    wide: str
    tv: Fraction
    tv_wide: Fraction | None
    threshold: Fraction | None
    reason: str
    runs: int = 0

    def line(self) -> str:
        """The argument in one line, as reports print it."""
        if self.outcome == "not made":
            return f"float floor not argued (TV {number_text(self.tv)}): {self.reason}"
        wide = "?" if self.tv_wide is None else number_text(self.tv_wide)
        needs = "" if self.threshold is None else f" (a float artefact needs <= {float(self.threshold):.3g})"
        return (
            f"float floor by re-tracing in {self.wide}: TV {number_text(self.tv)} with {self.narrow} rows, "
            f"{wide} on the same rows' laws in {self.wide}{needs}: {self.reason}"
        )


def _precision(fmt: str) -> int:
    return _PRECISION[fmt]


def _bits(fmt: str) -> int:
    """The precision of a format the code may compute in: 0 for a floating format narrower than all of
    :data:`_PRECISION` (PyTorch's float8 types), so it counts as the narrowest."""
    return _PRECISION.get(fmt, 0)


def gross_threshold(fmt: str, sum_error: float = 0.0) -> Fraction:
    """The TV above which a ``lossy`` verdict is kept without a floor argument: ``min(2^-6, 2^12 e)`` with
    ``e`` the larger of the rows' unit roundoff ``u = 2^-precision`` and ``sum_error``, how far a given
    probability row's sum is from 1 (float32 rows: 2^-12, about 2.4e-4; float64 rows that were rounded
    from float32, their sums off by about 1e-8: about 4e-5; float16 and bfloat16 2^-6). A float artefact
    of code that rounds a few times per entry of a row of V entries is about ``V e``; 2^12 leaves room for
    V in the thousands.

    Examples
    --------
    >>> gross_threshold("float32"), gross_threshold("float64")
    (Fraction(1, 4096), Fraction(1, 2199023255552))
    """
    e = max(Fraction(1, 2 ** _bits(fmt)), Fraction(sum_error))
    return min(Fraction(1, 64), 2**12 * e)


def sum_error(*rows: Any) -> float:
    """The largest ``|fsum(row) - 1|`` over the probability rows among ``rows`` (tensors, arrays, lists, stacks
    of rows, a callable's row after the empty prefix); 0 when there is none."""
    worst = 0.0
    for r in rows:
        if r is None:
            continue
        if callable(r) and not hasattr(r, "dtype"):
            try:
                r = r(())
            except Exception:  # noqa: BLE001 - the row callable's own failure is reported by the trace
                continue
        data = r.tolist() if hasattr(r, "tolist") else r
        try:
            stack = (
                [list(map(float, x)) for x in data]
                if data and isinstance(data[0], (list, tuple))
                else [list(map(float, data))]
            )
        except (TypeError, ValueError):
            continue
        for row in stack:
            total = _probability_row(row, row_format(r) or WIDE)
            if total is not None:
                worst = max(worst, abs(total - 1))
    return worst


def row_format(rows: Any) -> str | None:
    """The float format of a tensor or array of rows, or of a callable's row after the empty prefix;
    ``"float64"`` for Python floats and rationals (nothing wider to give); None if unknown."""
    if rows is None:
        return None
    dtype = getattr(rows, "dtype", None)
    if dtype is None and callable(rows):
        try:
            dtype = getattr(rows(()), "dtype", None)
        except Exception:  # noqa: BLE001 - the row callable's own failure is reported by the trace
            return None
    if dtype is None:
        return "float64"
    name = str(dtype).replace("torch.", "")
    return name if name in _PRECISION else None


def _probability_row(values: list[float], fmt: str) -> float | None:
    """The correctly rounded sum of a row that is a probability row in ``fmt`` (finite, nonnegative, summing
    to 1 within float rounding: 10^-3, or twice the format's unit roundoff if larger), else None (logits)."""
    if not values or any(not math.isfinite(x) or x < 0 for x in values):
        return None
    total = math.fsum(values)
    tol = max(1e-3, 2.0 ** (2 - _precision(fmt))) if fmt in _PRECISION else 1e-3
    return total if total > 0 and abs(total - 1) <= tol else None


def _widen_one(row: Any) -> Any:
    """One row (or a stack of rows) in float64: each probability row is its law rounded to float64
    (``x / fsum(row)`` in float64: within 2 ulps of the exact quotient), any other row (logits) its exact
    value."""
    fmt = row_format(row) if hasattr(row, "dtype") else None
    if fmt is None or fmt == WIDE:
        return row
    is_torch = hasattr(row, "detach")
    if is_torch:
        import torch

        wide = row.detach().to(torch.float64)
    else:
        import numpy as np

        wide = np.asarray(row, dtype=np.float64)
    flat = wide.reshape(-1, wide.shape[-1]) if len(wide.shape) else None
    if flat is None:
        return wide
    for i in range(flat.shape[0]):
        total = _probability_row([float(x) for x in flat[i].tolist()], fmt)
        if total is not None:
            flat[i] = flat[i] / total
    return flat.reshape(wide.shape)


def widen(rows: Any) -> Any:
    """The same rows in float64: tensors and arrays of float16, bfloat16 or float32 (a callable's rows
    likewise), each probability row as its law (its values over their sum) rounded to float64, so the row's
    own rounding in the narrow format goes too; rows that are no probability rows (logits) at their exact
    values. Anything else as given.

    Examples
    --------
    >>> import torch
    >>> w = widen(torch.tensor([0.2, 0.5, 0.3]))
    >>> w.dtype, abs(float(w.sum()) - 1) < 1e-15
    (torch.float64, True)
    """
    if rows is None:
        return None
    if callable(rows) and not hasattr(rows, "dtype"):
        return lambda prefix: _widen_one(rows(prefix))
    return _widen_one(rows)


def code_of(f: Any) -> set[Any]:
    """The code objects of a callable (a function, a lambda, a bound method, a ``functools.partial``, an
    object with ``__call__``), to tell the sampler's own calls from the tracer's."""
    codes = set()
    call = type(f).__dict__.get("__call__") if not isinstance(f, type) else None  # an object with __call__
    for g in (f, getattr(f, "func", None), getattr(f, "__func__", None), call):
        code = getattr(g, "__code__", None)
        if code is not None:
            codes.add(code)
    return codes


def _outside(name: str) -> bool:
    """A frame of specproof, torch, or the standard library's contextlib, functools or copy (by where the file is,
    not by its name: a user's clone of the repository is a folder named specproof too)."""
    from specproof.trace.core import PACKAGE_DIR, in_stdlib, module_dir, real_file

    real = real_file(name)
    torch_dir = module_dir("torch")
    return (
        real.startswith("<")
        or real.startswith(PACKAGE_DIR)
        or (torch_dir is not None and real.startswith(torch_dir))
        or in_stdlib(real, "contextlib.py", "functools.py", "copy.py")
    )


def _sampler_site(codes: Collection[Any]) -> str | None:
    """``file:line`` of the innermost frame outside specproof and torch, if it runs inside the sampler (a
    frame of one of ``codes`` at or beyond it; any frame when ``codes`` is empty), else None."""
    frame: FrameType | None = sys._getframe(2)
    site = None
    while frame is not None:
        if site is None and not _outside(frame.f_code.co_filename):
            site = f"{frame.f_code.co_filename}:{frame.f_lineno}"
            if not codes:
                return site
        if site is not None and frame.f_code in codes:
            return site
        frame = frame.f_back
    return None


class _Narrower(BaseException):
    """Internal: the sampler made a tensor narrower than the re-trace's format; the re-trace stops there.

    A ``BaseException``, so that the sampler's own ``except Exception`` and the tracer's wrapping of the
    sampler's errors let it through (as the tracer's ``_NeedMode``)."""


@contextmanager
def narrower_than(
    fmt: str, codes: Collection[Any] = frozenset(), stop: bool = False
) -> Iterator[list[tuple[str, str]]]:
    """A PyTorch function mode (PyTorch's default dtype unchanged) that lists every torch call in the sampler's
    code (run inside a frame of ``codes``) that returned a floating tensor of less precision than ``fmt``, as
    ``(format, "float32 from as_tensor at file.py:12")``: the code computes in a narrower format than its rows.
    Nothing is listed where torch is not imported (NumPy's arithmetic is not watched). ``stop``: raise the
    internal ``_Narrower`` at the first one listed (every later one too), to end the code's run there."""
    found: list[tuple[str, str]] = []
    torch = sys.modules.get("torch")
    if torch is None:
        yield found
        return
    from torch.overrides import TorchFunctionMode

    bits = _precision(fmt)

    class _Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if len(found) < 8:
                for t in out if isinstance(out, (tuple, list)) else (out,):
                    if (
                        isinstance(t, torch.Tensor)
                        and t.is_floating_point()
                        and _bits(name := str(t.dtype).replace("torch.", "")) < bits
                    ):
                        site = _sampler_site(codes)
                        if site is not None:
                            found.append((name, f"{name} from {getattr(func, '__name__', str(func))} at {site}"))
                            if stop:
                                raise _Narrower
                        break
            return out

    with _Watch():
        yield found


def narrowest(formats: Collection[str]) -> str | None:
    """The format of least precision among ``formats`` (None for none)."""
    return min(formats, key=_bits, default=None)


@contextmanager
def widened(codes: Collection[Any] = frozenset(), stop: bool = False) -> Iterator[list[tuple[str, str]]]:
    """PyTorch's default dtype float64 for the duration (if torch is imported), and :func:`narrower_than`
    float64: every torch call in the sampler's code (run inside a frame of ``codes``) that returned a floating
    tensor narrower than float64, as ``(format, "float32 from rand at file.py:12")``: the code did not compute
    in the wider format there. ``stop``: end the code's run at the first one (:func:`narrower_than`)."""
    torch = sys.modules.get("torch")
    if torch is None:
        yield []
        return
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with narrower_than(WIDE, codes, stop) as narrow:
            yield narrow
    finally:
        torch.set_default_dtype(old)


def argue(
    tv: Fraction,
    target: Any,
    draft: Any,
    retrace: Callable[[Any, Any], tuple[Fraction, int]],
    errors: tuple[type[BaseException], ...],
    codes: Collection[Any] = frozenset(),
) -> FloorArgument:
    """Make the widening argument for a TV ``tv`` measured on ``target``/``draft``.

    Parameters
    ----------
    tv : Fraction
        The exact TV as given (positive).
    target, draft : rows
        As given to the sampler.
    retrace : callable ``(wide_target, wide_draft) -> (tv_wide, runs)``
        Traces the same code (and its reference, if any) on the widened rows and returns the exact TV
        the same way ``tv`` was measured; called inside :func:`widened`.
    errors : tuple of exception types
        What the re-trace may raise for a reason of the code's own (it raised on float64 rows, say): the
        argument is then not made, and the error is named.
    codes : set of code objects, optional
        The sampler's (and the reference's) code (:func:`code_of`): a narrower tensor counts only when made
        inside them (the tracer's own tensors do not).

    Returns
    -------
    FloorArgument
    """
    narrow = row_format(target)
    if narrow is None:
        return FloorArgument(
            "widening",
            "not made",
            "unknown",
            "",
            tv,
            None,
            None,
            "the rows' float format is unknown, so they cannot be widened",
        )
    if narrow == WIDE:
        return FloorArgument(
            "widening",
            "not made",
            narrow,
            "",
            tv,
            None,
            None,
            "the rows are already float64: there is no wider format to re-trace them in",
        )
    ratio_bits = _precision(WIDE) - _precision(narrow)
    # TV * 2^-ceil(bits / 2): the geometric middle of "no fall" and "a fall by u_wide / u_narrow", rounded to
    # the stricter side
    threshold = tv / 2 ** math.ceil(ratio_bits / 2)
    wt, wd = widen(target), widen(draft)
    tv_wide: Fraction | None = None
    runs = 0
    failed = None
    narrow_ops: list[tuple[str, str]] = []
    # The re-trace stops at the first tensor narrower than float64 made in the code: from there the argument is
    # not made whatever the re-trace's TV, so finishing it (a second whole trace) could not change the verdict.
    try:
        with widened(codes, stop=True) as narrow_ops:
            tv_wide, runs = retrace(wt, wd)
    except _Narrower:
        pass
    except errors as exc:
        failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if narrow_ops:  # named before an error of the code's own on float64 rows: not made either way
        stopped = (
            " (the re-trace was stopped at that call: no TV of it could make the argument)"
            if tv_wide is None and failed is None
            else ""
        )
        return FloorArgument(
            "widening",
            "not made",
            narrow,
            WIDE,
            tv,
            tv_wide,
            threshold,
            f"on float64 rows the code still computes in a narrower format ({narrow_ops[0][1]}"
            f"{'; ...' if len(narrow_ops) > 1 else ''}), so its TV need not fall with float64's "
            f"unit roundoff and the wider format is no argument{stopped}; make its dtype follow the rows' to "
            "get a verdict",
            runs,
        )
    if failed is not None:
        return FloorArgument(
            "widening",
            "not made",
            narrow,
            WIDE,
            tv,
            None,
            threshold,
            f"the code could not be re-traced on the rows widened to float64 ({failed})",
        )
    assert tv_wide is not None  # the re-trace returned: only a narrower tensor stops it early, and that is above
    if tv_wide <= threshold:
        fell = "to 0" if tv_wide == 0 else f"by 2^{math.log2(tv_wide / tv):.1f}"
        return FloorArgument(
            "widening",
            "float artefact",
            narrow,
            WIDE,
            tv,
            tv_wide,
            threshold,
            f"the TV fell {fell} as the unit roundoff fell by 2^-{ratio_bits}: a float artefact of "
            "the code's arithmetic, not a logic fault (a fault's TV stays in exact arithmetic)",
            runs,
        )
    return FloorArgument(
        "widening",
        "fault",
        narrow,
        WIDE,
        tv,
        tv_wide,
        threshold,
        f"the TV did not fall with the unit roundoff (2^-{ratio_bits}): a fault in the code's logic, not its rounding",
        runs,
    )
