"""PyTorch's random functions under the tracer's control: ``torch.rand``, ``rand_like``, ``Tensor.uniform_``,
``torch.multinomial``, ``torch.randint``, ``Tensor.exponential_`` (as a race), and the calls refused."""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from specproof.trace.core import (
    MAX_CATEGORIES,
    SamplerRaised,
    UnmodelledRandomness,
    _call_site,
    _draw_categorical,
    _ExpDraw,
    _fraction_weights,
    _NeedMode,
    _refuser,
    _run,
    _uniform_values,
)
from specproof.trace.sources import gumbel as _gumbel
from specproof.trace.sources import triton_reads
from specproof.trace.sources.base import Patcher, Source
from specproof.trace.sources.torch_mode import _mark_raw, _taint, _track_draw


def _deferred(run: Any, shape: tuple, call: str) -> tuple[bool, Any]:
    """(deferred?, the draw's key) for a tensor of uniforms the mode may follow as a Gumbel noise."""
    if run.mode is None:
        return False, None
    key = (len(run.slots), call, tuple(shape), _call_site(3))
    return key in run.gumbel_plans, key


def _grid_bits(dtype: Any, call: str) -> int:
    import torch

    if dtype == torch.float32:
        return 24
    if dtype == torch.float64:
        return 53
    raise UnmodelledRandomness(
        f"{call} with dtype {dtype}: only the float32 (k/2^24) and float64 (k/2^53) grids are modelled"
    )


def _size(args: tuple, kwargs: dict) -> tuple[int, ...]:
    if "size" in kwargs:
        args = (kwargs.pop("size"),)
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or (len(args) == 1 and type(args[0]).__name__ == "Size"):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _finish(t: Any, out: Any, requires_grad: bool = False) -> Any:
    """The call's result: copied into its ``out=`` tensor when one is given, else ``t`` (requiring grad if asked)."""
    if out is not None:
        out.copy_(t)
        return out
    if requires_grad:
        t.requires_grad_(True)
    return t


def _multinomial_row(run: Any, row: list[float], num_samples: int, replacement: bool, call: str, where: list) -> list:
    """One row of ``torch.multinomial`` drawn: ``num_samples`` categories by the row's exact weights (without
    replacement, each drawn category's weight set to 0 and the rest renormalized); appends each draw's slot to
    ``where`` (-1 for a draw replayed from the run's prefix)."""
    probs = list(_fraction_weights(row, call))
    if not replacement and num_samples > sum(1 for w in probs if w):
        raise UnmodelledRandomness(
            f"{call}: {num_samples} samples without replacement from "
            f"{sum(1 for w in probs if w)} categories with positive weight"
        )
    drawn = []
    for k in range(num_samples):
        if k == 0:  # _fraction_weights' row sums to 1 exactly
            norm = tuple(probs)
        elif not replacement:  # the rest of the row, renormalized
            total = sum(probs, Fraction(0))
            norm = tuple(w / total for w in probs)
        where.append(len(run.slots) if len(run.slots) >= len(run.prefix) else -1)
        j = _draw_categorical(run, tuple(range(len(probs))), norm, call)
        drawn.append(j)
        if not replacement:
            probs[j] = Fraction(0)
    return drawn


def _torch_patches() -> dict[str, Callable]:
    import torch

    def rand(
        *size,
        generator=None,
        out=None,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        pin_memory=False,
        names=None,
        **kw,
    ):
        shape = _size(size, kw)
        dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
        bits = _grid_bits(dtype, "torch.rand")
        run = _run()
        first = len(run.slots)
        deferred, key = _deferred(run, shape, "torch.rand")
        vals = [0.5] * math.prod(shape) if deferred else _uniform_values(run, math.prod(shape), bits, "torch.rand")
        t = torch.tensor(vals, dtype=dtype).reshape(shape)
        t = _finish(t if device is None else t.to(device), out, requires_grad)
        if key is not None and out is None:
            _gumbel.start(run, t, key, deferred)
        if deferred:
            return t
        _taint(run, t, first)
        if out is None:  # an out= buffer may be read through views the mode never sees: bisect it
            _mark_raw(run, t, first)
            triton_reads.watch(run, t, first)  # under Triton's interpreter: which of them a kernel loads
        return t

    def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        dtype = dtype or input.dtype
        bits = _grid_bits(dtype, "torch.rand_like")
        run = _run()
        first = len(run.slots)
        deferred, key = _deferred(run, tuple(input.shape), "torch.rand_like")
        vals = [0.5] * input.numel() if deferred else _uniform_values(run, input.numel(), bits, "torch.rand_like")
        t = torch.tensor(vals, dtype=dtype).reshape(input.shape)
        t = _finish(t.to(input.device if device is None else device), None, requires_grad)
        if key is not None:
            _gumbel.start(run, t, key, deferred)
        if deferred:
            return t
        _taint(run, t, first)
        _mark_raw(run, t, first)
        triton_reads.watch(run, t, first)
        return t

    def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
        if "from" in kw:
            from_ = kw.pop("from")
        bits = _grid_bits(self.dtype, "Tensor.uniform_")
        run = _run()
        first = len(run.slots)
        deferred, key = _deferred(run, tuple(self.shape), "Tensor.uniform_") if (from_, to) == (0, 1) else (False, None)
        if deferred:
            with torch.no_grad():
                self.fill_(0.5)
            _gumbel.start(run, self, key, True)
            return self
        vals = _uniform_values(run, self.numel(), bits, "Tensor.uniform_")
        # PyTorch's CPU kernel (measured on seeded draws): the bounds in the tensor's dtype, then
        # u * (b - a) + a in double, then rounded to the tensor's dtype
        lo, hi = (torch.tensor(x, dtype=self.dtype).item() for x in (from_, to))
        u = torch.tensor(vals, dtype=torch.float64).reshape(self.shape) * (hi - lo) + lo
        with torch.no_grad():
            self.copy_(u.to(self.dtype))
        _taint(run, self, first)
        if key is not None:
            _gumbel.start(run, self, key, False)
        return self

    def exponential_(self, lambd=1.0, *, generator=None):
        run = _run()
        run.calls.add("Tensor.exponential_")
        if run.mode is None:
            raise _NeedMode()
        if not float(lambd) > 0:
            raise SamplerRaised(f"Tensor.exponential_: lambd is {lambd!r}, not > 0, on which the real call raises")
        if not self.is_floating_point():
            raise SamplerRaised(f"Tensor.exponential_ on a {self.dtype} tensor (the real call raises)")
        held = run.exp.get(id(self))
        if held is not None and not held.resolved:  # drawn again (a row redrawn with its own generator): same law
            return self
        if self.dim() == 0:
            raise UnmodelledRandomness(
                "Tensor.exponential_ on a 0-dimensional tensor: only races argmax(w / E) "
                "over a last dimension are modelled"
            )
        with torch.no_grad():
            self.fill_(float("nan"))  # no value is decided until the division w / E is seen
        run.track(run.exp, self, _ExpDraw(tuple(self.shape)))
        return self

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        call = "torch.multinomial"
        if input.dim() not in (1, 2):
            raise UnmodelledRandomness(f"{call}: input has {input.dim()} dimensions, not 1 or 2")
        run = _run()
        if id(input) in run.quotients or id(input) in run.exp:
            raise UnmodelledRandomness(
                f"the quotient w / E of an exponential race (or E itself) is passed to {call}: "
                "only its argmax over the last dimension is modelled"
            )
        rows = input.detach().to("cpu", torch.float64).reshape(-1, input.shape[-1]).tolist()
        result, where = [], []
        for row in rows:
            result.append(_multinomial_row(run, row, num_samples, replacement, call, where))
        shape = (num_samples,) if input.dim() == 1 else (len(rows), num_samples)
        t = torch.tensor(result, dtype=torch.int64, device=input.device).reshape(shape).clone()
        if out is None and run.pushforward and run.mode is not None and max(where) >= 0:
            _track_draw(run, t, torch.tensor(where, dtype=torch.int64).reshape(shape))
        return _finish(t, out)

    def tensor_multinomial(self, num_samples, replacement=False, *, generator=None):
        return multinomial(self, num_samples, replacement)

    def randint(
        *args,
        size=None,
        generator=None,
        out=None,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        pin_memory=False,
    ):
        call = "torch.randint"
        if size is None:
            *bounds, size = args
        else:
            bounds = list(args)
        low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
        low, high = int(low), int(high)
        if not 0 < high - low <= MAX_CATEGORIES:
            raise UnmodelledRandomness(
                f"{call}: range [{low}, {high}) has {high - low} values; 1 to {MAX_CATEGORIES} are modelled"
            )
        shape = _size((size,), {})
        run = _run()
        values = tuple(range(low, high))
        probs = tuple(Fraction(1, high - low) for _ in values)
        vals = [_draw_categorical(run, values, probs, call) for _ in range(math.prod(shape))]
        t = torch.tensor(vals, dtype=dtype or torch.int64).reshape(shape)
        return _finish(t if device is None else t.to(device), out)

    return {
        "rand": rand,
        "rand_like": rand_like,
        "uniform_": uniform_,
        "multinomial": multinomial,
        "tensor_multinomial": tensor_multinomial,
        "randint": randint,
        "exponential_": exponential_,
    }


_TORCH_REFUSED = (
    "randn",
    "randn_like",
    "randint_like",
    "randperm",
    "normal",
    "bernoulli",
    "poisson",
    "binomial",
    "_standard_gamma",
    "_sample_dirichlet",
    "rrelu",
    "manual_seed",
    "seed",
    "set_rng_state",
)  # a sampler that seeds itself is not random
_TENSOR_REFUSED = ("normal_", "bernoulli_", "bernoulli", "geometric_", "cauchy_", "log_normal_", "random_")


class TorchSource(Source):
    """PyTorch: ``torch.rand``, ``rand_like``, ``Tensor.uniform_``, ``torch.multinomial``, ``torch.randint`` and
    ``Tensor.exponential_`` (as a race) modelled; the other random functions and tensor methods refused; PyTorch's
    default generator watched."""

    name = "torch"
    module = "torch"
    assumptions = {
        "torch.rand": "torch.rand: each element k/2^24 (float32) or k/2^53 (float64), k uniform on the grid",
        "torch.rand_like": "torch.rand_like: each element k/2^24 (float32) or k/2^53 (float64), k uniform on the grid",
        "Tensor.uniform_": "Tensor.uniform_(a, b): the bounds in the tensor's dtype, u (b - a) + a in double with u = "
        "k/2^24 (float32) or k/2^53 (float64), rounded to the tensor's dtype (PyTorch's CPU kernel)",
        "torch.multinomial": "torch.multinomial: an exact categorical over the float weights as given (Fraction(w_i) "
        "/ sum); PyTorch's own sampling kernel (a float exponential race) is not traced",
        "torch.randint": "torch.randint: each element exactly uniform over [low, high); PyTorch's CPU kernel takes a "
        "random 32- or 64-bit integer modulo the range, off from uniform by at most range / 2^32 "
        "(not modelled)",
        "Tensor.exponential_": "Tensor.exponential_, traced only as the race argmax(w / E, dim=-1) (or argmax(w * "
        "E.reciprocal()), vLLM V1's form): IDEALIZED: E_i "
        "i.i.d. exact Exp(lambda), the division and the argmax exact, so row r's winner is i with "
        "probability w_i / sum_j w_j over its positive finite float weights (ties have probability "
        "0; zero and negative weights never win); a row with a NaN or +inf weight or no positive "
        "weight is decided by the code's own argmax (it does not depend on E). PyTorch's CPU kernel "
        "is not traced: it computes E = -(1/lambda) log(1 - u) in double, u = k/2^53, a discrete "
        "E that is -0.0 at k = 0 (probability 2^-53 per element, pytorch issues #22557, #192577), "
        "where w_i / E_i is NaN at a zero weight and argmax returns that zero-weight id: with "
        "exponential_zeros=False (the default) that edge is NOT in this law",
        "Gumbel-max": "Gumbel-max, argmax(l + G) with G = -log(-log u) on uniforms (or argmax(w / (-log u)), or "
        "argmax(l - log E) with E from Tensor.exponential_), over "
        "the last dimension (specproof.trace.sources.gumbel): IDEALIZED as the exponential race it is: "
        "u continuous, the logs, the sum and the argmax exact, so row r's winner is i with probability "
        "w_i / sum_j w_j, where w = exp(l / c - max) in float64 (relative error below 2^-52) for "
        "scores l + c G, w itself where the scores are log w of a tensor w, and w of w / (-log u); the "
        "float grid of u (PyTorch's k/2^24) and guards clamp(min=eps), u + eps with eps <= 1e-6 are not "
        "in this law",
        "Gumbel-top-k": "Gumbel-top-k on uniforms, topk(l + G, k) over the last dimension: IDEALIZED as Gumbel-max "
        "above, so the k ids are drawn without replacement, each in turn with probability proportional "
        "to the weights left (Plackett-Luce); the values topk returns are not modelled",
    }

    def install(self, patcher: Patcher) -> None:
        import torch

        # tiny tensors: one intra-op thread (measured: softmax of a [1, 3, 16] tensor took ~13 ms with
        # the default thread pool on a shared 2-core machine, ~10 us with one thread); restored at exit
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        patcher.at_exit(lambda: torch.set_num_threads(threads))
        fns = _torch_patches()
        for name in ("rand", "rand_like", "multinomial", "randint"):
            patcher.set(torch, name, fns[name])
        patcher.set(torch.Tensor, "uniform_", fns["uniform_"])
        patcher.set(torch.Tensor, "multinomial", fns["tensor_multinomial"])
        for name in _TORCH_REFUSED:
            patcher.set(torch, name, _refuser(f"torch.{name}"))
        patcher.set(torch.Tensor, "exponential_", fns["exponential_"])
        for name in _TENSOR_REFUSED:
            patcher.set(torch.Tensor, name, _refuser(f"Tensor.{name}"))

    def state(self) -> bytes:
        return bytes(sys.modules["torch"].default_generator.get_state().numpy())
