"""Trace Hugging Face transformers' speculative verifier, ``_speculative_sampling``.

transformers keeps the verifier of assisted generation with sampling in
``transformers/generation/utils.py`` as (5.x)::

    _speculative_sampling(candidate_input_ids, candidate_logits, candidate_length, new_logits,
                          assistant_ensemble_weight=None) -> (valid_tokens, n_matches)

It takes the softmax of the draft (``candidate_logits``, [1, gamma, V]) and target
(``new_logits``, [1, gamma + 1, V]) logits, draws one coin per draft with ``torch.rand_like``,
accepts while ``r_i <= p_i / q_i``, and draws the next token with ``torch.multinomial`` from
``clamp(p - q, min=0)`` normalized (or from the target row after gamma acceptances). With an
ensemble weight ``w`` the ratio is ``1 - w + w p_i / q_i`` (lossy by design). 4.x versions take
``is_done_candidate`` instead of the ensemble weight; this adapter reads the signature and passes
the ensemble weight only where it exists.

:func:`speculative_sampling_law` runs that function under :func:`specproof.trace.tracer.trace`: the drafts are drawn by
``torch.multinomial`` from the draft's softmax rows, then the function verifies them (batch 1,
gamma >= 1). The result is the exact law of the emitted block (accepted drafts then one token),
its exact TV from the target's joint law and a verdict (lossless, float-faithful or lossy, judged
against the float-ideal family as :func:`specproof.testing.compare` does), under the tracer's modelling
assumptions (float32 coins are ``k / 2^24``; ``torch.multinomial`` is an exact categorical over the
float weights it is given, its kernel not traced).

The reference ("the target's joint law"): the target's row at position i is the exact value of
the float softmax of ``target_logits[i]`` (the dtype of the logits), renormalized, which is the
law ``torch.multinomial`` draws from under the same model. The logits are fixed per position: the
target's row at position i does not depend on the tokens before it (a stated simplification of a
real model, where it would). Losslessness is judged on the first gamma + 1 tokens of the stream:
the emitted block, continued by sampling the target rows, against the product of the target rows.

transformers and torch are imported only inside this module's functions; ``import specproof``
never imports them.

References
----------
transformers ``src/transformers/generation/utils.py`` (``_speculative_sampling``); Leviathan et
al. 2023, Algorithm 1 (which it follows, with ``<=`` for ``<``).
"""

from __future__ import annotations

import inspect
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from specproof.errors import InvalidDistribution, SpecProofError, renamed
from specproof.laws.block import LengthLawName
from specproof.trace.tracer import rows_stream_tv, trace

__all__ = ["TransformersBlockLaw", "speculative_sampling_law", "read_logits", "edge_cases", "versions"]


@dataclass(frozen=True)
class TransformersBlockLaw(LengthLawName):
    """The exact law of one call of transformers' ``_speculative_sampling`` on fixed logits.

    Attributes
    ----------
    law : dict of tuple of int -> Fraction
        P(the emitted block), the block being the accepted drafts then one token (1 to gamma + 1 ids).
    reference : tuple of tuple of Fraction, shape [gamma + 1, V]
        The target's row at each position (exact float softmax values, renormalized).
    tv : Fraction
        Exact TV between the first gamma + 1 stream tokens (the block, then the target rows) and the
        product of the target rows.
    accepted_length_law : tuple of Fraction, length gamma + 1
        P(exactly i drafts accepted).
    gamma, vocab_size : int
    ensemble_weight : float or None
    runs : int
        Re-runs of the sampler the trace took.
    assumptions : tuple of str
        The tracer's modelling assumptions, then the adapter's.
    versions : dict of str -> str
        transformers and torch versions.
    judgement : Judgement or None
        The law judged against the target's rows and the float-ideal family
        (:func:`specproof.rules.faithful.judge`, as :func:`specproof.testing.compare` judges a traced
        sampler); None only when built by hand.
    """

    law: dict[tuple[int, ...], Fraction]
    reference: tuple[tuple[Fraction, ...], ...]
    tv: Fraction
    accepted_length_law: tuple[Fraction, ...]
    gamma: int
    vocab_size: int
    ensemble_weight: float | None
    runs: int
    assumptions: tuple[str, ...]
    versions: dict[str, str]
    judgement: Any = None

    @property
    def lossless(self) -> bool:
        """True iff the stream's first gamma + 1 tokens have exactly the target's joint law."""
        return self.tv == 0

    # the step contract's names (specproof.laws.contract.StepContract)
    @property
    def emitted(self) -> dict[tuple[int, ...], Fraction]:
        """P(the emitted block): :attr:`law`."""
        return self.law

    @property
    def stream_tv(self) -> Fraction:
        """The stream TV from the target's rows: :attr:`tv`."""
        return self.tv

    @property
    def expected_accepted(self) -> Fraction:
        """E[accepted drafts] = sum_i i * accepted_length_law[i]."""
        return sum((i * m for i, m in enumerate(self.accepted_length_law)), Fraction(0))

    @property
    def expected_emitted(self) -> Fraction:
        """E[emitted tokens] = 1 + expected_accepted."""
        return 1 + self.expected_accepted

    @property
    def verdict(self) -> str:
        """``"lossless"``, ``"float-faithful"`` (the law of a correct float implementation of the family,
        never emitting a token the target gives probability 0) or ``"lossy"``."""
        if self.judgement is None:
            return "lossless" if self.lossless else "lossy"
        return self.judgement.verdict

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready data: ``verdict``, ``tv`` ("n/d"), ``law`` (block ids joined by spaces -> "n/d"), ..."""

        def fr(x: Fraction) -> str:
            return f"{x.numerator}/{x.denominator}"

        return {
            "verdict": self.verdict,
            "tv": fr(self.tv),
            **(
                {}
                if self.judgement is None
                else {
                    "tv_from_float_ideal": fr(self.judgement.tv_from_float_ideal),
                    "arithmetic": self.judgement.arithmetic,
                    "outside_support": fr(self.judgement.outside_support),
                }
            ),
            "law": {" ".join(map(str, b)): fr(m) for b, m in self.law.items()},
            "accepted_length": [fr(x) for x in self.accepted_length_law],
            "gamma": self.gamma,
            "vocab_size": self.vocab_size,
            "ensemble_weight": self.ensemble_weight,
            "runs": self.runs,
            "assumptions": list(self.assumptions),
            "versions": dict(self.versions),
            "function": "transformers.generation.utils._speculative_sampling",
        }


def versions() -> dict[str, str]:
    """The installed transformers and torch versions."""
    import torch
    import transformers

    return {"transformers": transformers.__version__, "torch": torch.__version__}


def read_logits(path: str | Path, what: str = "logits", *, one_row: bool = False) -> np.ndarray:
    """Read a 2-D logits array from ``.json`` (a list of rows of numbers; ``-Infinity`` or the
    strings ``"-inf"``/``"inf"``/``"nan"`` allowed) or ``.npy``; with ``one_row``, a 1-D row
    (read as shape [1, V]) too.

    Returns
    -------
    numpy.ndarray, shape [rows, V], float64 (or the ``.npy`` file's float dtype)

    Raises
    ------
    InvalidDistribution
        Not 2-D, empty, ragged, not numbers, or another suffix.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".npy":
        try:
            arr = np.load(path, allow_pickle=False)
        except ValueError as exc:
            raise InvalidDistribution(f"{what} {path}: not a readable .npy array ({exc})") from None
        if arr.dtype.kind not in "fiu":
            raise InvalidDistribution(f"{what} {path}: dtype {arr.dtype}, not a number array")
        if arr.dtype.kind != "f":
            arr = arr.astype(np.float64)
    elif suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidDistribution(f"{what} {path}: not valid JSON ({exc})") from None

        def cell(x: Any) -> float:
            if isinstance(x, bool) or not isinstance(x, (int, float, str)):
                raise InvalidDistribution(f"{what} {path}: {x!r} is not a number")
            if isinstance(x, str):
                if x.strip().lower() not in ("-inf", "inf", "+inf", "-infinity", "infinity", "nan"):
                    raise InvalidDistribution(f"{what} {path}: the string {x!r} is not -inf")
                return float(x.strip().lower().replace("infinity", "inf"))
            return float(x)

        if one_row and isinstance(data, list) and data and not any(isinstance(r, list) for r in data):
            data = [data]
        if not isinstance(data, list) or not all(isinstance(r, list) for r in data):
            raise InvalidDistribution(f"{what} {path}: expected a list of rows (a 2-D array)")
        if len({len(r) for r in data}) > 1:
            raise InvalidDistribution(f"{what} {path}: rows of different lengths")
        arr = np.array([[cell(x) for x in r] for r in data], dtype=np.float64)
    else:
        raise InvalidDistribution(f"{what} {path}: use a .json or .npy file")
    if one_row and arr.ndim == 1:
        arr = arr.reshape(1, -1)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise InvalidDistribution(f"{what} {path}: shape {list(arr.shape)}, not a non-empty [rows, V] array")
    return arr


def _check_logits(arr: np.ndarray, what: str) -> None:
    if np.isnan(arr).any() or np.isposinf(arr).any():
        i = int(np.argwhere(np.isnan(arr) | np.isposinf(arr))[0][0])
        raise InvalidDistribution(f"{what} row {i} holds NaN or +inf (the softmax would be NaN)")
    for i, row in enumerate(arr):
        if np.isneginf(row).all():
            raise InvalidDistribution(f"{what} row {i} is -inf everywhere (the softmax would be NaN)")


def _exact_row(row: Any) -> tuple[Fraction, ...]:
    vals = [Fraction(float(x)) for x in row]
    total = sum(vals, Fraction(0))
    return tuple(v / total for v in vals)


def speculative_sampling_law(
    target_logits: Any,
    draft_logits: Any,
    *,
    ensemble_weight: float | None = None,
    dtype: str = "float32",
    max_runs: int = 1_000_000,
    check_pieces: bool = True,
    read_thresholds: bool = True,
    pushforward: bool = True,
) -> TransformersBlockLaw:
    """The exact law of the block transformers' ``_speculative_sampling`` emits on fixed logits.

    Parameters
    ----------
    target_logits : array-like, shape [gamma + 1, V]
        The target's logits at each drafted position and the bonus position; ``-inf`` allowed
        (a token the target never emits), not NaN or ``+inf``, not ``-inf`` on a whole row.
    draft_logits : array-like, shape [gamma, V]
        The draft's logits; each draft token is drawn by ``torch.multinomial`` from its softmax.
    ensemble_weight : float, optional
        transformers' ``assistant_ensemble_weight`` (DIVERSE static ensemble), in (0, 1]; None for
        the standard verifier. Refused on a transformers version whose function lacks it. Lossy by
        design: its law is judged against the target alone, not the float-ideal family.
    dtype : {"float32", "float64"}
        The dtype of the logits tensors (models emit float32; the coin follows the dtype).
    max_runs : int
        Budget of re-runs (see :mod:`specproof.trace.tracer`).
    check_pieces : bool
        As :func:`specproof.trace.tracer.trace` (False: fewer runs, under a stronger assumption, which
        holds for this function: its thresholds are computed before its coins are drawn).
    read_thresholds : bool
        As :func:`specproof.trace.tracer.trace` (default True: the coins' breakpoints read from their comparisons).
    pushforward : bool
        As :func:`specproof.trace.tracer.trace` (default True: the residual or bonus draw, which the function only
        moves into the tokens it returns, is read at every category from one run).

    Returns
    -------
    TransformersBlockLaw

    Raises
    ------
    InvalidDistribution
        Shapes that do not fit, NaN/+inf logits, a row that is ``-inf`` everywhere.
    SpecProofError
        A bad ensemble weight or one the installed function does not take; the tracer's errors.

    Notes
    -----
    Cost: every drafted block is enumerated (a draft indexes the rows), each coin costs its pieces and
    the tracer's checks, and the residual or bonus token is read at every category from one run (see
    :mod:`specproof.trace.tracer`; measured with the defaults: 80 to 258 runs at V = 4, gamma = 2, 471 at
    V = 64, gamma = 1, 4,240 at V = 16, gamma = 2; about ``7 V`` at gamma 1 and ``8^gamma`` at V = 4).
    The judgement against the float-ideal family, after the trace, can take longer than the trace at
    V = 64. V = 64 with gamma = 4 is out of reach. A drafted token with ``q(x) > 0`` and ``p(x) = 0`` is accepted when the coin is 0
    (``0 <= 0``): probability ``q(x) 2^-24`` each time, the reason the default verifier is not
    exactly lossless.

    Examples
    --------
    >>> law = speculative_sampling_law([[0.0, 0.0], [0.0, 0.0]], [[0.0, 0.0]])
    >>> law.lossless, law.law[(0, 1)]
    (True, Fraction(1, 4))
    """
    import torch
    from transformers.generation import utils as hf

    if dtype not in ("float32", "float64"):
        raise SpecProofError(f"dtype is {dtype!r}, not float32 or float64")
    tdt = getattr(torch, dtype)
    t = np.asarray(target_logits, dtype=np.float64)
    d = np.asarray(draft_logits, dtype=np.float64)
    if t.ndim != 2 or d.ndim != 2:
        raise InvalidDistribution(
            f"target logits have shape {list(t.shape)} and draft logits {list(d.shape)}: "
            "both must be 2-D ([gamma + 1, V] and [gamma, V])"
        )
    gamma, v = d.shape
    if gamma < 1 or t.shape != (gamma + 1, v):
        raise InvalidDistribution(
            f"draft logits [gamma, V] = {list(d.shape)} need target logits "
            f"[gamma + 1, V] = {[gamma + 1, v]}, got {list(t.shape)}"
        )
    _check_logits(t, "target logits")
    _check_logits(d, "draft logits")
    fn = hf._speculative_sampling
    params = inspect.signature(fn).parameters
    extra: dict[str, Any] = {}
    if ensemble_weight is not None:
        if (
            not isinstance(ensemble_weight, (int, float))
            or isinstance(ensemble_weight, bool)
            or not 0 < ensemble_weight <= 1
            or not math.isfinite(ensemble_weight)
        ):
            raise SpecProofError(f"ensemble weight is {ensemble_weight!r}, not a number in (0, 1]")
        if "assistant_ensemble_weight" not in params:
            raise SpecProofError(
                "the installed transformers' _speculative_sampling has no assistant_ensemble_weight argument"
            )
        extra["assistant_ensemble_weight"] = float(ensemble_weight)
    if "is_done_candidate" in params:  # transformers 4.x
        extra["is_done_candidate"] = False
    new_logits = torch.tensor(t, dtype=tdt)[None]
    cand_logits = torch.tensor(d, dtype=tdt)[None]
    q_rows = cand_logits.softmax(dim=-1)[0]
    reference = tuple(_exact_row(r) for r in new_logits.softmax(dim=-1)[0].tolist())

    def run():
        drafts = [int(torch.multinomial(q_rows[i], 1)) for i in range(gamma)]
        ids = torch.tensor([drafts], dtype=torch.int64)
        valid, _ = fn(ids, cand_logits, gamma, new_logits, **extra)
        return valid[0]  # the tensor itself: its last token is a draw the trace can push forward

    traced = trace(
        run,
        key=lambda valid: tuple(int(x) for x in valid.tolist()),
        max_runs=max_runs,
        check_pieces=check_pieces,
        read_thresholds=read_thresholds,
        pushforward=pushforward,
    )
    law: dict[tuple[int, ...], Fraction] = traced.law
    lengths = [Fraction(0)] * (gamma + 1)
    for b, m in law.items():
        lengths[len(b) - 1] += m
    assumptions = traced.assumptions + (
        "drafts: each drafted token drawn by torch.multinomial from the softmax of its draft logits row",
        "reference: the target's row at position i is the exact float softmax of target_logits[i], renormalized, "
        "whatever the tokens before it (fixed logits per position)",
    )
    from specproof.rules.faithful import judge

    # the rows the function was given: float softmax values, exact; the family's members on the same rows.
    # The static ensemble is lossy by design, not a float implementation of the textbook verifier: judged
    # against the target alone (the family is not computed)
    judgement = judge(
        law,
        new_logits.softmax(dim=-1)[0],
        None if ensemble_weight is not None else q_rows,
        gamma=gamma,
        family=ratio_members(dtype),
    )
    return TransformersBlockLaw(
        law,
        reference,
        rows_stream_tv(law, reference),
        tuple(lengths),
        gamma,
        v,
        None if ensemble_weight is None else float(ensemble_weight),
        traced.runs,
        assumptions,
        versions(),
        judgement,
    )


def ratio_members(dtype: str) -> list:
    """The float-ideal members a block of ``_speculative_sampling`` is judged against: the ratio test
    ``u < fl(p/q)`` or ``u <= fl(p/q)`` in the logits' dtype (the form the function computes), each
    coin and residual form of :data:`specproof.rules.faithful.FAMILY`, transformers' own
    (``<=``, the residual divided by its torch sum, a coin of the dtype on [0, 1)) first. A subfamily,
    so that a block at V = 64 is judged in seconds (all 224 members took minutes); a law outside it
    is lossy against its nearest ratio-test member."""
    from specproof.rules.faithful import FAMILY

    coin = "float32" if dtype == "float32" else "float64"
    sub = [
        m
        for m in FAMILY
        if m.rule.arithmetic.dtype == dtype
        and m.rule.arithmetic.test == "ratio"
        and m.rule.arithmetic.library in (None, "torch")
    ]

    def own(m) -> bool:
        return (
            m.rule.comparison == "<="
            and m.rule.arithmetic.normalization == "divide"
            and m.rule.arithmetic.library == "torch"
            and m.rule.coin.name == coin
            and not m.rule.coin.open_closed
        )

    return sorted(sub, key=lambda m: not own(m))


_NEG = float("-inf")


def edge_cases() -> dict[str, tuple[list[list[float]], list[list[float]], float | None]]:
    """Small logits pairs (V = 4, gamma = 2) that hit the verifier's edges.

    Returns
    -------
    dict of str -> (target_logits [3, 4], draft_logits [2, 4], ensemble_weight)
        ``p == q``; a drafted token the target never wants (``-inf`` target logit); disjoint
        supports; ratios that are not multiples of 2^-24; the last with the ensemble weight 1/2.
    """
    generic_t = [[0.0, 1.0, 2.0, 0.5], [1.5, 0.0, -1.0, 0.25], [0.0, 0.3, 0.6, 0.9]]
    generic_d = [[1.0, 0.0, 0.5, 2.0], [0.0, 1.0, 0.0, 1.0]]
    return {
        "p == q (uniform rows)": ([[0.0] * 4] * 3, [[0.0] * 4] * 2, None),
        "p == q (generic rows)": (generic_t, generic_t[:2], None),
        "target never wants a drafted token (-inf)": ([[0.0, 0.0, 0.0, _NEG]] * 3, [[0.0] * 4] * 2, None),
        "disjoint supports": ([[0.0, 0.0, _NEG, _NEG]] * 3, [[_NEG, _NEG, 0.0, 0.0]] * 2, None),
        "ratios not multiples of 2^-24": (generic_t, generic_d, None),
        "ratios not multiples of 2^-24, ensemble w = 1/2": (generic_t, generic_d, 0.5),
    }


_RENAMED = {
    "block_law": ("speculative_sampling_law", "specproof.rules.audit.block_law is a rule's block law"),
    "stream_tv": ("rows_stream_tv", "from specproof.trace.tracer"),
}

__getattr__ = renamed(__name__, _RENAMED, globals())
