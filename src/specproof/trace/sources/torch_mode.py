"""The torch-function mode of a run: exponential races decided, thresholds read from comparisons,
continuous uses of uniforms named, torch.multinomial draws followed for the pushforward."""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from fractions import Fraction
from typing import Any, NoReturn

from specproof.trace.core import (
    _RACE_HINT,
    EXPONENTIAL_ZERO,
    ContinuousThreshold,
    UncontrolledRandomness,
    UnmodelledRandomness,
    _draw_categorical,
    _ExpDraw,
    _Run,
)
from specproof.trace.sources import gumbel as _gumbel
from specproof.trace.sources import triton_reads as _triton_reads


def _taint(run: _Run, tensor: Any, first_slot: int) -> None:
    """Mark ``tensor`` as holding the uniforms drawn from slot ``first_slot`` on (seen by the mode)."""
    if run.mode is not None and len(run.slots) > first_slot:
        run.track(
            run.taint, tensor, run.taint.get(id(tensor), frozenset()) | frozenset(range(first_slot, len(run.slots)))
        )


def _mark_raw(run: _Run, tensor: Any, first_slot: int) -> None:
    """Mark a tensor of uniforms (0-d or 1-D, element i from slot ``first_slot + i``), watched by the
    mode, as readable: its comparisons with values computed without any uniform give its breakpoints."""
    n = tensor.numel()
    if run.mode is not None and tensor.dim() <= 1 and len(run.slots) == first_slot + n:
        run.track(run.raw, tensor, (first_slot, n))
        run.readable.update(range(first_slot, first_slot + n))


def _track_draw(run: _Run, tensor: Any, where: Any) -> None:
    """Follow a tensor of torch.multinomial draws (``where``: each element's slot, -1 for one inside the prefix)."""
    slots = frozenset(int(x) for x in where.reshape(-1).tolist() if x >= 0)
    run.lazy_slots |= slots
    run.track(run.lazy, tensor, (where, slots, tensor))


#: Calls that only move a tensor's elements (``args[0]``; other arguments are shapes, dims, indices): the
#: result's elements are copies of the input's, at places that do not depend on the values.
_MOVES = frozenset(
    {
        "squeeze",
        "unsqueeze",
        "reshape",
        "view",
        "flatten",
        "ravel",
        "clone",
        "contiguous",
        "detach",
        "__getitem__",
        "narrow",
        "select",
        "movedim",
        "moveaxis",
        "transpose",
        "swapaxes",
        "t",
        "permute",
        "unflatten",
        "flip",
        "unbind",
        "split",
        "chunk",
        "expand",
        "cpu",
        "to",
        "long",
    }
)
#: Calls that concatenate a sequence of tensors (``args[0]``).
_JOINS = frozenset({"cat", "concat", "concatenate", "stack", "hstack", "vstack"})


#: Comparisons whose breakpoints are read (each monotone in the uniform for a fixed other operand).
_ORDER_TESTS = frozenset(
    {"lt", "le", "gt", "ge", "less", "less_equal", "greater", "greater_equal", "__lt__", "__le__", "__gt__", "__ge__"}
)


def _mark_output_opaque(run: _Run, out: Any, depth: int = 0) -> None:
    """A tensor holding uniforms returned by the sampler is used as a value: not readable (a deferred Gumbel noise:
    refused)."""
    if depth == 0 and run.gumbel:
        for d in {id(n.draw): n.draw for n in run.gumbel.values()}.values():
            if d.deferred and not d.resolved:
                raise UnmodelledRandomness(
                    "a tensor of uniforms followed as a Gumbel noise (drawn by "
                    f"{d.key[1]}{f' at {d.key[3]}' if d.key[3] else ''}) was never ordered by argmax or topk on this "
                    "run: specproof.trace.tracer models it only as a race argmax(l + G) / topk(l + G, k)"
                )
    if depth > 4:
        return
    if isinstance(out, (list, tuple)):
        for o in out[:1000]:
            _mark_output_opaque(run, o, depth + 1)
    elif isinstance(out, dict):
        for o in list(out.values())[:1000]:
            _mark_output_opaque(run, o, depth + 1)
    else:
        if depth <= 4 and id(out) in run.gumbel and run.gumbel[id(out)].draw.deferred:
            raise _gumbel.refuse(run.gumbel[id(out)], "the sampler's return value")
        run.make_opaque(out)
        run.torch_used.update(run.taint.get(id(out), ()))  # returned: read by the key, outside the mode


def _read_breakpoints(run: _Run, func: Any, args: tuple, kwargs: dict, raw: tuple[int, int], position: int) -> bool:
    """The grid indices where ``func`` (a comparison, the uniforms at ``position`` of ``args``) changes
    its result, found by evaluating the same torch call on grid values (exact, no run of the sampler).
    One uniform: every element of the result is its; a vector of uniforms: an elementwise comparison,
    element j the uniform j's. False (nothing read) for any other shape."""
    import torch

    first, count = raw
    u = args[position]
    bits = run.slots[first].bits
    n = 1 << bits

    def outcome(k: int) -> tuple:
        probe = torch.full_like(u, k / n)
        new = list(args)
        new[position] = probe
        got = func(*new, **kwargs)
        return tuple(got.reshape(-1).tolist()) if isinstance(got, torch.Tensor) else (bool(got),)

    ends = (outcome(0), outcome(n - 1))
    if count > 1:
        got = func(*args, **kwargs)
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(u.shape):
            return False
    for j in range(len(ends[0])):  # one threshold per element of the result
        found = run.reads.setdefault(first + (j if count > 1 else 0), set())
        if ends[0][j] == ends[1][j]:
            continue
        lo, hi = 0, n - 1  # outcome(lo)[j] == ends[0][j] != outcome(hi)[j]
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if outcome(mid)[j] == ends[0][j]:
                lo = mid
            else:
                hi = mid
        found.add(hi)
    return True


# ------------------------------------------------------------- exponential races, uniforms' uses

_META = frozenset(
    {
        "size",
        "dim",
        "numel",
        "__len__",
        "stride",
        "is_contiguous",
        "is_floating_point",
        "element_size",
        "shape",
        "dtype",
        "device",
        "ndim",
        "requires_grad",
        "is_cuda",
        "layout",
        "names",
        "grad_fn",
        "is_leaf",
        "data_ptr",
        "storage_offset",
        "nelement",
        "ndimension",
        "get_device",
        "__repr__",
        "__format__",
    }
)
#: Pass-through calls that still reveal a tensor's values outside torch (its uniforms become opaque).
_REVEALING = frozenset({"__repr__", "__format__", "data_ptr"})
_DIVISIONS = frozenset(
    {
        "div",
        "div_",
        "divide",
        "divide_",
        "true_divide",
        "true_divide_",
        "__truediv__",
        "__itruediv__",
        "__idiv__",
        "__div__",
    }
)
_RDIVISIONS = frozenset({"__rdiv__", "__rtruediv__"})
#: Multiplications of a weight tensor by E.reciprocal() (vLLM's recovered-token race).
_MULTIPLICATIONS = frozenset({"mul", "multiply", "__mul__", "__rmul__", "mul_", "__imul__", "multiply_"})
_COMPARISONS = frozenset(
    {
        "lt",
        "le",
        "gt",
        "ge",
        "eq",
        "ne",
        "less",
        "less_equal",
        "greater",
        "greater_equal",
        "not_equal",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__eq__",
        "__ne__",
        "searchsorted",
        "bucketize",
        "isclose",
        "lt_",
        "le_",
        "gt_",
        "ge_",
        "eq_",
        "ne_",
    }
)
_DISCRETE = frozenset(
    {
        "floor",
        "ceil",
        "round",
        "trunc",
        "long",
        "int",
        "bool",
        "floor_",
        "ceil_",
        "round_",
        "trunc_",
        "isnan",
        "isinf",
        "isfinite",
        "signbit",
        "sign",
    }
)
_ORDERINGS = frozenset(
    {
        "argmax",
        "argmin",
        "sort",
        "argsort",
        "topk",
        "kthvalue",
        "msort",
        "max",
        "min",
        "median",
        "mode",
        "nanmedian",
        "unique",
        "cummax",
        "cummin",
    }
)


_LOGS = frozenset({"log"})
#: Integer bit-mixing: an xor of integer tensors starts hash-based noise (murmur3, xorshift and Philox all xor); shifts
#: and ands alone do not (a vocabulary bitmask is unpacked with them).
_MIXING = frozenset({"bitwise_xor", "bitwise_xor_", "__xor__", "__rxor__", "__ixor__", "logical_xor"})
#: Where hash-based noise becomes a choice: refused there.
_HASH_FEEDS = frozenset(
    {
        "log",
        "log_",
        "log1p",
        "log1p_",
        "log2",
        "log10",
        "argmax",
        "argmin",
        "topk",
        "sort",
        "argsort",
        "msort",
        "kthvalue",
        "multinomial",
        "searchsorted",
        "bucketize",
        "exponential_",
    }
)


def _user_site() -> str | None:
    """``file:line`` of the innermost frame outside specproof's tracer and torch."""
    import sys
    from types import FrameType

    from specproof.trace.core import TRACE_DIR, module_dir, real_file

    torch_dir = module_dir("torch")
    frame: FrameType | None = sys._getframe(2)
    while frame is not None:
        name = real_file(frame.f_code.co_filename)
        if not name.startswith(TRACE_DIR) and not (torch_dir is not None and name.startswith(torch_dir)):
            return f"{frame.f_code.co_filename}:{frame.f_lineno}"
        frame = frame.f_back
    return None


def _fname(func: Any) -> str:
    """The name of the torch function the mode sees (``shape`` for the ``Tensor.shape`` getter)."""
    name = getattr(func, "__name__", "") or ""
    if name == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", name)
    return name


_NOTHING = object()


def _tensors(args: tuple, kwargs: dict, tensor: type) -> Iterator[Any]:
    """The tensors (instances of ``tensor``, torch.Tensor) among a call's arguments and in its lists and tuples."""
    for a in (*args, *kwargs.values()):
        if isinstance(a, tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from (b for b in a if isinstance(b, tensor))


def _tensors_in(obj: Any, tensor: type, depth: int = 0) -> Iterator[Any]:
    """Every tensor (an instance of ``tensor``, torch.Tensor) in nested arguments (a slice's bounds included)."""
    if isinstance(obj, tensor):
        yield obj
    elif isinstance(obj, slice):
        yield from _tensors_in((obj.start, obj.stop, obj.step), tensor, depth + 1)
    elif depth < 6 and isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o, tensor, depth + 1)
    elif depth < 6 and isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o, tensor, depth + 1)


def _clean(run: _Run, t: Any) -> bool:
    """``t`` holds no uniform and no noise of ``run``."""
    i = id(t)
    return not (
        i in run.taint or i in run.raw or i in run.gumbel or i in run.exp or i in run.quotients or i in run.recips
    )


def _refuse_exp(name: str) -> NoReturn:
    """Refuse a use of an exponential draw E other than the race ``argmax(w / E)`` (``name``: the use)."""
    hint = {
        "log": "; -log(E) is a Gumbel variable: argmax(l - log E) over the last dimension (log E not in place, "
        "once) is traced as the race, or write argmax(w / E)",
        "mul": "; write w / E, or w * E.reciprocal()",
    }.get(name.rstrip("_"), "")
    raise UnmodelledRandomness(
        f"the exponential draw E from Tensor.exponential_ is used by {name}: specproof.trace.tracer models only the "
        "exponential race argmax(w / E, dim=-1) (E divides a weight tensor w once, by w / E, w.div(E), "
        "w.div_(E) or torch.div(w, E), or multiplies it as its reciprocal, w * E.reciprocal(), as vLLM writes "
        f"it; the result is used only by argmax over its last dimension){hint}"
    )


def _resolve(run: _Run, draw: _ExpDraw, w: Any, e: Any) -> None:
    """Decide the races of ``draw`` for the weights ``w`` (``w / e``, ``e`` the tensor E): E's values set so that
    the code's argmax picks each row's winner."""
    import torch

    if draw.resolved:
        raise UnmodelledRandomness(
            "the exponential draw E from Tensor.exponential_ divides a second weight tensor: two races sharing "
            "one noise E are correlated, which specproof.trace.tracer does not model (the rule race-reuse in "
            "specproof.rules.policy computes that law); draw a fresh E for each race"
        )
    if tuple(e.shape) != draw.shape:
        _refuse_exp("a view of E as the divisor")
    if not isinstance(w, torch.Tensor):
        w = torch.tensor(w)
    if torch.broadcast_shapes(tuple(w.shape), draw.shape) != draw.shape:
        raise UnmodelledRandomness(
            f"Tensor.exponential_: w / E broadcasts E of shape {list(draw.shape)} to "
            f"{list(torch.broadcast_shapes(tuple(w.shape), draw.shape))}: several races "
            "would share one noise E, which is not modelled"
        )
    v = draw.shape[-1]
    rows = torch.broadcast_to(w.detach(), draw.shape).reshape(-1, v).to("cpu", torch.float64).tolist()
    fill = torch.full((len(rows), v), float("inf"), dtype=torch.float64)
    for r, row in enumerate(rows):
        fill[r] = _decide_race(run, row, r, fill[r])
    draw.resolved = True
    e.copy_(fill.reshape(draw.shape).to(e.dtype))


@functools.cache
def _race_mode_class() -> Any:
    """The class of :func:`_race_mode`'s modes, built once (on the first traced run: torch is imported then)."""
    import torch

    class _RaceMode(torch.overrides.TorchFunctionMode):
        def __init__(self, run: _Run) -> None:
            super().__init__()
            self.run = run

        def __torch_function__(self, func, types, args=(), kwargs=None):
            run = self.run
            kwargs = kwargs or {}
            if run.kernel_memory:  # uniforms handed to a Triton kernel: a torch call on them other than plumbing
                _triton_reads.used_by_torch(run, _fname(func), _tensors_in((args, kwargs), torch.Tensor))
            if run.lazy:
                held = [t for t in _tensors_in((args, kwargs), torch.Tensor) if id(t) in run.lazy]
                if held:
                    return self.draw_use(func, _fname(func), args, kwargs, held)
            return self.dispatch(func, args, kwargs)

        def draw_use(self, func, name, args, kwargs, held):
            """A call on a tensor holding torch.multinomial draws: a move of its elements (squeeze, indexing with
            values that hold no draw, cat, ...) gives a tensor that holds them too; any other use (a comparison,
            arithmetic, .item(), int(), .tolist(), an index, an in-place write) makes the draws it holds dirty."""
            run = self.run
            slots = frozenset().union(*(run.lazy[id(t)][1] for t in held))
            if name in _META and name not in _REVEALING:
                return self.dispatch(func, args, kwargs)
            maps = None
            if (
                "out" not in kwargs
                and args
                and not any(id(t) in run.lazy for t in _tensors_in((args[1:], kwargs), torch.Tensor))
            ):
                if name in _MOVES and isinstance(args[0], torch.Tensor):

                    def moved():
                        return func(run.lazy[id(args[0])][0], *args[1:], **kwargs)

                    maps = moved
                elif (
                    name in _JOINS
                    and isinstance(args[0], (list, tuple))
                    and all(isinstance(a, torch.Tensor) for a in args[0])
                ):

                    def joined():
                        return func(
                            [
                                run.lazy[id(a)][0] if id(a) in run.lazy else torch.full(a.shape, -1, dtype=torch.int64)
                                for a in args[0]
                            ],
                            *args[1:],
                            **kwargs,
                        )

                    maps = joined
            out = self.dispatch(func, args, kwargs)
            if maps is None:
                run.make_dirty(slots)
                return out
            outs, where = (out, maps()) if isinstance(out, (tuple, list)) else ((out,), (maps(),))
            if len(outs) != len(where) or not all(
                isinstance(o, torch.Tensor) and o.dtype == torch.int64 and tuple(o.shape) == tuple(w.shape)
                for o, w in zip(outs, where)
            ):
                run.make_dirty(slots)
                return out
            source = args[0] if name in _MOVES else None
            for o, w in zip(outs, where):
                kept = frozenset(int(x) for x in w.unique().tolist() if x >= 0)
                if o is source or not kept:  # returned itself (.to, .contiguous), or holds no draw past the prefix
                    continue
                shares = (
                    source is not None
                    and o.numel()
                    and o.untyped_storage().data_ptr() == source.untyped_storage().data_ptr()
                )
                run.track(run.lazy, o, (w, kept, run.lazy[id(source)][2] if shares else o))
            return out

        def dispatch(self, func, args, kwargs):
            run = self.run
            name = _fname(func)
            if name in _MIXING or run.hashed:
                got = self.hash_use(func, name, args, kwargs)
                if got is not _NOTHING:
                    return got
            if (
                name in _LOGS
                and len(args) == 1
                and not kwargs
                and isinstance(args[0], torch.Tensor)
                and _clean(run, args[0])
            ):
                out = self.dispatch_rest(func, args, kwargs, name)
                if isinstance(out, torch.Tensor):  # log w of weights w: a Gumbel race's scores may be these
                    run.track(run.logs, out, args[0])
                return out
            if run.gumbel:
                held = [t for t in _tensors_in((args, kwargs), torch.Tensor) if id(t) in run.gumbel]
                if held:
                    return self.gumbel_use(func, name, args, kwargs, held)
            return self.dispatch_rest(func, args, kwargs, name)

        def hash_use(self, func, name, args, kwargs):
            """Integer bit-mixing followed to where it becomes a choice (a log, an ordering, a float comparison):
            hash-based noise is a function of its integer inputs, not a draw specproof supplies; refused there."""
            run = self.run
            ts = list(_tensors_in((args, kwargs), torch.Tensor))
            held = [t for t in ts if id(t) in run.hashed]
            if not held:
                if name not in _MIXING or not any(
                    not t.is_floating_point() and t.dtype != torch.bool and not t.is_complex() for t in ts
                ):
                    return _NOTHING
                where = _user_site()
            else:
                where = run.hashed[id(held[0])]
                floats = any(t.is_floating_point() for t in ts)
                if (
                    name in _HASH_FEEDS
                    or (name in _COMPARISONS and floats)
                    or (name in ("max", "min") and (len(args) > 1 or "dim" in kwargs))
                ):
                    raise UncontrolledRandomness(
                        f"integer bit-mixing (an xor of integer tensors{f' at {where}' if where else ''}) feeds "
                        f"{name}: the sampler draws hash-based noise (such as vLLM 0.34's Gumbel from a seeded murmur3 "
                        "hash of (seed, position, token)), a function of its integer inputs rather than a draw "
                        "specproof supplies, so the law of its output cannot be traced; no verdict. Draw the noise "
                        "with torch.rand / torch.rand_like / Tensor.exponential_ (traced exactly) to trace it",
                        "hash-based noise (integer bit-mixing)",
                        where,
                    )
            out = self.dispatch_rest(func, args, kwargs, name)
            for o in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(o, torch.Tensor):
                    run.track(run.hashed, o, where)
            if (name.endswith("_") or name.startswith("__i")) and args and isinstance(args[0], torch.Tensor):
                run.track(run.hashed, args[0], where)  # mixed in place
            return out

        def gumbel_use(self, func, name, args, kwargs, held):
            """A call on a tensor followed as a Gumbel noise (:mod:`specproof.trace.sources.gumbel`)."""
            run = self.run
            deferred = any(run.gumbel[id(t)].draw.deferred for t in held)
            if name in _META:
                if deferred and name in _REVEALING:
                    raise _gumbel.refuse(run.gumbel[id(held[0])], name)
                return self.dispatch_rest(func, args, kwargs, name)
            kind, got = _gumbel.step(run, func, name, args, kwargs, lambda t: _clean(run, t))
            if kind == "end":
                return got
            if deferred:
                if kind == "no":
                    raise _gumbel.refuse(run.gumbel[id(held[0])], name)
                out = func(*args, **kwargs)
            else:
                out = self.dispatch_rest(func, args, kwargs, name)
            if kind == "node":
                _gumbel.follow(run, out, got, name)
            return out

        def dispatch_rest(self, func, args, kwargs, name):
            run = self.run
            if not (run.exp or run.taint or run.quotients or run.recips):
                return func(*args, **kwargs)
            ts = list(_tensors(args, kwargs, torch.Tensor))
            if name in _META:
                if name in _REVEALING:  # the values leave torch: the uniforms they hold are not readable
                    for t in ts:
                        run.make_opaque(t)
                return func(*args, **kwargs)
            if any(id(t) in run.exp for t in ts):
                return self.exp_use(func, name, args, kwargs)
            if any(id(t) in run.recips for t in ts):
                return self.recip_use(func, name, args, kwargs)
            if any(id(t) in run.quotients for t in ts):
                return self.quotient_use(func, name, args, kwargs)
            if (
                name == "__getitem__"
                and len(args) == 2
                and isinstance(args[0], torch.Tensor)
                and id(args[0]) in run.raw
                and isinstance(args[1], int)
                and not isinstance(args[1], bool)
            ):
                (first, count), i = run.raw[id(args[0])], args[1]
                out = func(*args, **kwargs)  # one element of a vector of uniforms: itself readable
                if -count <= i < count and isinstance(out, torch.Tensor):
                    run.track(run.raw, out, (first + i % count, 1))
                    run.track(run.taint, out, frozenset({first + i % count}))
                return out
            if any(id(t) in run.raw for t in ts):
                self.raw_use(func, name, args, kwargs, ts)
            marks = [run.taint[id(t)] for t in ts if id(t) in run.taint]
            if not marks:
                return func(*args, **kwargs)
            return self.tainted_use(func, name, args, kwargs, ts, marks)

        def exp_use(self, func, name, args, kwargs):
            run = self.run
            first = args[0] if args else None
            if (
                name == "reciprocal"
                and len(args) == 1
                and not kwargs
                and isinstance(first, torch.Tensor)
                and id(first) in run.exp
                and not run.exp[id(first)].resolved
                and id(first) not in run.exp[id(first)].views
            ):  # vLLM's inv_q = q.reciprocal(): the race waits for w * inv_q
                out = func(*args, **kwargs)
                run.track(run.recips, out, (run.exp[id(first)], first))
                return out
            if (
                name in _gumbel._LOG
                and len(args) == 1
                and not kwargs
                and isinstance(first, torch.Tensor)
                and id(first) in run.exp
                and not run.exp[id(first)].resolved
                and id(first) not in run.exp[id(first)].views
                and not name.endswith("_")
            ):  # log E: -log E is a Gumbel variable
                out = func(*args, **kwargs)
                draw = run.exp[id(first)]
                run.track(
                    run.gumbel,
                    out,
                    _gumbel.Node(_gumbel.Draw(("exponential", id(draw)), draw.shape, True, exp=draw), _gumbel.LOG_E),
                )
                return out
            if name in _DIVISIONS and len(args) >= 2:
                w, e = args[0], args[1]
            elif name in _RDIVISIONS and len(args) >= 2:
                e, w = args[0], args[1]
            else:
                w = e = None
            first = args[0] if args else None
            if name == "__getitem__" and isinstance(first, torch.Tensor) and id(first) in run.exp:
                draw = run.exp[id(first)]
                if not draw.resolved:  # a row of E, to be drawn again (engines pass a generator per request)
                    out = func(*args, **kwargs)
                    draw.views.add(id(out))
                    run.track(run.exp, out, draw)
                    return out
            if (
                e is None
                or not isinstance(e, torch.Tensor)
                or id(e) not in run.exp
                or (isinstance(w, torch.Tensor) and id(w) in run.exp)
                or kwargs.get("rounding_mode") is not None
            ):
                _refuse_exp(name)
            draw = run.exp[id(e)]
            if id(e) in draw.views:
                _refuse_exp("a view of E as the divisor")
            _resolve(run, draw, w, e)
            out = func(*args, **kwargs)
            if isinstance(out, torch.Tensor):
                run.track(run.quotients, out, len(draw.shape))
            return out

        def recip_use(self, func, name, args, kwargs):
            """A use of R = E.reciprocal(): only ``w * R`` (or ``R * w``), once, decides the race (as ``w / E``)."""
            run = self.run
            tensors_args = [a for a in args if isinstance(a, torch.Tensor) and id(a) in run.recips]
            if name in _MULTIPLICATIONS and len(args) == 2 and len(tensors_args) == 1 and not kwargs:
                r = tensors_args[0]
                w = args[1] if args[0] is r else args[0]
                if not (isinstance(w, torch.Tensor) and (id(w) in run.exp or id(w) in run.recips)):
                    draw, e = run.recips[id(r)]
                    if name.endswith("_") and args[0] is r:
                        _refuse_exp(f"{name} written into E.reciprocal()")
                    _resolve(run, draw, w, e)  # E set to decide the race; R set to match (1 / E, exactly as the code)
                    with torch.no_grad():
                        r.copy_(e.reciprocal())
                    out = func(*args, **kwargs)
                    if isinstance(out, torch.Tensor):
                        run.track(run.quotients, out, len(draw.shape))
                    return out
            if name in _INTERPRETER_PLUMBING and len(tensors_args) == 1 and _interpreting():
                # E.reciprocal() handed to a Triton kernel (vLLM V1's sample_recovered_tokens_kernel): its elements are
                # tagged, and the interpreter's w * inv_E decides the race (specproof.trace.sources.triton_race)
                if name in ("untyped_storage", "data_ptr"):
                    from specproof.trace.sources import triton_race

                    draw, e = run.recips[id(tensors_args[0])]
                    triton_race.hand_over(run, tensors_args[0], draw, e)
                return func(*args, **kwargs)
            _refuse_exp(f"{name} (on E.reciprocal())")

        def raw_use(self, func, name, args, kwargs, ts):
            """Read the breakpoints of a comparison of one raw uniform with a value that depends on no
            uniform; any other use makes the uniforms it touches opaque (found by bisection instead)."""
            run = self.run
            raws = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor) and id(a) in run.raw]
            others = [a for i, a in enumerate(args) if i not in raws]
            clean = all(
                not (isinstance(a, torch.Tensor) and (id(a) in run.taint or id(a) in run.raw))
                for a in (*others, *kwargs.values())
            )
            if (
                name in _ORDER_TESTS
                and len(args) == 2
                and len(raws) == 1
                and clean
                and not kwargs
                and _read_breakpoints(run, func, args, kwargs, run.raw[id(args[raws[0]])], raws[0])
            ):
                return
            for t in ts:
                run.make_opaque(t)

        def quotient_use(self, func, name, args, kwargs):
            run = self.run
            if name == "argmax" and args and id(args[0]) in run.quotients:
                ndim = run.quotients[id(args[0])]
                dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
                if (dim is None and ndim == 1) or (dim is not None and int(dim) % ndim == ndim - 1):
                    return func(*args, **kwargs)
            raise UnmodelledRandomness(
                f"the quotient w / E of an exponential race is used by {name}: specproof.trace.tracer models only its "
                "argmax over the last dimension (one race per row); its values are not modelled (the tracer sets E "
                "to decide the winner)"
            )

        def tainted_use(self, func, name, args, kwargs, ts, marks):
            run = self.run
            joint = frozenset().union(*marks)
            if name in _COMPARISONS:
                if len(marks) >= 2 and len(joint) >= 2:
                    raise ContinuousThreshold(
                        f"{name} compares two values computed from different uniforms (slots "
                        f"{_slots(joint)}): the threshold of the later uniform depends continuously on the earlier "
                        "one (e.g. u2 < f(u1), or a race between uniforms), so the trace's bisection would never "
                        "end. Compare a uniform with thresholds computed from the rows only"
                    )
                return func(*args, **kwargs)
            if (
                name in _ORDERINGS
                and args
                and id(args[0]) in run.taint
                and len(run.taint[id(args[0])]) >= 2
                and (name not in ("max", "min", "median", "nanmedian") or len(args) > 1 or "dim" in kwargs)
            ):
                raise ContinuousThreshold(
                    f"{name} orders values computed from {len(run.taint[id(args[0])])} different uniforms (Gumbel-max "
                    "on uniforms, argmax(log w - log(-log u)), or another race between uniforms): which one wins "
                    "depends on every uniform at once, a threshold that moves continuously with each, and the "
                    f"trace's bisection would never end; {_RACE_HINT}"
                )
            out = func(*args, **kwargs)
            if name in _DISCRETE or name in _COMPARISONS or name in _ORDERINGS:
                return out
            outs = out if isinstance(out, (tuple, list)) else (out,)
            for o in outs:
                if isinstance(o, torch.Tensor):
                    run.track(run.taint, o, run.taint.get(id(o), frozenset()) | joint)
            if (name.endswith("_") and not name.startswith("__")) or name in ("__setitem__", "copy_"):
                if args and isinstance(args[0], torch.Tensor):  # written in place
                    run.track(run.taint, args[0], run.taint.get(id(args[0]), frozenset()) | joint)
            return out

    return _RaceMode


def _race_mode(run: _Run) -> Any:
    """A TorchFunctionMode that decides exponential races and names continuous uses of uniforms."""
    return _race_mode_class()(run)


#: What the Triton interpreter does with a tensor argument before a kernel reads its memory.
_INTERPRETER_PLUMBING = frozenset(
    {
        "untyped_storage",
        "data_ptr",
        "new_empty",
        "storage_offset",
        "stride",
        "size",
        "is_contiguous",
        "element_size",
        "numel",
        "dim",
    }
)


def _interpreting() -> bool:
    """Triton's interpreter is imported and on (``TRITON_INTERPRET=1``)."""
    import os
    import sys

    return os.environ.get("TRITON_INTERPRET") == "1" and "triton.runtime.interpreter" in sys.modules


def _slots(s: frozenset[int]) -> str:
    items = sorted(s)
    return ", ".join(f"#{i}" for i in items[:4]) + (", ..." if len(items) > 4 else "")


def _decide_race(run: _Run, row: list[float], r: int, fill: Any) -> Any:
    """Decide one race ``argmax_i w_i / E_i``; return the E row that makes the code compute that winner."""
    decided = any(math.isnan(x) or x == math.inf for x in row)  # a NaN or +inf wins whatever E is
    if decided or max(row) <= 0:
        if max(row) < 0 and not any(math.isnan(x) for x in row):
            raise UnmodelledRandomness(
                f"Tensor.exponential_: race row {r} has only negative weights, a race whose law is not w / sum(w); "
                "not modelled"
            )
        if decided or not run.exponential_zeros or max(row) < 0:
            fill[:] = 1.0  # the argmax does not depend on E
            return fill
    call = "Tensor.exponential_"
    minus_inf = [i for i, x in enumerate(row) if x == -math.inf]

    def winner(z: int) -> Any:  # E = -0.0 at z, +inf elsewhere (1 at a -inf weight: -inf / inf would be NaN)
        fill[:] = math.inf
        for i in minus_inf:
            fill[i] = 1.0
        fill[z] = -0.0
        return fill

    if run.exponential_zeros:
        # PyTorch's kernel gives E_i = -0.0 with probability 2^-53 per element. At a zero weight w_i / E_i is NaN,
        # and argmax returns the first NaN: the first zero-weight id with E = -0.0 wins whatever else holds. Else, at
        # a -inf weight -inf / -0.0 = +inf: the first such id with E = -0.0 wins (pytorch #192577 with a -inf weight)
        eps = EXPONENTIAL_ZERO
        for ids in ([i for i, x in enumerate(row) if x == 0], minus_inf):
            if ids:
                probs = [(1 - eps) ** len(ids)] + [eps * (1 - eps) ** k for k in range(len(ids))]
                z = _draw_categorical(run, (None, *ids), tuple(probs), call)
                if z is not None:
                    return winner(z)
    if max(row) <= 0:  # zeros and -infs only, no E = -0.0 drawn: 0 / E = 0 wins, the code's argmax decides
        fill[:] = 1.0
        return fill
    weights = [Fraction(x) if x > 0 else Fraction(0) for x in row]
    total = sum(weights, Fraction(0))
    j = _draw_categorical(run, tuple(range(len(row))), tuple(x / total for x in weights), call)
    fill[:] = math.inf
    fill[j] = 1.0
    for i in minus_inf:  # -inf / inf would be NaN; -inf / 1 = -inf loses, as it does in the code
        fill[i] = 1.0
    return fill
