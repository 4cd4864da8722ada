"""The float path's optional compiled kernel (numba): :func:`specproof.laws.numeric.emitted_distribution`
with ``backend="numba"``.

Never imported by ``import specproof`` nor by the NumPy path (the default and the reference);
install it with ``pip install 'specproof[fast]'``. It computes the same law as the NumPy path
in three passes over each row instead of eleven: the row sums of p and q, then the sums of
``m = min(p, q sum(p)/sum(q))`` and of the residual ``r = p - m`` (and, as on the NumPy path,
the check that no m is negative), then ``dist = m / sum(p) + r (sum(p) - alpha) / (Z sum(p))``.
The first pass reads a row from memory; the second (backwards, starting on what the first
left in the core's cache) and the third read it again from cache (from L3 at V = 128,256,
where a row of p and q is 2 MB); no temporary row is written. Every operation on an entry is the NumPy path's, in the
same order; only the order of the additions inside the four row sums differs.

Summation and its error bound
-----------------------------
Each row sum is a balanced binary tree of additions over the row zero-padded to a power of two.
A row is cut into chunks of :data:`CHUNK` = 8192 entries, the rest into chunks of 1024, 128
and 16 and a last one zero-padded to 16. A chunk is reduced eight to one, ``dst[j] = ((x[j] +
x[j+w]) + (x[j+2w] + x[j+3w])) + ((x[j+4w] + x[j+5w]) + (x[j+6w] + x[j+7w]))`` for j < w (the
first level by blocks of 512 entries, so that its loads stay within a page or two), until 16
lanes are left, which are added as a balanced tree of four levels; the sums of the chunks of
one size, with the sum of the shorter ones after them, are added pairwise (neighbours, level
by level). Each step is a loop of independent additions over j, which LLVM vectorizes as
written, without fast-math flags (no reassociation, no contraction: the arithmetic is exactly
the code's). NumPy's own order (eight accumulators over blocks of 128, then halves) is not
vectorized by numba: its SLP vectorizer is off (turned off after miscompilations, numba pull
request 8852) and the loop vectorizer vectorizes a running sum only if allowed to reassociate
it; written out in numba it runs as scalar code, at the NumPy path's speed.

Adding a zero is exact, so on a row of V entries each entry passes through at most
``H = ceil(log2 V)`` roundings (in a padded complete tree, the addition merging index bit b
is inexact for an entry only if 2**b < V), and a computed sum of non-negative entries obeys::

    |fl(sum x) - sum x| <= gamma_H * sum x,    gamma_H = H u / (1 - H u),  u = 2**-53

(Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., section 4.2: the bound
of a summation tree of height H). NumPy's pairwise sum (blocks of 128 added by eight
accumulators, halves added recursively) is a tree of height at least ``ceil(log2 V)``
(28 at V = 128,256, where this kernel's is 17), so every sum here is bounded at least as
tightly as the NumPy path's; the other operations being the same, the stated bound of the
float path (:data:`specproof.laws.numeric.ERROR_BOUND`) holds as it does there.

Two decisions are made per row here where the NumPy path makes them per block of rows (same
values either way up to rounding): the multiplications by a factor of exactly 1.0 are not
skipped (they change nothing), and a row whose ``(sum(p) - alpha) / Z`` overflows (Z subnormal)
normalizes its residual first, as the NumPy path does for the whole block holding such a row.

Input checks: a row is accepted here only when its sums are within
``atol - 8 V u`` of 1 (a margin larger than any difference between two summation orders) and
no m is negative; any other row (NaN, inf, negative, badly normalized, or merely near the
``atol`` edge) sends the whole call to the NumPy path, which refuses it with its own message
or, at the edge, computes the law itself. So the refusals are the NumPy path's exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, TypedDict, TypeVar, cast

import numpy as np
import numpy.typing as npt
from numba import njit

__all__ = ["CHUNK", "coefficients", "kernel_row_sum", "law_rows", "tree_height", "write_row"]

#: Largest chunk (entries) of a row reduced before the chunk sums are added pairwise.
CHUNK = 8192
#: Lanes per block of the first level: a block of 8 * _LANES entries (4 KB) is read as eight
#: runs of _LANES, so the loads of a pass stay within a page or two of each other.
_LANES = 64

#: A float64 array (numba ignores the annotations; they are for mypy).
_F64 = npt.NDArray[np.float64]


class _JitOptions(TypedDict):
    """The options of every kernel's ``njit``, typed so that ``njit(**_JIT)`` is checked against numba's own stubs."""

    cache: bool
    nogil: bool
    error_model: Literal["python", "numpy"]
    boundscheck: bool


_JIT: _JitOptions = {"cache": True, "nogil": True, "error_model": "numpy", "boundscheck": False}

_FunctionT = TypeVar("_FunctionT", bound=Callable[..., object])


def _kernel(fn: _FunctionT) -> _FunctionT:
    """``njit(**_JIT)(fn)``, typed as ``fn`` itself (numba's dispatcher is called as the function is): the
    same type whether mypy runs where numba, which ships its own stubs, is installed or where it is not
    (``njit`` is then Any, an untyped decorator)."""
    return cast(_FunctionT, njit(**_JIT)(fn))


def tree_height(v: int) -> int:
    """``ceil(log2 v)``: the most roundings an entry of a row of ``v`` entries passes through."""
    return (int(v) - 1).bit_length()


@_kernel
def _level(src: _F64, w: int, dst: _F64) -> None:
    """dst[j] = balanced tree of src[j + k w], k = 0..7, for j < w."""
    for j in range(w):
        dst[j] = ((src[j] + src[j + w]) + (src[j + 2 * w] + src[j + 3 * w])) + (
            (src[j + 4 * w] + src[j + 5 * w]) + (src[j + 6 * w] + src[j + 7 * w])
        )


@_kernel
def _finish(t: _F64, w: int, u: _F64) -> float:
    """The sum of the w lanes t[:w] (w = 2 or 16 * 8**k), by levels of eight then a tree of 16."""
    while w > 16:
        w //= 8
        _level(t, w, u)
        t, u = u, t
    if w == 2:
        return t[0] + t[1]  # type: ignore[no-any-return]  # an element is Any in numpy's stubs
    return (((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]))) + (  # type: ignore[no-any-return]  # an element is Any in numpy's stubs
        ((t[8] + t[9]) + (t[10] + t[11])) + ((t[12] + t[13]) + (t[14] + t[15]))
    )


@_kernel
def _pairwise(a: _F64, n: int) -> float:
    """Sum of a[:n] as a balanced tree, in place: neighbours added level by level (a[2i] + a[2i+1];
    an odd last entry goes up alone), the zero-padded complete tree. Height ceil(log2 n)."""
    while n > 1:
        h = n // 2
        for i in range(h):
            a[i] = a[2 * i] + a[2 * i + 1]
        if n % 2:
            a[h] = a[n - 1]
            h += 1
        n = h
    return a[0]  # type: ignore[no-any-return]  # an element is Any in numpy's stubs


@_kernel
def _min(a: float, b: float) -> float:
    return a if a < b else b


@_kernel
def _first_pq(p: _F64, q: _F64, w: int, tp: _F64, tq: _F64) -> None:
    """First level of a chunk of 8w entries of p and q: w lanes of their sums, by blocks of
    8 * min(w, _LANES) entries (lane b * l + j adds entries 8 l b + j + l k, k = 0..7)."""
    lanes = min(w, _LANES)
    for b in range(w // lanes):
        o = 8 * lanes * b
        for j in range(lanes):
            i = o + j
            a0 = p[i]
            a1 = p[i + lanes]
            a2 = p[i + 2 * lanes]
            a3 = p[i + 3 * lanes]  # noqa: E702
            a4 = p[i + 4 * lanes]
            a5 = p[i + 5 * lanes]
            a6 = p[i + 6 * lanes]
            a7 = p[i + 7 * lanes]  # noqa: E702
            b0 = q[i]
            b1 = q[i + lanes]
            b2 = q[i + 2 * lanes]
            b3 = q[i + 3 * lanes]  # noqa: E702
            b4 = q[i + 4 * lanes]
            b5 = q[i + 5 * lanes]
            b6 = q[i + 6 * lanes]
            b7 = q[i + 7 * lanes]  # noqa: E702
            t = lanes * b + j
            tp[t] = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))
            tq[t] = ((b0 + b1) + (b2 + b3)) + ((b4 + b5) + (b6 + b7))


@_kernel
def _first_mr(p: _F64, q: _F64, k: float, w: int, tm: _F64, tr: _F64, mn: _F64) -> None:
    """First level of a chunk of 8w entries, blocked as :func:`_first_pq`: w lanes of the sums
    of m = min(p, q k) and r = p - m; mn[lane] keeps the least m (negative iff p or q has a
    negative entry there: k > 0)."""
    lanes = min(w, _LANES)
    for b in range(w // lanes):
        o = 8 * lanes * b
        for j in range(lanes):
            i = o + j
            x0 = p[i]
            x1 = p[i + lanes]
            x2 = p[i + 2 * lanes]
            x3 = p[i + 3 * lanes]  # noqa: E702
            x4 = p[i + 4 * lanes]
            x5 = p[i + 5 * lanes]
            x6 = p[i + 6 * lanes]
            x7 = p[i + 7 * lanes]  # noqa: E702
            m0 = _min(x0, q[i] * k)
            m1 = _min(x1, q[i + lanes] * k)  # noqa: E702
            m2 = _min(x2, q[i + 2 * lanes] * k)
            m3 = _min(x3, q[i + 3 * lanes] * k)  # noqa: E702
            m4 = _min(x4, q[i + 4 * lanes] * k)
            m5 = _min(x5, q[i + 5 * lanes] * k)  # noqa: E702
            m6 = _min(x6, q[i + 6 * lanes] * k)
            m7 = _min(x7, q[i + 7 * lanes] * k)  # noqa: E702
            t = lanes * b + j
            mn[t] = _min(mn[t], _min(_min(_min(m0, m1), _min(m2, m3)), _min(_min(m4, m5), _min(m6, m7))))
            tm[t] = ((m0 + m1) + (m2 + m3)) + ((m4 + m5) + (m6 + m7))
            tr[t] = (((x0 - m0) + (x1 - m1)) + ((x2 - m2) + (x3 - m3))) + (
                ((x4 - m4) + (x5 - m5)) + ((x6 - m6) + (x7 - m7))
            )


@_kernel
def write_row(p: _F64, q: _F64, k: float, inv: float, c: float, zd: float, out: _F64) -> None:
    """out = m inv + (r / zd) c; zd is 1.0 except where the residual is normalized first."""
    if zd == 1.0:
        for i in range(p.shape[0]):
            x = p[i]
            m = _min(x, q[i] * k)
            out[i] = m * inv + (x - m) * c
    else:
        for i in range(p.shape[0]):
            x = p[i]
            m = _min(x, q[i] * k)
            out[i] = m * inv + ((x - m) / zd) * c


@_kernel
def coefficients(sp: float, a: float, zb: float) -> tuple[float, float, float]:
    """(1 / sum(p), c, zd) with dist = m / sum(p) + (r / zd) c, from sum(p), alpha and Z (unnormalized).

    c = (sum(p) - alpha) / Z / sum(p) and zd = 1; where (sum(p) - alpha) / Z overflows (Z
    subnormal, the rejection mass carrying rounding) the residual is normalized first:
    zd = Z, c = (sum(p) - alpha) / sum(p). Where Z = 0 (p == q) c = 0: the accept mass alone.
    """
    d = sp - a
    reject = d if d > 0.0 else 0.0  # sum(p) - alpha, as np.maximum(sp - a, 0)
    inv = 1.0 / sp
    scale = reject / zb if zb > 0.0 else 0.0
    if np.isfinite(scale):
        return inv, scale * inv, 1.0
    return inv, reject * inv, zb


@_kernel
def _chunk(
    pr: _F64, qr: _F64, k: float, first: bool, o: int, size: int, tp: _F64, tq: _F64, u1: _F64, u2: _F64, mn: _F64
) -> tuple[float, float]:
    """The two sums of the chunk pr[o:o+size], qr[o:o+size] (size = 16 * 8**L): of p and q
    (``first``), or of m = min(p, q k) and r = p - m (mn keeps the least m)."""
    w = size // 8
    if first:
        _first_pq(pr[o : o + size], qr[o : o + size], w, tp, tq)
    else:
        _first_mr(pr[o : o + size], qr[o : o + size], k, w, tp, tq, mn)
    return _finish(tp, w, u1), _finish(tq, w, u2)


@_kernel
def _sums(
    pr: _F64,
    qr: _F64,
    k: float,
    first: bool,
    tp: _F64,
    tq: _F64,
    u1: _F64,
    u2: _F64,
    mn: _F64,
    pad_p: _F64,
    pad_q: _F64,
    cs1: _F64,
    cs2: _F64,
    ts1: _F64,
    ts2: _F64,
) -> tuple[float, float]:
    """The two sums of a row (see :func:`_chunk`): chunks of CHUNK entries, then the rest in
    chunks of 1024, 128 and 16 and a last one zero-padded to 16; the sums of the chunks of
    each size (with the sum of what follows them) are added pairwise, so that the whole is a
    zero-padded complete binary tree over the row. ts1, ts2: [3, 8] scratch."""
    v = pr.shape[0]
    nfull = v // CHUNK
    for i in range(nfull):
        # The first pass goes forward, the second backward: it starts on the end of the row, the
        # part the first pass left in cache (the order of the chunks does not change their sums).
        c = i if first else nfull - 1 - i
        cs1[c], cs2[c] = _chunk(pr, qr, k, first, c * CHUNK, CHUNK, tp, tq, u1, u2, mn)
    o = nfull * CHUNK
    counts = np.zeros(3, dtype=np.int64)
    size = CHUNK
    for lv in range(3):  # the rest: whole chunks of 1024, then of 128, then of 16
        size //= 8
        while v - o >= size:
            n = counts[lv]
            ts1[lv, n], ts2[lv, n] = _chunk(pr, qr, k, first, o, size, tp, tq, u1, u2, mn)
            counts[lv] = n + 1
            o += size
    if v > o:  # fewer than 16 left: zero-padded (adding a zero is exact)
        for i in range(v - o):
            pad_p[i] = pr[o + i]
            pad_q[i] = qr[o + i]
        n = counts[2]
        ts1[2, n], ts2[2, n] = _chunk(pad_p, pad_q, k, first, 0, 16, tp, tq, u1, u2, mn)
        counts[2] = n + 1
    for lv in range(2, 0, -1):  # a partial chunk's sum goes up as the last of the size above
        if counts[lv]:
            n = counts[lv - 1]
            ts1[lv - 1, n] = _pairwise(ts1[lv], counts[lv])
            ts2[lv - 1, n] = _pairwise(ts2[lv], counts[lv])
            counts[lv - 1] = n + 1
    if counts[0]:
        cs1[nfull] = _pairwise(ts1[0], counts[0])
        cs2[nfull] = _pairwise(ts2[0], counts[0])
        nfull += 1
    return _pairwise(cs1, nfull), _pairwise(cs2, nfull)


@_kernel
def law_rows(p: _F64, q: _F64, r0: int, r1: int, tol: float, dist: _F64, alpha: _F64, z: _F64) -> int:
    """Rows r0..r1-1 of the law of C-contiguous float64 rows p, q [n, V] into dist [n, V],
    alpha [n] and z [n] (residual mass). Returns -1, or the first row whose sums are not
    within ``tol`` of 1 or which has a negative entry (nothing after it is computed)."""
    v = p.shape[1]
    w = CHUNK // 8
    tp = np.empty(w)
    tq = np.empty(w)
    u1 = np.empty(w)
    u2 = np.empty(w)
    mn = np.empty(w)  # noqa: E702
    pad_p = np.zeros(16)
    pad_q = np.zeros(16)  # noqa: E702
    cs1 = np.empty(v // CHUNK + 1)
    cs2 = np.empty(v // CHUNK + 1)  # noqa: E702
    ts1 = np.empty((3, 8))
    ts2 = np.empty((3, 8))  # noqa: E702
    for r in range(r0, r1):
        pr = p[r]
        qr = q[r]  # noqa: E702
        sp, sq = _sums(pr, qr, 1.0, True, tp, tq, u1, u2, mn, pad_p, pad_q, cs1, cs2, ts1, ts2)
        if not (abs(sp - 1.0) <= tol and abs(sq - 1.0) <= tol):  # NaN and inf sums too
            return r
        k = sp / sq  # > 0: both sums are in (0, 2)
        mn[:] = np.inf
        a, zb = _sums(pr, qr, k, False, tp, tq, u1, u2, mn, pad_p, pad_q, cs1, cs2, ts1, ts2)
        least = np.inf
        for j in range(w):
            least = _min(least, mn[j])
        if not least >= 0.0:  # min(p, q k) < 0 iff p or q has a negative entry (the NumPy path's test)
            return r
        inv, c, zd = coefficients(sp, a, zb)
        write_row(pr, qr, k, inv, c, zd, dist[r])
        alpha[r] = a / sp
        z[r] = zb / sp
    return -1


@_kernel
def _row_sum(x: _F64) -> float:
    w = CHUNK // 8
    tp = np.empty(w)
    tq = np.empty(w)
    u1 = np.empty(w)
    u2 = np.empty(w)
    mn = np.empty(w)  # noqa: E702
    cs1 = np.empty(x.shape[0] // CHUNK + 1)
    cs2 = np.empty(x.shape[0] // CHUNK + 1)  # noqa: E702
    return _sums(
        x, x, 1.0, True, tp, tq, u1, u2, mn, np.zeros(16), np.zeros(16), cs1, cs2, np.empty((3, 8)), np.empty((3, 8))
    )[0]


def kernel_row_sum(x: np.ndarray) -> float:
    """The kernel's sum of one row (its summation tree; for tests of the bound)."""
    return float(_row_sum(np.ascontiguousarray(x, dtype=np.float64)))
