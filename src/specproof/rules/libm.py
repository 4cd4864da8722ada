"""A library's own ``log`` and ``exp``, evaluated and kept as data.

``log`` and ``exp`` are not basic IEEE operations: IEEE 754 recommends but does not require that
they be correctly rounded, and PyTorch and NumPy return different floats for the same input
(measured here: NumPy's float32 ``log`` differs from PyTorch's on about a fifth of the float32
coin grid, and is not even monotone on it). A verifier that tests ``log u < log p - log q`` or
``u < exp(log p - log q)`` therefore has a law that depends on its library's results. This module
does not model them: it *evaluates* the library's own function, in the row's dtype, at the
finitely many values the law needs (the rows' entries, the differences formed from them, and the
coin's grid points), and returns the results as exact values. A law built from them is exact about
the code on the machine it was computed on; it is not a statement about other machines, versions
or builds, which :func:`library_provenance` names.

============== ============================================================================
value          how it is obtained
============== ============================================================================
``log p``      the library's log of the whole row, as one vector of the row's dtype
``exp d``      the library's exp of one value of the row's dtype
``log u``      float32 coins: the library's log of every grid point (2^24 + 1 values, one
               vector, once per process), then counted exactly; float64 coins: bisection on the
               grid with one library call per probe, which assumes the library's float64 log
               is monotone (checked at the probes only; stated in the rule's caveats)
``softmax z``  the library's softmax of a row of logits (entries finite or ``-inf``), as one vector
               of the row's dtype: PyTorch's ``torch.softmax(z, dim=-1)``; NumPy, which has
               none, the form NumPy code writes, ``e = np.exp(z - z.max()); e / e.sum()``
``cumsum r``   the library's cumulative sum of a row, as one vector of the row's dtype
``sum r``      the library's sum of a row (``r.sum()`` of a tensor or array of the row's dtype),
               the number code divides a residual by: PyTorch sums rows of 5 or more entries in
               vector blocks, NumPy rows of 8 or more pairwise, not left to right (measured here)
============== ============================================================================

PyTorch's results are those of CPU tensors; a 0-dim tensor and a whole vector gave identical
results on 20,000 float32 and float64 inputs here (measured), but a kernel that takes another
path (a GPU, another vector width) may round otherwise.

References
----------
IEEE Std 754-2019, Section 9.2 (recommended correctly rounded functions; not required);
Muller et al., *Handbook of Floating-Point Arithmetic*, 2nd ed. 2018, Chapter 10.
"""

from __future__ import annotations

import functools
import importlib
import math
import sys
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from specproof.errors import SpecProofError, renamed

__all__ = [
    "LIBRARIES",
    "DTYPES",
    "LibraryUnavailable",
    "loaded",
    "library_provenance",
    "log_row",
    "exp_value",
    "softmax_row",
    "cumsum_row",
    "sum_value",
    "row_sum",
    "available",
    "SUM_DTYPES",
    "log_coin_count",
    "rounds_python_coin",
    "numpy_pairwise_order",
    "torch_cascade_order",
    "evaluate_order",
    "sum_order",
]

#: The libraries whose functions can be evaluated.
LIBRARIES = ("torch", "numpy")
#: The dtypes in which they are evaluated.
DTYPES = ("float32", "float64")
#: The dtypes in which each library's sum is evaluated (PyTorch's half formats too).
SUM_DTYPES = {"torch": ("float16", "bfloat16", "float32", "float64"), "numpy": ("float32", "float64")}

Value = "Fraction | float"  # a finite exact value, or +-inf, or NaN (a float)


class LibraryUnavailable(SpecProofError):
    """The library whose log, exp or sum a rule names cannot be imported here."""


def _check(library: str, dtype: str) -> None:
    if library not in LIBRARIES:
        raise SpecProofError(f"library {library!r} is not one of {', '.join(LIBRARIES)}")
    if dtype not in DTYPES:
        raise SpecProofError(f"log and exp are evaluated in {', '.join(DTYPES)}, not {dtype!r}")


@functools.cache
def _module(library: str):
    try:
        return importlib.import_module(library)
    except ImportError as exc:
        raise LibraryUnavailable(
            f"a rule names {library}'s own log, exp or sum, but {library} cannot be "
            f"imported here ({exc}); install it or use another library"
        ) from None


def loaded(library: str) -> bool:
    """True iff ``library`` is already imported (a sampler that never imported it cannot use its log)."""
    return library in sys.modules


def library_provenance(library: str) -> str:
    """The library and version whose results are used, e.g. ``"torch 2.13.0+cpu (CPU)"``."""
    mod = _module(library)
    return f"{library} {mod.__version__}" + (" (CPU)" if library == "torch" else "")


def rounds_python_coin(library: str, dtype: str) -> bool:
    """True iff comparing a Python-float coin (``Generator.random()``) with a value of ``dtype`` from
    ``library`` rounds the coin to ``dtype`` first: NumPy >= 2 with float32 (NEP 50, Python scalars
    are weakly typed). PyTorch coins are tensors of their own dtype, promoted exactly.

    Examples
    --------
    >>> rounds_python_coin("torch", "float32"), rounds_python_coin("numpy", "float64")
    (False, False)
    """
    if library != "numpy" or dtype != "float32":
        return False
    import numpy as np

    return int(np.__version__.split(".")[0]) >= 2


def _exact(x: float) -> Fraction | float:
    """A Python float at its exact value: a Fraction, or the float itself for +-inf and NaN."""
    return Fraction(x) if math.isfinite(x) else x


def _as_float(x) -> float:
    if isinstance(x, float):
        return x
    return float(Fraction(x))  # exact: x is a float of the dtype (the caller rounded it)


def _apply(library: str, dtype: str, name: str, values: Sequence[float]) -> list[float]:
    mod = _module(library)
    if library == "torch":
        t = mod.tensor(list(values), dtype=getattr(mod, dtype))
        return [float(v) for v in getattr(mod, name)(t).double().tolist()]
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore", over="ignore", under="ignore"):
        out = getattr(np, name)(np.array(list(values), dtype=dtype))
    return [float(v) for v in out.astype(np.float64)]


@functools.lru_cache(maxsize=4096)
def _log_row(library: str, dtype: str, row: tuple[float, ...]) -> tuple:
    return tuple(_exact(v) for v in _apply(library, dtype, "log", row))


def log_row(library: str, dtype: str, row: Sequence) -> tuple:
    """The library's ``log`` of a row, as one vector of ``dtype``.

    Parameters
    ----------
    library : {"torch", "numpy"}
    dtype : {"float32", "float64"}
    row : sequence of Fraction
        Values that are floats of ``dtype`` (the caller rounds them first), >= 0.

    Returns
    -------
    tuple
        Exact values (Fractions), ``-inf`` (a float) at 0.

    Raises
    ------
    LibraryUnavailable
        The library cannot be imported.

    Examples
    --------
    >>> log_row("numpy", "float64", (Fraction(1), Fraction(0)))
    (Fraction(0, 1), -inf)
    """
    _check(library, dtype)
    return _log_row(library, dtype, tuple(_as_float(x) for x in row))


@functools.lru_cache(maxsize=65536)
def _exp_value(library: str, dtype: str, x: float):
    return _exact(_apply(library, dtype, "exp", [x])[0])


def exp_value(library: str, dtype: str, x) -> Fraction | float:
    """The library's ``exp`` of one value of ``dtype``: a Fraction, or ``inf`` on overflow, or NaN.

    Examples
    --------
    >>> exp_value("numpy", "float64", float("-inf")), exp_value("numpy", "float64", Fraction(0))
    (Fraction(0, 1), Fraction(1, 1))
    """
    _check(library, dtype)
    return _exp_value(library, dtype, _as_float(x))


@functools.lru_cache(maxsize=4096)
def _softmax_row(library: str, dtype: str, row: tuple[float, ...]) -> tuple:
    mod = _module(library)
    if library == "torch":
        out = mod.softmax(mod.tensor(list(row), dtype=getattr(mod, dtype)), dim=-1).double().tolist()
    else:
        import numpy as np

        z = np.array(list(row), dtype=dtype)
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            e = np.exp(z - z.max())
            out = (e / e.sum()).astype(np.float64).tolist()
    return tuple(_exact(float(v)) for v in out)


def softmax_row(library: str, dtype: str, row: Sequence) -> tuple:
    """The library's softmax of a row of logits, as one vector of ``dtype``.

    Parameters
    ----------
    library : {"torch", "numpy"}
        PyTorch: ``torch.softmax(z, dim=-1)`` on a CPU tensor of ``dtype``. NumPy (no softmax of its
        own): ``e = np.exp(z - z.max()); e / e.sum()`` on an array of ``dtype``.
    dtype : {"float32", "float64"}
    row : sequence of Fraction or ``-inf``
        Logits that are floats of ``dtype`` (the caller rounds them first); ``-inf`` masks an entry.

    Returns
    -------
    tuple
        Exact values (Fractions), NaN (a float) where the library returns NaN (a row of ``-inf``
        only: ``-inf - -inf``).

    Raises
    ------
    LibraryUnavailable
        The library cannot be imported.

    Examples
    --------
    >>> softmax_row("numpy", "float64", (Fraction(0), Fraction(0), float("-inf")))
    (Fraction(1, 2), Fraction(1, 2), Fraction(0, 1))
    """
    _check(library, dtype)
    return _softmax_row(library, dtype, tuple(_as_float(x) for x in row))


@functools.lru_cache(maxsize=4096)
def _cumsum_row(library: str, dtype: str, row: tuple[float, ...]) -> tuple:
    mod = _module(library)
    if library == "torch":
        out = mod.cumsum(mod.tensor(list(row), dtype=getattr(mod, dtype)), dim=-1).double().tolist()
    else:
        import numpy as np

        out = np.cumsum(np.array(list(row), dtype=dtype)).astype(np.float64).tolist()
    return tuple(_exact(float(v)) for v in out)


def cumsum_row(library: str, dtype: str, row: Sequence) -> tuple:
    """The library's cumulative sum of a row, as one vector of ``dtype`` (its accumulator and order
    are the library's own: PyTorch's CPU kernel, for one, need not round each partial sum in ``dtype``).

    Examples
    --------
    >>> cumsum_row("numpy", "float64", (Fraction(1, 2), Fraction(1, 4)))
    (Fraction(1, 2), Fraction(3, 4))
    """
    _check(library, dtype)
    return _cumsum_row(library, dtype, tuple(_as_float(x) for x in row))


@functools.lru_cache(maxsize=4096)
def _sum_value(library: str, dtype: str, row: tuple[float, ...]) -> Fraction | float:
    mod = _module(library)
    if library == "torch":
        return _exact(float(mod.tensor(list(row), dtype=getattr(mod, dtype)).sum()))
    import numpy as np

    with np.errstate(over="ignore"):
        return _exact(float(np.array(list(row), dtype=dtype).sum()))


def sum_value(library: str, dtype: str, row: Sequence) -> Fraction | float:
    """The library's own sum of a row of ``dtype``: the float code gets from ``r.sum()``.

    Parameters
    ----------
    library : {"torch", "numpy"}
        PyTorch: ``torch.tensor(row, dtype=dtype).sum()`` on the CPU (a row of a 2-D tensor summed
        with ``dim=-1`` gave the same floats on 1,800 rows of 3 to 64 entries here, measured);
        NumPy: ``np.array(row, dtype=dtype).sum()`` (pairwise from 8 entries on, its documented order).
    dtype : str
        One of :data:`SUM_DTYPES` for the library: PyTorch also sums float16 and bfloat16 (in its
        own accumulator, rounded to the dtype), NumPy float32 and float64.
    row : sequence of Fraction
        Floats of ``dtype`` at their exact values (the caller rounded them).

    Returns
    -------
    Fraction or float
        The sum's exact value; ``+inf`` (a float) if it overflows.

    Raises
    ------
    LibraryUnavailable
        The library cannot be imported.
    SpecProofError
        An unknown library, a dtype it is not evaluated in, or an entry that is not a finite
        number (NaN, infinite, past the float64 range, not a number).

    Notes
    -----
    Not modelled but evaluated, as the library's log and exp are: the order and the accumulator of
    a library's reduction depend on its build and the CPU's vector width, so the value is exact
    about the code on this machine (:func:`library_provenance`). Rows of at most 4 entries gave the
    left-to-right sum in both libraries here (NumPy: of at most 7), measured on random rows.

    Examples
    --------
    >>> sum_value("numpy", "float64", (Fraction(1, 2), Fraction(1, 4)))
    Fraction(3, 4)
    """
    if library not in LIBRARIES:
        raise SpecProofError(f"library {library!r} is not one of {', '.join(LIBRARIES)}")
    if dtype not in SUM_DTYPES[library]:
        raise SpecProofError(f"{library}'s sum is evaluated in {', '.join(SUM_DTYPES[library])}, not {dtype!r}")
    values = []
    for i, x in enumerate(row):
        try:
            v = _as_float(x)
        except (TypeError, ValueError, OverflowError):
            v = math.nan
        if not math.isfinite(v):
            raise SpecProofError(f"row[{i}] is {x!r}: a sum is evaluated on finite floats of {dtype} only")
        values.append(v)
    return _sum_value(library, dtype, tuple(values))


def row_sum(library: str | None, dtype: str, row: Sequence, modelled) -> Fraction | float:
    """The float sum code divides a row by (``row / row.sum()``): ``library``'s own
    (:func:`sum_value`), or ``modelled`` (the left-to-right sum) when ``library`` is None or
    cannot be imported here (so a rule that names PyTorch's sum is audited without PyTorch
    installed; the rule's caveats then say, at V >= 5, that its sum was modelled, see
    :func:`available`). On rows of at most 4 entries (NumPy: 7) the libraries' own order is the
    left-to-right one (measured here on random rows).
    """
    if library is None or not available(library):
        return modelled
    return sum_value(library, dtype, row)


def available(library: str) -> bool:
    """True iff ``library`` can be imported here (it is imported to find out)."""
    try:
        _module(library)
    except LibraryUnavailable:
        return False
    return True


def _passes(value, threshold, comparison: str) -> bool:
    """``value cmp threshold`` as IEEE comparisons do (NaN compares false; both are exact here)."""
    if isinstance(threshold, float) and math.isnan(threshold):
        return False
    return value < threshold if comparison == "<" else value <= threshold


@functools.cache
def _grid32(library: str):
    """The library's float32 log of k / 2^24 for k = 0 .. 2^24, sorted (a NumPy float32 array), and
    the values at k = 0 and k = 2^24 (left out of one grid each)."""
    import numpy as np

    n = 1 << 24
    grid = (np.arange(n + 1, dtype=np.float64) / n).astype(np.float32)  # exact: k / 2^24 is a float32
    if library == "torch":
        torch = _module("torch")
        logs = torch.log(torch.from_numpy(grid)).numpy()
    else:
        with np.errstate(divide="ignore"):
            logs = np.log(grid)
    ends = (float(logs[0]), float(logs[-1]))
    if not bool(np.all(logs[1:] >= logs[:-1])):
        logs = np.sort(logs)  # counted as a multiset: a non-monotone log still gives the exact count
    return logs, ends


def _count_sorted(logs, threshold, comparison: str) -> int:
    """How many entries of the sorted float32 array pass ``entry cmp threshold``, by bisection on exact
    comparisons (each entry read as a Python float, exactly)."""
    lo, hi = 0, len(logs)
    while lo < hi:
        mid = (lo + hi) // 2
        if _passes(float(logs[mid]), threshold, comparison):
            lo = mid + 1
        else:
            hi = mid
    return lo


@functools.lru_cache(maxsize=65536)
def _count(library: str, bits: int, open_closed: bool, threshold, comparison: str) -> int:
    n = 1 << bits
    if isinstance(threshold, float) and math.isnan(threshold):
        return 0
    if bits == 24:
        logs, (at0, at1) = _grid32(library)
        count = _count_sorted(logs, threshold, comparison)
        return count - int(_passes(at0 if open_closed else at1, threshold, comparison))
    lo, hi = (1, n) if open_closed else (0, n - 1)
    mod = _module(library)

    def log64(k: int) -> float:
        if library == "torch":
            return float(mod.log(mod.tensor(k / n, dtype=mod.float64)))
        import numpy as np

        with np.errstate(divide="ignore"):
            return float(np.log(np.float64(k / n)))

    first, last = lo, hi + 1  # the first failing k lies in [lo, hi + 1] (the log assumed monotone)
    while first < last:
        mid = (first + last) // 2
        if _passes(log64(mid), threshold, comparison):
            first = mid + 1
        else:
            last = mid
    return first - lo


def log_coin_count(library: str, bits: int, open_closed: bool, threshold, comparison: str) -> int:
    """How many points u of a coin's grid pass ``log(u) cmp threshold``, with the library's own log.

    Parameters
    ----------
    library : {"torch", "numpy"}
    bits : {24, 53}
        The grid: multiples of 2^-bits; the log is evaluated in float32 for 24 bits and float64 for
        53 (the coin's own dtype, as the code computes ``log(u)``).
    open_closed : bool
        The grid on (0, 1] (points 1 .. 2^bits) instead of [0, 1) (points 0 .. 2^bits - 1).
    threshold : Fraction, +-inf, or NaN
        The right side (exact; NaN passes nothing, as IEEE comparisons do).
    comparison : {"<", "<="}

    Returns
    -------
    int
        The exact count for 24 bits (every grid point evaluated once per process and counted); for 53
        bits the count of a bisection that assumes the library's float64 log is monotone.

    Examples
    --------
    >>> log_coin_count("numpy", 53, False, float("-inf"), "<="), log_coin_count("numpy", 53, True, Fraction(0), "<")
    (1, 9007199254740991)
    """
    if bits not in (24, 53):
        raise SpecProofError(f"a log-space coin is a float32 or float64 grid (24 or 53 bits), not {bits} bits")
    if library not in LIBRARIES:
        raise SpecProofError(f"library {library!r} is not one of {', '.join(LIBRARIES)}")
    return _count(library, bits, bool(open_closed), threshold, comparison)


# ----------------------------------------------------------------------- summation orders, as data


def _joined(a, b):
    """The symbolic sum a + b of two partial sums (None: an accumulator still 0, which adds exactly):
    a list is summed left to right, so adding to a list extends it (no nesting grows with n)."""
    if a is None:
        return b
    if b is None:
        return a
    return a + [b] if isinstance(a, list) else [a, b]


def numpy_pairwise_order(n: int, start: int = 0):
    """NumPy's ``pairwise_sum`` of ``n`` entries from ``start`` as a summation tree (token ids, lists
    summed left to right): fewer than 8 entries left to right; up to 128 in 8 interleaved
    accumulators combined as ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the rest left to
    right; more split in two at a multiple of 8 below n / 2 (NumPy's ``loops_utils.h``). A
    reduction adds the result to its initial 0, exactly.

    Examples
    --------
    >>> numpy_pairwise_order(3)
    [0, 1, 2]
    >>> numpy_pairwise_order(9)  # ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then + a[8]
    [[[0, 1], [2, 3]], [[4, 5], [6, 7]], 8]
    """
    if n < 8:
        out = None
        for i in range(start, start + n):
            out = _joined(out, i)
        return out
    if n <= 128:
        r: list = [start + j for j in range(8)]
        i = 8
        while i < n - n % 8:
            r = [_joined(r[j], start + i + j) for j in range(8)]
            i += 8
        out = [[[r[0], r[1]], [r[2], r[3]]], [[r[4], r[5]], [r[6], r[7]]]]
        while i < n:
            out = _joined(out, start + i)
            i += 1
        return out
    half = n // 2
    half -= half % 8
    return [numpy_pairwise_order(half, start), numpy_pairwise_order(n - half, start + half)]


def _ceil_log2(x: int) -> int:
    return 0 if x <= 1 else (x - 1).bit_length()


def _multi_row_sum(load, nrows: int, size: int) -> list:
    """PyTorch's ``multi_row_sum`` (4 levels of accumulators, ``nrows`` columns), symbolically."""
    levels = 4
    power = max(4, _ceil_log2(size) // levels)
    step, mask = 1 << power, (1 << power) - 1
    acc: list = [[None] * nrows for _ in range(levels)]
    i = 0
    while i + step <= size:
        for _ in range(step):
            for k in range(nrows):
                acc[0][k] = _joined(acc[0][k], load(i, k))
            i += 1
        for j in range(1, levels):
            for k in range(nrows):
                acc[j][k], acc[j - 1][k] = _joined(acc[j][k], acc[j - 1][k]), None
            if i & (mask << (j * power)):
                break
    while i < size:
        for k in range(nrows):
            acc[0][k] = _joined(acc[0][k], load(i, k))
        i += 1
    for j in range(1, levels):
        for k in range(nrows):
            acc[0][k] = _joined(acc[0][k], acc[j][k])
    return acc[0]


def _torch_row_sum(load, size: int):
    """PyTorch's ``row_sum``: four interleaved partial sums (``multi_row_sum``), the rest into the first."""
    ilp = 4
    partial = _multi_row_sum(lambda i, k: load(i * ilp + k), ilp, size // ilp)
    for i in range(size // ilp * ilp, size):
        partial[0] = _joined(partial[0], load(i))
    for k in range(1, ilp):
        partial[0] = _joined(partial[0], partial[k])
    return partial[0]


def torch_cascade_order(n: int, lanes: int):
    """PyTorch's CPU ``sum`` of a contiguous row of ``n`` entries (``cascade_sum`` in
    ``aten/src/ATen/native/cpu/SumKernel.cpp``) as a summation tree: with ``lanes`` accumulators per
    vector (the CPU's vector width over the accumulator's size: 8 float32 lanes with AVX2, 16 with
    AVX-512), each lane sums its entries by ``row_sum``; the tail after the last whole vector is
    added left to right, then the lanes in order. Rows shorter than a vector are one ``row_sum``.

    Examples
    --------
    >>> torch_cascade_order(5, 8)  # four partial sums, a[4] into the first, then the others added to it
    [0, 4, 1, 2, 3]
    >>> torch_cascade_order(17, 8)  # the tail a[16] first, then the 8 lanes
    [16, [0, 8], [1, 9], [2, 10], [3, 11], [4, 12], [5, 13], [6, 14], [7, 15]]
    """
    if n < lanes:
        return _torch_row_sum(lambda i: i, n)
    whole = n // lanes
    out = None
    for k in range(whole * lanes, n):
        out = _joined(out, k)
    for lane in range(lanes):
        out = _joined(out, _torch_row_sum(lambda i, lane=lane: i * lanes + lane, whole))
    return out


def evaluate_order(tree, row: Sequence, accumulator: str, dtype: str):
    """The float sum of ``row`` in the summation tree ``tree`` (token ids; a list is summed left to
    right, each addition rounded to ``accumulator``), rounded to ``dtype`` once: what the checker
    derives from a ``["tree", accumulator, tree]`` order. ``inf`` on overflow."""
    from specproof.laws.floats import FORMATS

    acc, fmt = FORMATS[accumulator], FORMATS[dtype]
    stack: list = [[tree if isinstance(tree, list) else [tree], 0, None]]
    result = None
    while stack:
        frame = stack[-1]
        if frame[1] == len(frame[0]):
            stack.pop()
            value = frame[2]
            if stack:
                top = stack[-1]
                top[2] = value if top[2] is None else acc.add(top[2], value)
            else:
                result = value
            continue
        member = frame[0][frame[1]]
        frame[1] += 1
        if isinstance(member, list):
            stack.append([member, 0, None])
        else:
            value = acc.round(Fraction(row[member]))
            frame[2] = value if frame[2] is None else acc.add(frame[2], value)
    return fmt.round(Fraction(0) if result is None else result)  # an empty tree sums to 0


def sum_order(library: str | None, dtype: str, row: Sequence, total) -> tuple[str, list] | None:
    """A summation order that gives ``total``, the sum ``library`` returned for ``row`` here: its
    description and the order as a checker's ``float-divided`` recipe names it (``["tree",
    accumulator, tree]``), or None when no modelled order gives it (then the sum can only be stated).

    The candidates are the library's documented or read order: NumPy's pairwise sum; PyTorch's CPU
    cascade sum with this CPU's vector width first, then the other widths. Which order a library
    uses is a modelling assumption; the candidate is kept only if its exact value on this row is the
    library's (so the checker's derived sum is the one the code divided by).
    """
    from specproof.laws.floats import FORMATS

    if library is None or isinstance(total, float):  # no library, or the sum overflowed
        return None
    accumulator = "float32" if FORMATS[dtype].precision < 24 else dtype
    size = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[accumulator]
    n = len(row)
    candidates: list[tuple[str, Any]] = []
    if library == "numpy":
        candidates.append(("NumPy's pairwise sum (blocks of 128, 8 accumulators)", numpy_pairwise_order(n)))
    elif library == "torch":
        widths = [64, 32, 16]
        try:
            capability = _module("torch").backends.cpu.get_cpu_capability()
            if "AVX512" not in capability:
                widths = [32, 64, 16]
        except Exception:  # an older torch: every width is tried
            pass
        for width in widths:
            lanes = width // size
            candidates.append(
                (f"PyTorch's CPU cascade sum, {lanes} lanes of {accumulator}", torch_cascade_order(n, lanes))
            )
    for description, tree in candidates:
        if tree is not None and evaluate_order(tree, row, accumulator, dtype) == total:
            return description, ["tree", accumulator, tree if isinstance(tree, list) else [tree]]
    return None


# the old names, with a DeprecationWarning that says where they went (issue 34: one name, one meaning)
__getattr__ = renamed(
    __name__,
    {"provenance": ("library_provenance", "the real models' provenance() is another record")},
    globals(),
)
