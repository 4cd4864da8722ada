"""The float path: the verifier's emitted law in NumPy, batched over [..., V].

Same function names and argument order as :mod:`specproof.laws.exact`; this path is measured
against the exact law (:mod:`specproof.certify.crosscheck`), never used as the reference.

Input policy (the float twin of :func:`specproof.laws.rational.from_floats`): rows must be finite,
non-negative and sum to 1 within ``atol`` (default :data:`DEFAULT_ATOL`); such rows are
divided by their sum, so results are comparable with the exact law of
``from_floats(p), from_floats(q)``. Rows further from 1 are refused, never renormalized
silently. Everything is computed in float64 whatever the input dtype.

Error (measured by ``specproof crosscheck``; see :data:`ERROR_BOUND`): the rejection mass is
taken as ``sum(p) - alpha`` of the normalized rows and the normalized residual as
``r / Z``, so the residual tokens carry no normalization error; the worst absolute error
of dist against the exact law is about 1e-16 in practice.

References
----------
Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.
"""

from __future__ import annotations

import importlib
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction
from typing import Any

import numpy as np

from specproof.errors import BackendUnavailable, InvalidDistribution, InvalidOption, ResidualUndefined
from specproof.laws.rational import DEFAULT_FLOAT_ATOL, as_array, check_atol

__all__ = [
    "BACKENDS",
    "DEFAULT_ATOL",
    "ERROR_BOUND",
    "RECOMPUTE_ABOVE",
    "drawn_error_estimate",
    "recomputed_positions",
    "emitted_distribution",
    "acceptance_probability",
    "tv_distance",
    "residual",
    "given_block_law",
    "multidraft_law",
    "sibling_law",
]

#: Largest ``abs(sum(row) - 1)`` accepted before a row is divided by its sum; the same
#: default as :data:`specproof.laws.rational.DEFAULT_FLOAT_ATOL` (float16 rows are within ~5e-4).
DEFAULT_ATOL = DEFAULT_FLOAT_ATOL

#: The stated bound on the float path's worst absolute error (dist and alpha): against the
#: exact law of its inputs made exact by :func:`specproof.laws.rational.from_floats`, and, in
#: :mod:`specproof.certify.crosscheck`, against the exact law of rational pairs given as their float64
#: roundings. Measured worst: about 3e-16.
ERROR_BOUND = 1e-12
#: :func:`given_block_law` computes a residual row exactly where :func:`drawn_error_estimate`
#: exceeds this (a safety factor of 16 below the bound: the estimate is not a proven bound).
RECOMPUTE_ABOVE = ERROR_BOUND / 16

#: The backends of :func:`emitted_distribution`, :func:`acceptance_probability` and
#: :func:`tv_distance`: ``"numpy"`` (the default and the reference) and ``"numba"`` (a compiled
#: kernel, :mod:`specproof.laws.numeric_numba`, from ``pip install 'specproof[fast]'``).
BACKENDS = ("numpy", "numba")

# Rows are processed in blocks of about this many elements, so that the temporaries of a
# block stay in cache and the inputs are read from memory once.
_BLOCK_ELEMENTS = 1 << 15
# Inputs with at least this many elements are split over two threads.
_THREADED_ELEMENTS = 1 << 20


def _as_rows(x: Any, name: str) -> np.ndarray:
    arr = as_array(x, name)
    if arr.dtype.kind not in "fiu" or arr.dtype == np.bool_:
        raise InvalidDistribution(
            f"{name} has dtype {arr.dtype}, not a real number dtype"
            + (
                "; for exact rationals (Fractions, 'n/d' strings) use specproof.exact.emitted_distribution"
                if arr.dtype.kind in "OUS"
                else ""
            )
        )
    if arr.ndim == 0:
        raise InvalidDistribution(f"{name} is a scalar, not a vector of shape [..., V]")
    if arr.shape[-1] == 0:
        raise InvalidDistribution(f"{name} has shape {arr.shape}: V must be >= 1")
    return arr


def _where(bad: np.ndarray, shape: tuple[int, ...]) -> tuple[int, ...]:
    flat = int(np.argmax(bad))
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _sums_ok(sums: np.ndarray, atol: float | Fraction) -> bool:
    return bool(np.isfinite(sums).all() and np.abs(sums - 1.0).max() <= atol)


def _refuse(
    x: np.ndarray, sums: np.ndarray, name: str, row0: int, lead: tuple[int, ...], atol: float | Fraction
) -> None:
    """Raise on the first non-finite or negative entry, or badly normalized row, of a block."""
    nonfinite = ~np.isfinite(x)
    if nonfinite.any():
        i, j = _where(nonfinite, x.shape)
        raise InvalidDistribution(f"{name}{_index(row0 + i, lead, j)} is {float(x[i, j])!r}, not a finite number")
    negative = x < 0
    if negative.any():
        i, j = _where(negative, x.shape)
        raise InvalidDistribution(f"{name}{_index(row0 + i, lead, j)} is {float(x[i, j])!r}, which is negative")
    if not _sums_ok(sums, atol):
        i = int(np.argmax(np.abs(sums - 1.0)))
        raise InvalidDistribution(
            f"{name}{_index(row0 + i, lead, None)} sums to {float(sums[i])!r}, off from 1 by more than "
            f"atol={atol!r}; refusing to renormalize"
        )


def _index(row: int, lead: tuple[int, ...], col: int | None) -> str:
    idx = [int(i) for i in np.unravel_index(row, lead)] if lead else []
    if col is not None:
        idx.append(col)
    return "[" + ", ".join(map(str, idx)) + "]" if idx else ""


def _emit(m: np.ndarray, res: np.ndarray, reject: np.ndarray, zb: np.ndarray, inv: np.ndarray, out: np.ndarray) -> None:
    """out = (accept + reject * residual / Z) * inv, row by row; m and res are overwritten.

    Rows with Z == 0 (p == q) never reject and never sample the residual: they get the
    accept mass alone (no 0/0). Multiplications by exactly 1.0 are skipped (same result).
    """
    ok = zb > 0
    with np.errstate(over="ignore"):
        scale = np.divide(reject, zb, out=np.zeros_like(zb), where=ok)
    if not np.isfinite(scale).all():
        # Z subnormal and reject (equal to Z exactly) carrying rounding: reject / Z overflows.
        # Normalize the residual first (r / Z <= 1), then scale by the rejection mass.
        np.divide(res, np.where(ok, zb, 1.0)[:, None], out=res)
        scale = np.where(ok, reject, 0.0)
    if (inv == 1.0).all():
        if not (scale == 1.0).all():
            np.multiply(res, scale[:, None], out=res)
        np.add(m, res, out=out)
        return
    np.multiply(res, (scale * inv)[:, None], out=res)
    np.multiply(m, inv[:, None], out=m)
    np.add(m, res, out=out)


def _kernel() -> Any:
    """The numba kernel module, imported on first use (never by ``import specproof``)."""
    try:
        numeric_numba = importlib.import_module("specproof.laws.numeric_numba")
    except ImportError as exc:
        raise BackendUnavailable(
            f"backend='numba' needs numba, which cannot be imported here ({exc}); install it with "
            "pip install 'specproof[fast]', or use the default backend='numpy'"
        ) from None
    return numeric_numba


def _check_backend(backend: Any) -> None:
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise InvalidOption(f"backend is {backend!r}; it must be one of {', '.join(map(repr, BACKENDS))}")
    if backend == "numba":
        _kernel()


def _law_numba(p2: np.ndarray, q2: np.ndarray, atol: float | Fraction) -> tuple[np.ndarray, ...] | None:
    """dist, alpha and Z of rows [n, V] by the numba kernel, or None if some row is not clearly
    valid (the caller then runs the NumPy path, which refuses it or, at the atol edge, accepts it)."""
    kernel = _kernel()
    n, v = p2.shape
    pc = np.ascontiguousarray(p2, dtype=np.float64)
    qc = np.ascontiguousarray(q2, dtype=np.float64)
    # Two summation orders differ by less than 2 gamma_V sum(x) < 5 V u on rows summing to < 2:
    # a row accepted within this margin is accepted by the NumPy path's own sums too.
    tol = float(atol) - 8.0 * v * 2.0**-53
    dist = np.empty((n, v), dtype=np.float64)
    alpha = np.empty(n, dtype=np.float64)
    z = np.empty(n, dtype=np.float64)
    if n >= 2 and n * v >= _THREADED_ELEMENTS:
        half = (n + 1) // 2
        with ThreadPoolExecutor(max_workers=2) as pool:  # the kernel releases the GIL
            jobs = [
                pool.submit(kernel.law_rows, pc, qc, 0, half, tol, dist, alpha, z),
                pool.submit(kernel.law_rows, pc, qc, half, n, tol, dist, alpha, z),
            ]
            bad = [job.result() for job in jobs]
    else:
        bad = [kernel.law_rows(pc, qc, 0, n, tol, dist, alpha, z)]
    return None if max(bad) >= 0 else (dist, alpha, z)


def _law(
    p: Any, q: Any, atol: float | Fraction, names: tuple[str, str] = ("p", "q"), backend: str = "numpy"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return dist [..., V], alpha [...] and Z [...] (residual mass = TV) for validated rows."""
    _check_backend(backend)
    atol = check_atol(atol)
    pa, qa = _as_rows(p, names[0]), _as_rows(q, names[1])
    if pa.shape != qa.shape:
        raise InvalidDistribution(f"p has shape {pa.shape} but q has shape {qa.shape}")
    lead, v = pa.shape[:-1], pa.shape[-1]
    p2, q2 = pa.reshape(-1, v), qa.reshape(-1, v)
    n = p2.shape[0]
    if backend == "numba" and n:
        fast = _law_numba(p2, q2, atol)
        if fast is not None:
            dist, alpha, z = fast
            return dist.reshape(pa.shape), alpha.reshape(lead), z.reshape(lead)
    dist = np.empty((n, v), dtype=np.float64)
    alpha = np.empty(n, dtype=np.float64)
    z = np.empty(n, dtype=np.float64)
    step = max(1, _BLOCK_ELEMENTS // v)

    def rows(start: int, stop: int) -> None:
        # One scratch buffer reused by every block (fresh 1 MB temporaries would page-fault); the
        # residual is built in the block's output rows, so a block touches p, q, m and dist only.
        buf_m = np.empty((min(step, stop - start), v), dtype=np.float64)
        for r0 in range(start, stop, step):
            r1 = min(stop, r0 + step)
            pb = np.asarray(p2[r0:r1], dtype=np.float64)
            qb = np.asarray(q2[r0:r1], dtype=np.float64)
            with np.errstate(over="ignore", invalid="ignore"):  # inf/NaN sums are refused below
                sp, sq = pb.sum(axis=1), qb.sum(axis=1)
            if not (_sums_ok(sp, atol) and _sums_ok(sq, atol)):
                _refuse(pb, sp, names[0], r0, lead, atol)
                _refuse(qb, sq, names[1], r0, lead, atol)
            # The stated policy divides each row by its sum: min(p/sp, q/sq) = min(p, q sp/sq)/sp,
            # so q is brought to p's scale and the common 1/sp is applied once, at the end.
            k = sp / sq
            if (k == 1.0).all():  # multiplying by exactly 1.0 changes nothing: skip the pass
                qs = qb
            else:
                qs = np.multiply(qb, k[:, None], out=buf_m[: r1 - r0])
            m = np.minimum(pb, qs, out=buf_m[: r1 - r0])  # accept mass q min(1, p/q) = min(p, q)
            if not m.min() >= 0:  # min(p, q) < 0 iff p or q has a negative entry
                _refuse(pb, sp, names[0], r0, lead, atol)
                _refuse(qb, sq, names[1], r0, lead, atol)
            a = m.sum(axis=1)
            res = np.subtract(pb, m, out=dist[r0:r1])  # (p - q)+ = p - min(p, q), in the output rows
            zb = res.sum(axis=1)
            reject = np.maximum(sp - a, 0.0)  # sum(p) - alpha: the rows' rounding does not leak in
            _emit(m, res, reject, zb, 1.0 / sp, dist[r0:r1])
            alpha[r0:r1] = a / sp
            z[r0:r1] = zb / sp

    if n >= 2 and n * v >= _THREADED_ELEMENTS:
        # NumPy releases the GIL inside ufuncs: two halves run on two cores.
        half = (n + 1) // 2
        with ThreadPoolExecutor(max_workers=2) as pool:
            jobs = [pool.submit(rows, 0, half), pool.submit(rows, half, n)]
            for job in jobs:  # in order, so the first bad row is the one reported
                job.result()
    else:
        rows(0, n)
    return dist.reshape(pa.shape), alpha.reshape(lead), z.reshape(lead)


def _out(x: np.ndarray) -> np.ndarray | np.float64:
    return x[()] if x.ndim == 0 else x


def emitted_distribution(
    p: Any, q: Any, *, atol: float = DEFAULT_ATOL, backend: str = "numpy"
) -> tuple[np.ndarray, np.ndarray | np.float64]:
    """Return the law of the emitted token and alpha, in float64, batched over [..., V].

    Parameters
    ----------
    p : array_like of float, shape [..., V]
        Target rows (float16/32/64 or integer dtype; computed in float64), each finite,
        non-negative and summing to 1 within ``atol``.
    q : array_like of float, shape [..., V]
        Draft rows, same shape as ``p`` (no broadcasting).
    atol : float, optional
        Largest accepted ``abs(sum(row) - 1)``; accepted rows are divided by their sum.
    backend : {"numpy", "numba"}, optional
        ``"numpy"`` (default, the reference): NumPy ufuncs, eleven passes over each row.
        ``"numba"``: a compiled kernel (:mod:`specproof.laws.numeric_numba`, ``pip install
        'specproof[fast]'``) making three passes; the same operations on each entry, row sums
        by a balanced tree whose error bound is at least as tight as NumPy's pairwise sums, so
        the same :data:`ERROR_BOUND`; the same refusals (a row it does not accept is handed
        to the NumPy path). Compiled on first use (cached on disk).

    Returns
    -------
    dist : numpy.ndarray of float64, shape [..., V]
        Probability that the verifier emits each token. Never NaN, inf or negative; exactly
        0.0 where p(x) = 0.
    alpha : numpy.ndarray of float64, shape [...]
        Acceptance probability per row; a NumPy float64 scalar for 1-D input.

    Raises
    ------
    InvalidDistribution
        Empty last axis, shapes that differ, a NaN, inf or negative entry, a row whose sum
        is off from 1 by more than ``atol``, or a non-numeric dtype. The message names the
        index.
    InvalidOption
        ``backend`` is not one of :data:`BACKENDS`.
    BackendUnavailable
        ``backend="numba"`` and numba cannot be imported.

    Notes
    -----
    Per row: accept mass ``min(p, q)`` (``q min(1, p/q)``, 0 where q = 0), alpha its sum,
    residual ``(p - q)+ = p - min(p, q)`` with mass Z, rejection mass ``sum(p) - alpha``,
    dist = accept + rejection mass * residual / Z. Rows with Z = 0 (p == q, including
    V = 1) get the accept mass alone: no 0/0, no NaN. Rows are processed in cache-sized
    blocks.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> dist, alpha = emitted_distribution([0.5, 0.5, 0.0], [0.25, 0.25, 0.5])
    >>> dist.tolist(), float(alpha)
    ([0.5, 0.5, 0.0], 0.5)
    """
    dist, alpha, _ = _law(p, q, atol, backend=backend)
    return dist, _out(alpha)


def acceptance_probability(
    p: Any, q: Any, *, atol: float = DEFAULT_ATOL, backend: str = "numpy"
) -> np.ndarray | np.float64:
    """Return alpha = sum_x min(p(x), q(x)) per row, float64 of shape [...].

    Parameters
    ----------
    p, q : array_like of float, shape [..., V]
        Target and draft rows, validated as in :func:`emitted_distribution`.
    atol : float, optional
        Normalization tolerance, as in :func:`emitted_distribution`.
    backend : {"numpy", "numba"}, optional
        As in :func:`emitted_distribution`.

    Returns
    -------
    numpy.ndarray of float64, shape [...] (a float64 scalar for 1-D input)

    Raises
    ------
    InvalidDistribution
        As :func:`emitted_distribution`.

    Examples
    --------
    >>> float(acceptance_probability([0.5, 0.5], [1.0, 0.0]))
    0.5
    """
    return _out(_law(p, q, atol, backend=backend)[1])


def tv_distance(p: Any, q: Any, *, atol: float = DEFAULT_ATOL, backend: str = "numpy") -> np.ndarray | np.float64:
    """Return the total variation distance per row, float64 of shape [...].

    Parameters
    ----------
    p, q : array_like of float, shape [..., V]
        Two distributions, validated as in :func:`emitted_distribution`.
    atol : float, optional
        Normalization tolerance, as in :func:`emitted_distribution`.
    backend : {"numpy", "numba"}, optional
        As in :func:`emitted_distribution`.

    Returns
    -------
    numpy.ndarray of float64, shape [...] (a float64 scalar for 1-D input)
        ``sum_x (p(x) - q(x))+`` of the normalized rows, which equals
        ``(1/2) sum_x |p(x) - q(x)|`` and ``1 - alpha``.

    Raises
    ------
    InvalidDistribution
        As :func:`emitted_distribution`.

    Examples
    --------
    >>> float(tv_distance([0.5, 0.5], [0.25, 0.75]))
    0.25
    """
    return _out(_law(p, q, atol, backend=backend)[2])


def residual(p: Any, q: Any, *, atol: float = DEFAULT_ATOL) -> np.ndarray:
    """Return the normalized residual ``(p - q)+ / sum((p - q)+)``, float64 [..., V].

    Parameters
    ----------
    p, q : array_like of float, shape [..., V]
        Target and draft rows, validated as in :func:`emitted_distribution`.
    atol : float, optional
        Normalization tolerance, as in :func:`emitted_distribution`.

    Returns
    -------
    numpy.ndarray of float64, shape [..., V]
        Each row sums to 1 within rounding. The residual is ill-conditioned when its mass Z
        is tiny: each entry's absolute error is about ``1e-16 / Z`` (rows one ulp apart have
        Z ~ 1e-17 and a residual that is only roughly right; use
        :func:`specproof.laws.exact.residual` there).

    Raises
    ------
    ResidualUndefined
        If some row has residual mass 0 in float64: p == q there, or p and q differ by less
        than float64 resolves after normalization. The message names the first such row.
    InvalidDistribution
        As :func:`emitted_distribution`.

    Examples
    --------
    >>> residual([0.5, 0.5, 0.0], [0.25, 0.25, 0.5]).tolist()
    [0.5, 0.5, 0.0]
    """
    _law(p, q, atol)  # validation, with the same messages as emitted_distribution
    pa = np.asarray(p, dtype=np.float64)
    qa = np.asarray(q, dtype=np.float64)
    pn = pa / pa.sum(axis=-1, keepdims=True)
    qn = qa / qa.sum(axis=-1, keepdims=True)
    res = pn - np.minimum(pn, qn)  # (p - q)+
    z = res.sum(axis=-1, keepdims=True)
    if (z == 0).any():
        row = np.unravel_index(int(np.argmax(z == 0)), z.shape)[:-1]
        where = f" at row {tuple(int(i) for i in row)}" if row else ""
        raise ResidualUndefined(
            f"the residual is undefined{where}: (p - q)+ has mass 0 in float64 (p == q there, "
            "or they differ by less than float64 resolves), so its normalization is 0/0; "
            "specproof.laws.exact.residual gives the exact residual of rows that differ"
        )
    normalized: np.ndarray = res / z
    return normalized


def drawn_error_estimate(stop: Any, z: Any, vocab_size: int) -> np.ndarray:
    """Estimated float64 error of P(stop at a position, emit t) in :func:`given_block_law`.

    At a position where the drafted token is rejected with probability ``stop`` and the
    residual has mass ``z``, the emitted token is a draw from residual / z. Computing p and q
    in float64 (each divided by its own rounded sum) moves the residual by a few units of
    rounding, about ``(2 + log2 V) * 2**-52`` in mass, so the joint law's error is about
    ``stop * (2 + log2 V) * 2**-52 / z``. Usually stop / z is about 1 to 10 (the rejection
    probability of one token is at most z / q(x)); it is huge only for a drafted token with
    tiny q(x) and p(x) well below q(x) where p and q nearly agree. Where z == 0 but
    ``stop > ERROR_BOUND`` the estimate is infinite. :func:`given_block_law` recomputes a row
    exactly where the estimate exceeds :data:`RECOMPUTE_ABOVE` = ERROR_BOUND / 16 (the estimate
    is not a proven bound: an adversarial review built rows at V = 128 whose error was 1.2
    times it).

    Parameters
    ----------
    stop, z : array_like of float, same shape
        Per position: probability of stopping there, residual mass there.
    vocab_size : int
        V.

    Returns
    -------
    numpy.ndarray of float64
    """
    stop, z = np.asarray(stop, dtype=np.float64), np.asarray(z, dtype=np.float64)
    scale = (2 + np.log2(max(vocab_size, 1))) * 2.0**-52
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.where(z > 0, stop * scale / np.where(z > 0, z, 1.0), np.where(stop > ERROR_BOUND, np.inf, 0.0))


def _block_residuals(t64: np.ndarray, d64: np.ndarray) -> tuple[np.ndarray, ...]:
    """Row sums of target and draft, target rows divided by their sums, and the residual
    (p - q)+ at each drafted position with its mass Z (kept as a trailing axis of length 1)."""
    st, sd = t64.sum(axis=-1, keepdims=True), d64.sum(axis=-1, keepdims=True)
    pn, qn = t64 / st, d64 / sd
    res = pn[..., :-1, :] - np.minimum(pn[..., :-1, :], qn)
    return st, sd, pn, res, res.sum(axis=-1, keepdims=True)


def _recompute(accepted: np.ndarray, z: np.ndarray, v: int) -> np.ndarray:
    """Bool [..., gamma]: the residual rows :func:`given_block_law` computes exactly."""
    return drawn_error_estimate(accepted[..., :-1], z[..., 0], v) > RECOMPUTE_ABOVE


def recomputed_positions(target: Any, draft: Any, accepted: Any) -> np.ndarray:
    """Where :func:`given_block_law` computed the residual row exactly (float64 could not
    resolve it), for the rows it was given and the ``accepted_length_law`` it returned.

    Parameters
    ----------
    target, draft : array_like of float, shapes [..., gamma + 1, V] and [..., gamma, V]
        The rows given to :func:`given_block_law` (already validated by it).
    accepted : array_like of float, shape [..., gamma + 1]
        Its ``accepted_length_law``.

    Returns
    -------
    numpy.ndarray of bool, shape [..., gamma]
    """
    t64, d64 = np.asarray(target, dtype=np.float64), np.asarray(draft, dtype=np.float64)
    return _recompute(np.asarray(accepted, dtype=np.float64), _block_residuals(t64, d64)[-1], t64.shape[-1])


def _exact_residual_row(p: np.ndarray, q: np.ndarray, atol: float | Fraction) -> np.ndarray:
    """The normalized residual of float rows made exact (policy dyadic-renormalize), rounded
    once to float64; all zeros when p == q exactly."""
    from specproof.laws.exact import emitted_law
    from specproof.laws.rational import from_floats

    law = emitted_law(from_floats(p, atol=atol, name="target"), from_floats(q, atol=atol, name="draft"))
    z = law.normalizer
    return np.array([n / z if z else 0.0 for n in law.residual_numerators.tolist()], dtype=np.float64)


def given_block_law(
    target: Any, draft: Any, tokens: Any, *, atol: float = DEFAULT_ATOL
) -> tuple[np.ndarray, np.ndarray]:
    """Float mirror of :func:`specproof.laws.chain.given_block_law`, batched.

    Parameters
    ----------
    target : array_like of float, shape [..., gamma + 1, V]
        Target rows p_0..p_gamma (the last gives the bonus token).
    draft : array_like of float, shape [..., gamma, V]
        Draft rows q_0..q_{gamma-1}.
    tokens : array_like of int, shape [..., gamma]
        Drafted token ids, each in [0, V) with q_i(x_i) > 0.
    atol : float, optional
        Normalization tolerance, as in :func:`emitted_distribution`.

    Returns
    -------
    accepted_length_law : numpy.ndarray of float64, shape [..., gamma + 1]
        P(exactly i drafts accepted).
    emitted : numpy.ndarray of float64, shape [..., gamma + 1, V]
        Law of the emitted token when stopping after i accepted drafts: the normalized
        residual (all zeros where it is empty), or the bonus row for i = gamma.

    Raises
    ------
    InvalidDistribution
        Shapes that do not fit, bad rows (as :func:`emitted_distribution`), token ids that
        are not integers in [0, V), or a token the draft gives probability 0.

    Notes
    -----
    Where :func:`drawn_error_estimate` (above :data:`RECOMPUTE_ABOVE`) says float64 cannot
    resolve the token that replaces a rejected draft (a likely rejection of a token with tiny
    q(x), where p and q nearly agree: for example p(x) = 0, q(x) = 1e-12), that residual row
    is computed exactly from
    the float rows (made exact by the ``dyadic-renormalize`` policy) and rounded once; this
    is rare and costs one exact law of length V per such row.

    Accuracy, measured by ``specproof crosscheck --blocks``: the joint law P(stop after i
    drafts, emit t) = accepted_length_law[i] * emitted[i][t] and accepted_length_law are within
    :data:`ERROR_BOUND` of the exact law of the float rows it is given. The law itself can
    be ill-conditioned in its inputs: rounding exact rows to float64 first can move the
    residual of a nearly-equal pair entirely (the crosscheck reports that too).
    """
    t, d = _as_rows(target, "target"), _as_rows(draft, "draft")
    x = as_array(tokens, "tokens")
    if (
        t.ndim < 2
        or d.shape != t.shape[:-2] + (t.shape[-2] - 1, t.shape[-1])
        or x.shape != d.shape[:-1]
        or x.shape[-1] < 1
    ):
        raise InvalidDistribution(
            f"shapes do not fit: target {t.shape}, draft {d.shape}, tokens {x.shape} "
            "(want [..., gamma + 1, V], [..., gamma, V], [..., gamma] with gamma >= 1)"
        )
    v = t.shape[-1]
    if x.dtype.kind not in "iu" or (x.size and (x.min() < 0 or x.max() >= v)):
        raise InvalidDistribution(
            f"tokens must be integer ids in [0, {v}); got dtype {x.dtype}"
            + (f", range [{x.min()}, {x.max()}]" if x.size and x.dtype.kind in "iuf" else "")
        )
    _law(t, t, atol, ("target", "target"))  # validates every row (same checks and messages)
    _law(d, d, atol, ("draft", "draft"))
    t64, d64 = t.astype(np.float64), d.astype(np.float64)
    st, sd, pn, res, z = _block_residuals(t64, d64)
    tx = np.take_along_axis(t64[..., :-1, :], x[..., None], axis=-1)[..., 0]
    dx = np.take_along_axis(d64, x[..., None], axis=-1)[..., 0]
    if (dx == 0).any():
        at = tuple(int(i) for i in np.argwhere(dx == 0)[0])
        raise InvalidDistribution(
            f"block {at[:-1]} position {at[-1]}: the drafted token {int(x[at])} has draft "
            "probability 0: it cannot have been drafted"
        )
    # p(x)/q(x) = (t(x)/d(x)) (sum d / sum t): the drafted floats are divided by each other, not
    # first by their row sums (a subnormal q(x) divided by a sum of 1.0007 would lose bits)
    with np.errstate(over="ignore"):  # overflows only when q(x) is subnormal; min() gives 1
        keep = np.minimum(1.0, tx / dx * (sd[..., 0] / st[..., :-1, 0]))  # min(1, p(x)/q(x)) per position
    alive = np.cumprod(keep, axis=-1)
    before = np.concatenate([np.ones_like(alive[..., :1]), alive[..., :-1]], axis=-1)
    accepted = np.concatenate([before * (1.0 - keep), alive[..., -1:]], axis=-1)
    rows = np.divide(res, z, out=np.zeros_like(res), where=z > 0)
    # Where float64 cannot resolve the replacement token's law (a likely rejection, a tiny
    # residual), that row is computed exactly from the float inputs and rounded once.
    for where in np.argwhere(_recompute(accepted, z, v)):
        at = tuple(int(i) for i in where)
        rows[at] = _exact_residual_row(t64[at], d64[at], atol)
    return accepted, np.concatenate([rows, pn[..., -1:, :]], axis=-2)


def _validated(p: Any, q: Any, atol: float | Fraction) -> tuple[np.ndarray, np.ndarray]:
    """p and q as float64 rows [n, V] divided by their sums, after the input policy's checks."""
    _law(p, q, atol)  # the checks (shapes, finite, non-negative, sums within atol), and nothing kept
    pa = np.asarray(_as_rows(p, "p"), dtype=np.float64)
    qa = np.asarray(_as_rows(q, "q"), dtype=np.float64)
    v = pa.shape[-1]
    p2, q2 = pa.reshape(-1, v), qa.reshape(-1, v)
    return p2 / p2.sum(axis=1, keepdims=True), q2 / q2.sum(axis=1, keepdims=True)


def multidraft_law(
    p: Any, q: Any, k: int, *, atol: float = DEFAULT_ATOL
) -> tuple[np.ndarray, np.ndarray | np.float64, np.ndarray]:
    """Recursive rejection sampling with k drafts drawn with replacement, in float64, batched.

    Parameters
    ----------
    p, q : array_like of float, shape [..., V]
        Target and draft rows (the input policy of :func:`emitted_distribution`).
    k : int
        Number of drafts, >= 1.
    atol : float, optional
        Largest accepted ``abs(sum(row) - 1)``.

    Returns
    -------
    dist : numpy.ndarray of float64, shape [..., V]
        The emitted law (p, up to rounding: the verifier is lossless).
    acceptance : numpy.ndarray of float64, shape [...]
        P(some draft is accepted).
    accepted_at : numpy.ndarray of float64, shape [..., k]
        ``[..., i]``: P(draft i + 1 is the one accepted).

    Raises
    ------
    InvalidDistribution
        Bad rows (as :func:`emitted_distribution`), or ``k`` not an integer >= 1.

    Notes
    -----
    The exact law is :func:`specproof.laws.variants.multidraft_law` (``method="with-replacement"``):
    draft i is drawn from q and accepted with probability ``min(1, T_i(x)/q(x))``, T_1 = p and
    T_{i+1} the normalized residual ``(T_i - q)+``. Here the target's remaining mass is kept
    unnormalized: with M_1 = p and m_i = sum(M_i) (the probability that the first i - 1
    drafts were rejected), draft i emits ``A_i = min(m_i q, M_i)`` and leaves ``M_{i+1} = M_i -
    A_i``; the final residual draw emits M_{k+1}. No division by a rejection mass, so a
    near-equal pair loses no accuracy (``specproof crosscheck --multidraft N`` measures it).

    References
    ----------
    Miao et al. 2024 (SpecInfer), multi-step speculative sampling; Chen et al. 2023, Algorithm 2.

    Examples
    --------
    >>> dist, acc, at = multidraft_law([0.5, 0.25, 0.25], [0.25, 0.25, 0.5], 2)
    >>> dist.tolist(), float(acc), at.tolist()
    ([0.5, 0.25, 0.25], 0.8125, [0.75, 0.0625])
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InvalidDistribution(f"k (the number of drafts) must be an integer >= 1, got {k!r}")
    pn, qn = _validated(p, q, atol)
    lead = np.shape(_as_rows(p, "p"))[:-1]
    mass = pn.copy()
    dist = np.zeros_like(pn)
    at = np.empty((pn.shape[0], int(k)), dtype=np.float64)
    for i in range(int(k)):
        left = mass.sum(axis=1, keepdims=True)
        accept = np.minimum(left * qn, mass)
        dist += accept
        at[:, i] = accept.sum(axis=1)
        mass = np.maximum(mass - accept, 0.0)
    dist += mass
    return dist.reshape((*lead, pn.shape[-1])), _out(at.sum(axis=1).reshape(lead)), at.reshape((*lead, int(k)))


def sibling_law(
    p: Any, tokens: Any, *, atol: float = DEFAULT_ATOL
) -> tuple[np.ndarray, np.ndarray | np.float64, np.ndarray]:
    """One node of a token tree with deterministic children, in float64, batched.

    Parameters
    ----------
    p : array_like of float, shape [..., V]
        Target rows.
    tokens : array_like of int, shape [..., k]
        The children's token ids at each row, in the order they are tried (a repeated id is
        allowed: the later copy can no longer be accepted).
    atol : float, optional

    Returns
    -------
    dist : numpy.ndarray of float64, shape [..., V]
        The emitted law (p: the verifier is lossless).
    acceptance : numpy.ndarray of float64, shape [...]
        P(some child is accepted) = the target's mass on the distinct children.
    accepted_at : numpy.ndarray of float64, shape [..., k]
        P(child i + 1 is the one accepted).

    Raises
    ------
    InvalidDistribution
        Bad rows, or a token id outside [0, V) (or not an integer).

    Notes
    -----
    A deterministic child is a one-hot draft: recursive rejection accepts it with probability
    ``T_i(t_i)`` and the residual is T_i with t_i removed, renormalized. Unnormalized: child i
    emits ``M_i(t_i)`` and zeroes it (the exact law is :func:`specproof.laws.variants.sibling_tree`).

    References
    ----------
    Miao et al. 2024 (SpecInfer), tree-based verification; Li et al. 2024 (EAGLE).

    Examples
    --------
    >>> dist, acc, at = sibling_law([0.5, 0.25, 0.25], [2, 0, 2])
    >>> float(acc), at.tolist()
    (0.75, [0.25, 0.5, 0.0])
    """
    pn, _ = _validated(p, p, atol)
    lead = np.shape(_as_rows(p, "p"))[:-1]
    v = pn.shape[-1]
    tok = np.asarray(tokens)
    if tok.dtype.kind not in "iu" or tok.shape[:-1] != lead or tok.ndim == 0:
        raise InvalidDistribution(
            f"tokens must be integer ids of shape [..., k] with [...] = {lead}, got "
            f"dtype {tok.dtype} and shape {tok.shape}"
        )
    if tok.size and (tok.min() < 0 or tok.max() >= v):
        raise InvalidDistribution(f"a child token id is outside [0, {v})")
    tok2 = tok.reshape(pn.shape[0], -1)
    mass = pn.copy()
    rows = np.arange(pn.shape[0])
    at = np.empty(tok2.shape, dtype=np.float64)
    for i in range(tok2.shape[1]):
        at[:, i] = mass[rows, tok2[:, i]]
        mass[rows, tok2[:, i]] = 0.0
    dist = pn.copy()  # accepted children emit their own mass; the residual draw emits the rest
    return dist.reshape((*lead, v)), _out(at.sum(axis=1).reshape(lead)), at.reshape(tok.shape)
