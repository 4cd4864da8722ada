"""PyTorch's random functions under the tracer's control: ``torch.rand``, ``rand_like``, ``Tensor.uniform_``,
``torch.multinomial``, ``torch.randint``, ``Tensor.exponential_`` (as a race), and the calls refused."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Callable

from specproof.trace.core import (
    MAX_CATEGORIES,
    SamplerRaised,
    UnmodelledRandomness,
    _draw_categorical,
    _ExpDraw,
    _fraction_weights,
    _NeedMode,
    _run,
    _uniform_values,
)
from specproof.trace.sources.torch_mode import _mark_raw, _taint, _track_draw


def _grid_bits(dtype: Any, call: str) -> int:
    import torch

    if dtype == torch.float32:
        return 24
    if dtype == torch.float64:
        return 53
    raise UnmodelledRandomness(f"{call} with dtype {dtype}: only the float32 (k/2^24) and float64 (k/2^53) grids "
                               "are modelled")


def _size(args: tuple, kwargs: dict) -> tuple[int, ...]:
    if "size" in kwargs:
        args = (kwargs.pop("size"),)
    if len(args) == 1 and isinstance(args[0], (tuple, list)) or (len(args) == 1 and type(args[0]).__name__ == "Size"):
        args = tuple(args[0])
    return tuple(int(a) for a in args)


def _torch_patches() -> dict[str, Callable]:
    import torch

    def finish(t, out, requires_grad=False):
        if out is not None:
            out.copy_(t)
            return out
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None, requires_grad=False,
             pin_memory=False, names=None, **kw):
        shape = _size(size, kw)
        dtype = dtype or (out.dtype if out is not None else torch.get_default_dtype())
        bits = _grid_bits(dtype, "torch.rand")
        run = _run()
        first = len(run.slots)
        vals = _uniform_values(run, math.prod(shape), bits, "torch.rand")
        t = torch.tensor(vals, dtype=dtype).reshape(shape)
        t = finish(t if device is None else t.to(device), out, requires_grad)
        _taint(run, t, first)
        if out is None:  # an out= buffer may be read through views the mode never sees: bisect it
            _mark_raw(run, t, first)
        return t

    def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        dtype = dtype or input.dtype
        bits = _grid_bits(dtype, "torch.rand_like")
        run = _run()
        first = len(run.slots)
        vals = _uniform_values(run, input.numel(), bits, "torch.rand_like")
        t = torch.tensor(vals, dtype=dtype).reshape(input.shape)
        t = finish(t.to(input.device if device is None else device), None, requires_grad)
        _taint(run, t, first)
        _mark_raw(run, t, first)
        return t

    def uniform_(self, from_=0.0, to=1.0, *, generator=None, **kw):
        if "from" in kw:
            from_ = kw.pop("from")
        bits = _grid_bits(self.dtype, "Tensor.uniform_")
        run = _run()
        first = len(run.slots)
        vals = _uniform_values(run, self.numel(), bits, "Tensor.uniform_")
        # PyTorch's CPU kernel (measured on seeded draws): the bounds in the tensor's dtype, then
        # u * (b - a) + a in double, then rounded to the tensor's dtype
        lo, hi = (torch.tensor(x, dtype=self.dtype).item() for x in (from_, to))
        u = torch.tensor(vals, dtype=torch.float64).reshape(self.shape) * (hi - lo) + lo
        with torch.no_grad():
            self.copy_(u.to(self.dtype))
        _taint(run, self, first)
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
            raise UnmodelledRandomness("Tensor.exponential_ on a 0-dimensional tensor: only races argmax(w / E) "
                                       "over a last dimension are modelled")
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
            raise UnmodelledRandomness(f"the quotient w / E of an exponential race (or E itself) is passed to {call}: "
                                       "only its argmax over the last dimension is modelled")
        rows = input.detach().to("cpu", torch.float64).reshape(-1, input.shape[-1]).tolist()
        result, where = [], []
        for row in rows:
            probs = list(_fraction_weights(row, call))
            if not replacement and num_samples > sum(1 for w in probs if w):
                raise UnmodelledRandomness(f"{call}: {num_samples} samples without replacement from "
                                           f"{sum(1 for w in probs if w)} categories with positive weight")
            drawn = []
            for _ in range(num_samples):
                total = sum(probs, Fraction(0))
                where.append(len(run.slots) if len(run.slots) >= len(run.prefix) else -1)
                j = _draw_categorical(run, tuple(range(len(probs))), tuple(w / total for w in probs), call)
                drawn.append(j)
                if not replacement:
                    probs[j] = Fraction(0)
            result.append(drawn)
        shape = (num_samples,) if input.dim() == 1 else (len(rows), num_samples)
        t = torch.tensor(result, dtype=torch.int64, device=input.device).reshape(shape).clone()
        if out is None and run.pushforward and run.mode is not None and max(where) >= 0:
            _track_draw(run, t, torch.tensor(where, dtype=torch.int64).reshape(shape))
        return finish(t, out)

    def tensor_multinomial(self, num_samples, replacement=False, *, generator=None):
        return multinomial(self, num_samples, replacement)

    def randint(*args, size=None, generator=None, out=None, dtype=None, layout=None, device=None,
                requires_grad=False, pin_memory=False):
        call = "torch.randint"
        if size is None:
            *bounds, size = args
        else:
            bounds = list(args)
        low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
        low, high = int(low), int(high)
        if not 0 < high - low <= MAX_CATEGORIES:
            raise UnmodelledRandomness(f"{call}: range [{low}, {high}) has {high - low} values; 1 to "
                                       f"{MAX_CATEGORIES} are modelled")
        shape = _size((size,), {})
        run = _run()
        values = tuple(range(low, high))
        probs = tuple(Fraction(1, high - low) for _ in values)
        vals = [_draw_categorical(run, values, probs, call) for _ in range(math.prod(shape))]
        t = torch.tensor(vals, dtype=dtype or torch.int64).reshape(shape)
        return finish(t if device is None else t.to(device), out)

    return {"rand": rand, "rand_like": rand_like, "uniform_": uniform_, "multinomial": multinomial,
            "tensor_multinomial": tensor_multinomial, "randint": randint, "exponential_": exponential_}


_TORCH_REFUSED = ("randn", "randn_like", "randint_like", "randperm", "normal", "bernoulli", "poisson",
                  "binomial", "_standard_gamma", "_sample_dirichlet", "rrelu",
                  "manual_seed", "seed", "set_rng_state")  # a sampler that seeds itself is not random
_TENSOR_REFUSED = ("normal_", "bernoulli_", "bernoulli", "geometric_", "cauchy_",
                   "log_normal_", "random_")
