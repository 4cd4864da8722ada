"""Gumbel-max and Gumbel-top-k on torch uniforms, traced as the exponential race they are in disguise.

With ``u`` uniform, ``E = -log u`` is exponential and ``G = -log E = -log(-log u)`` is a Gumbel variable, so
``argmax(l + G)`` is ``argmax(exp(l) / E)``: the exponential race, whose winner is ``i`` with probability
``exp(l_i) / sum_j exp(l_j)`` (Gumbel-top-k, ``topk(l + G, k)``, draws k ids without replacement, each in turn
with probability proportional to the weights left: Plackett-Luce). The torch-function mode
(:mod:`specproof.trace.sources.torch_mode`) follows a tensor of uniforms (``torch.rand``, ``rand_like``,
``uniform_(0, 1)``) through the forms samplers write (``-log(-log u)``, ``log(-log u)`` subtracted, ``1 - u``,
a tiny ``clamp(min=eps)`` or ``+ eps`` guard, a positive scalar temperature, ``w / (-log u)``; and ``l - log E`` with ``E`` from ``Tensor.exponential_``, the
race written in log space); when such a
chain ends in ``argmax`` or ``topk`` over the last dimension the run is restarted with that draw *deferred*:
it takes no uniform slots, and the ``argmax`` (``topk``) becomes exact categorical draws over the weights
(``w`` itself where the scores are ``log w`` of a tensor that holds no uniform, else ``exp(l / c)`` in float64).
Any other use of the deferred noise is refused, naming it; a Gumbel construction outside these forms is
refused with :class:`~specproof.trace.core.ContinuousThreshold` (``assert_lossless(..., statistical=True)``
then tests it statistically, and says so).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from specproof.trace.core import UnmodelledRandomness, _draw_categorical, _Run

#: Largest guard ``eps`` (``clamp(min=eps)``, ``u + eps``) ignored inside the noise: the law stated is that of the
#: construction without it (each such guard moves a probability by at most about eps).
MAX_GUARD = 1e-6

#: The stages of a chain from uniforms to a race (see the module docstring).
U, LOG_U, E, LOG_E, G, SCORE, QUOTIENT, DEAD = "u", "log u", "E", "log E", "G", "score", "w / E", "dead"

_NEG = frozenset({"neg", "negative", "__neg__", "neg_", "negative_"})
_LOG = frozenset({"log", "log_"})
_ADD = frozenset({"add", "__add__", "__radd__", "add_", "__iadd__"})
_SUB = frozenset({"sub", "subtract", "__sub__", "sub_", "__isub__", "subtract_"})
_RSUB = frozenset({"rsub", "__rsub__"})
_MUL = frozenset({"mul", "multiply", "__mul__", "__rmul__", "mul_", "__imul__", "multiply_"})
_DIV = frozenset({"div", "divide", "true_divide", "__truediv__", "__itruediv__", "div_", "divide_", "true_divide_"})
_CLAMP = frozenset({"clamp", "clamp_min", "clip", "clamp_", "clamp_min_", "clip_"})


class _Plan(BaseException):
    """Internal: a run met a Gumbel chain ending in argmax/topk on uniforms it had drawn; the tracer runs it again
    with that draw deferred (``key``: the draw's first slot, call, shape and call site)."""

    def __init__(self, key: tuple) -> None:
        super().__init__(key)
        self.key = key


@dataclass(eq=False)
class Draw:
    """One tensor of uniforms followed as a Gumbel noise (deferred: it took no slots, its values are placeholders)."""

    key: tuple
    shape: tuple[int, ...]
    deferred: bool
    resolved: bool = False
    guards: list[float] = field(default_factory=list)
    exp: Any = None  # the Tensor.exponential_ draw E when the chain starts at log E (not at uniforms)


@dataclass(frozen=True)
class Node:
    """A tensor in a chain: its draw, its stage, for a score ``L + c G`` the clean tensor ``L`` (None: 0) and ``c``,
    for ``w / E`` the weights; ``base`` is ``w`` when ``L`` is exactly ``log w``."""

    draw: Draw
    stage: str
    logits: Any = None
    scale: float = 1.0
    base: Any = None


def start(run: _Run, tensor: Any, key: tuple, deferred: bool) -> None:
    """Follow ``tensor`` (uniforms drawn at slot ``key[0]`` by ``key[1]``, or deferred) as a possible Gumbel noise."""
    run.track(run.gumbel, tensor, Node(Draw(key, tuple(tensor.shape), deferred), U))


def _scalar(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, (int, float)):
        return float(x)
    return None


def step(run: _Run, func: Any, name: str, args: tuple, kwargs: dict, clean: Any) -> tuple[str, Any]:
    """Classify one torch call on a tensor of a chain: ``("end", result)`` for the argmax / topk that decides the
    race (for a draw not yet deferred it raises :class:`_Plan`), ``("node", node)`` for a call that continues the
    chain (the caller runs it and calls :func:`follow` on its result), ``("no", None)`` for any other use.
    ``clean(t)``: True for a tensor that holds no uniform."""
    import torch

    nodes = [(i, run.gumbel[id(a)]) for i, a in enumerate(args) if isinstance(a, torch.Tensor) and id(a) in run.gumbel]
    if len(nodes) != 1 or any(isinstance(v, torch.Tensor) and id(v) in run.gumbel for v in kwargs.values()):
        return "no", None
    pos, node = nodes[0]
    others = [a for i, a in enumerate(args) if i != pos]
    stage = node.stage

    def keep(stage_: str, **kw: Any) -> Node:
        return Node(
            node.draw, stage_, kw.get("logits", node.logits), kw.get("scale", node.scale), kw.get("base", node.base)
        )

    def usable(x: Any) -> bool:
        return _scalar(x) is not None or (isinstance(x, torch.Tensor) and clean(x))

    if name == "argmax" and stage in (SCORE, QUOTIENT, G) and pos == 0:
        return "end", _argmax(run, node, args, kwargs)
    if name == "topk" and stage in (SCORE, G) and pos == 0:
        return "end", _topk(run, node, args, kwargs)
    if name in _LOG and not others and not kwargs and stage in (U, E):
        return "node", keep(LOG_U if stage == U else LOG_E)
    if name in _NEG and not others and not kwargs and stage in (LOG_U, LOG_E):
        return "node", keep(E if stage == LOG_U else G)
    if name in _CLAMP and stage in (U, E) and pos == 0:
        lo = kwargs.get("min", others[0] if others else None)
        hi = kwargs.get("max", others[1] if len(others) > 1 else None)
        s = _scalar(lo)
        if hi is None and s is not None and 0 <= s <= MAX_GUARD:
            node.draw.guards.append(s)
            return "node", keep(stage)
        return "no", None
    if name in _ADD and len(others) == 1 and not {k for k in kwargs if k != "alpha"}:
        other, alpha = others[0], kwargs.get("alpha", 1)
        s = _scalar(other)
        if stage in (U, E) and s is not None and 0 <= s * alpha <= MAX_GUARD:
            node.draw.guards.append(s * alpha)
            return "node", keep(stage)
        if stage in (G, SCORE) and alpha == 1 and usable(other):
            add = other if s is None else torch.tensor(s, dtype=torch.float64)
            logits = add if node.logits is None else node.logits + add
            base = None if stage == SCORE or s is not None or node.scale != 1 else run.logs.get(id(other))
            return "node", keep(SCORE, logits=logits, base=base)
        return "no", None
    if name in _SUB and len(others) == 1 and not kwargs:
        other = others[0]
        s = _scalar(other)
        if pos == 1 and stage == LOG_E and usable(other):
            logits = torch.tensor(s, dtype=torch.float64) if s is not None else other
            return "node", keep(
                SCORE, logits=logits, scale=1.0, base=None if s is not None else run.logs.get(id(other))
            )
        if pos == 0 and stage == SCORE and usable(other):
            return "node", keep(SCORE, logits=node.logits - other, base=None)
        return "no", None
    if name in _RSUB and len(others) == 1 and not kwargs and stage == U and _scalar(others[0]) == 1.0:
        return "node", keep(U)  # 1 - u is uniform too
    if name in _MUL and len(others) == 1 and not kwargs:
        s = _scalar(others[0])
        if s == -1.0 and stage in (LOG_U, LOG_E):
            return "node", keep(E if stage == LOG_U else G)
        if s is not None and s > 0 and math.isfinite(s) and stage in (G, SCORE):
            return "node", keep(
                stage, logits=None if node.logits is None else node.logits * s, scale=node.scale * s, base=None
            )
        return "no", None
    if name in _DIV and len(others) == 1 and not kwargs:
        s = _scalar(others[0])
        if pos == 0 and s is not None and s > 0 and math.isfinite(s) and stage in (G, SCORE):
            return "node", keep(
                stage, logits=None if node.logits is None else node.logits / s, scale=node.scale / s, base=None
            )
        if pos == 1 and stage == E and isinstance(others[0], torch.Tensor) and clean(others[0]):
            return "node", keep(QUOTIENT, logits=others[0])  # w / E: the race itself, weights w
    return "no", None


def follow(run: _Run, result: Any, node: Node, name: str) -> None:
    """Record ``result`` (of a call :func:`step` classified as continuing the chain) as the chain's next tensor."""
    import torch

    if not isinstance(result, torch.Tensor):
        return
    if torch.broadcast_shapes(tuple(result.shape), node.draw.shape) != node.draw.shape:
        if node.draw.deferred:
            raise UnmodelledRandomness(
                f"a Gumbel noise drawn with shape {list(node.draw.shape)} is broadcast to {list(result.shape)} by "
                f"{name}: several races would share one noise, which is not modelled"
            )
        return
    run.track(run.gumbel, result, node)


def _dim(args: tuple, kwargs: dict, ndim: int, at: int = 1) -> int | None:
    dim = kwargs.get("dim", args[at] if len(args) > at else None)
    if dim is None:
        return None if ndim != 1 else 0
    return int(dim) % max(ndim, 1)


def _weights(run: _Run, node: Node) -> Any:
    """The race's weights as a float64 tensor of the draw's shape (float64 exp of ``logits / c`` shifted by the row
    maximum; ``w`` when the scores are ``log w``; ``w`` of ``w / E``)."""
    import torch

    shape = node.draw.shape
    if node.stage == QUOTIENT:
        w = torch.broadcast_to(node.logits.detach().to("cpu", torch.float64), shape)
        return w, "w"
    if node.logits is None:
        return torch.ones(shape, dtype=torch.float64), "uniform"
    if node.base is not None and node.scale == 1.0:
        return torch.broadcast_to(node.base.detach().to("cpu", torch.float64), shape), "w"
    logits = torch.broadcast_to(node.logits.detach().to("cpu", torch.float64), shape) / node.scale
    if torch.isnan(logits).any() or (logits == math.inf).any():
        raise UnmodelledRandomness("a Gumbel-max race over scores with a NaN or +inf logit: not modelled")
    top = logits.max(dim=-1, keepdim=True).values
    if (top == -math.inf).any():
        raise UnmodelledRandomness("a Gumbel-max race whose row has only -inf logits: not modelled")
    return torch.exp(logits - top), "exp"


def _rows(run: _Run, node: Node, call: str) -> list[list[Fraction]]:
    if not node.draw.deferred:  # first seen on a run that drew the uniforms: run again with the draw deferred
        raise _Plan(node.draw.key)
    if node.draw.resolved:
        raise UnmodelledRandomness(
            f"a Gumbel noise is ordered twice ({call}): two races sharing one noise are "
            "correlated, which is not modelled; draw a fresh noise for each race"
        )
    node.draw.resolved = True
    if node.draw.exp is not None:
        if node.draw.exp.resolved:
            raise UnmodelledRandomness(
                f"the exponential draw E of a {call} race also decides another race: two races "
                "sharing one noise are correlated, which is not modelled"
            )
        node.draw.exp.resolved = True  # E is used only through this race (any other use of E is refused)
    w, kind = _weights(run, node)
    v = node.draw.shape[-1] if node.draw.shape else 1
    rows = []
    for r, row in enumerate(w.reshape(-1, v).tolist()):
        if any(math.isnan(x) or x < 0 or x == math.inf for x in row):
            raise UnmodelledRandomness(
                f"{call}: race row {r} has a weight that is NaN, negative or +inf "
                f"({'log w with w < 0' if kind == 'w' else 'a NaN score'}): not modelled"
            )
        ws = [Fraction(x) for x in row]
        total = sum(ws, Fraction(0))
        if total == 0:
            raise UnmodelledRandomness(f"{call}: race row {r} has no positive weight (every score -inf): not modelled")
        rows.append(ws)
    run.calls.add(call)
    return rows


def _argmax(run: _Run, node: Node, args: tuple, kwargs: dict) -> Any:
    import torch

    ndim = len(node.draw.shape)
    if ndim == 0 or _dim(args, kwargs, ndim) != ndim - 1:
        raise UnmodelledRandomness(
            "a Gumbel-max (or w / E) race is ordered by argmax over another dimension than "
            "the last, or flattened: only argmax over the last dimension is modelled"
        )
    call = "Gumbel-max"
    out = []
    for ws in _rows(run, node, call):
        total = sum(ws, Fraction(0))
        out.append(_draw_categorical(run, tuple(range(len(ws))), tuple(x / total for x in ws), call))
    shape = node.draw.shape[:-1] + ((1,) if kwargs.get("keepdim", args[2] if len(args) > 2 else False) else ())
    return torch.tensor(out, dtype=torch.int64).reshape(shape)


def _topk(run: _Run, node: Node, args: tuple, kwargs: dict) -> Any:
    import torch

    ndim = len(node.draw.shape)
    k = int(kwargs.get("k", args[1] if len(args) > 1 else 1))
    dim = kwargs.get("dim", args[2] if len(args) > 2 else -1)
    largest = kwargs.get("largest", args[3] if len(args) > 3 else True)
    if ndim == 0 or int(dim) % ndim != ndim - 1 or not largest:
        raise UnmodelledRandomness("Gumbel-top-k: only topk(scores, k, dim=-1, largest=True) is modelled")
    call = "Gumbel-top-k"
    out = []
    for ws in _rows(run, node, call):
        ws = list(ws)
        if k > sum(1 for x in ws if x):
            raise UnmodelledRandomness(
                f"{call}: {k} ids without replacement from {sum(1 for x in ws if x)} with "
                "positive weight: the later ones are decided by ties, not modelled"
            )
        picked = []
        for _ in range(k):
            total = sum(ws, Fraction(0))
            j = _draw_categorical(run, tuple(range(len(ws))), tuple(x / total for x in ws), call)
            picked.append(j)
            ws[j] = Fraction(0)
        out.append(picked)
    indices = torch.tensor(out, dtype=torch.int64).reshape(node.draw.shape[:-1] + (k,))
    values = torch.full(indices.shape, math.nan, dtype=torch.float32)
    run.track(run.gumbel, values, Node(node.draw, DEAD))  # the scores' values are not modelled: any use is refused
    return torch.return_types.topk((values, indices))


def refuse(node: Node, name: str) -> UnmodelledRandomness:
    """The error for another use of a deferred Gumbel noise."""
    what = {DEAD: "the values returned by topk of a Gumbel-top-k race"}.get(
        node.stage, f"the Gumbel noise ({node.stage})"
    )
    return UnmodelledRandomness(
        f"{what} is used by {name}: specproof.trace.tracer models uniforms as a Gumbel noise only in the forms "
        "argmax(l - log(-log u)) / argmax(l + G) with G = -log(-log u), topk(l + G, k), and argmax(w / (-log u)) "
        "over the last dimension (the values are not modelled: the tracer decides the winner)"
    )
