"""specproof.trace.tracer: a last torch.multinomial draw pushed forward from one run (issue 22, item 4).

Every traced law here is compared with ``==`` to the same trace with ``pushforward=False`` (one run per
category, the tracer before) and, where it is short, to the law written by hand. A sampler that branches
on, converts, indexes with or computes with the draw must fall back to enumeration (no pushforward note,
the same runs); one that only moves it into its output gets the law from one run and a check run.
"""

from __future__ import annotations

from fractions import Fraction as F
from types import SimpleNamespace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from specproof.trace.tracer import trace  # noqa: E402

W = torch.tensor([0.5, 0.25, 0.25])
W4 = torch.tensor([0.125, 0.0, 0.375, 0.5])


def pushed(result) -> bool:
    return any(a.startswith("pushforward: at") and "read from that one run" in a for a in result.assumptions)


def both(sampler, *args, **kwargs):
    """The trace with the pushforward and the trace without it; their laws must be equal."""
    fast = trace(sampler, args, **kwargs)
    slow = trace(sampler, args, pushforward=False, **kwargs)
    assert fast.law == slow.law
    assert not pushed(slow)
    return fast, slow


def test_a_draw_returned_directly_is_read_from_one_run():
    fast, slow = both(lambda: torch.multinomial(W, 1))
    assert fast.law == {(0,): F(1, 2), (1,): F(1, 4), (2,): F(1, 4)}
    assert pushed(fast) and "at 1 prefix " in next(a for a in fast.assumptions if a.startswith("pushforward:"))
    assert fast.runs == 2 and slow.runs == 3  # the run, and the check run at the last category


def test_a_draw_the_sampler_branches_on_is_enumerated():
    def branch():
        t = torch.multinomial(W, 1)
        if t == 1:  # Tensor.__eq__ then __bool__: the draw's value decides the path
            return torch.tensor([7])
        return t

    fast, slow = both(branch)
    assert fast.law == {(0,): F(1, 2), (7,): F(1, 4), (2,): F(1, 4)}
    assert not pushed(fast) and fast.runs == slow.runs == 3


@pytest.mark.parametrize(
    "use",
    [
        lambda t: int(t),  # converted
        lambda t: t.item(),
        lambda t: tuple(t.tolist()),
        lambda t: torch.tensor([10, 20, 30])[t],  # used as an index
        lambda t: t + 1,  # arithmetic
        lambda t: t.float(),  # another dtype
        lambda t: torch.where(t > 0, t, 5),
        lambda t: torch.zeros(3, dtype=torch.int64).index_fill_(0, t, 1),
    ],
    ids=["int", "item", "tolist", "index", "add", "float", "where", "index_fill"],
)
def test_a_draw_used_as_a_value_is_enumerated(use):
    fast, slow = both(lambda: use(torch.multinomial(W, 1)))
    assert not pushed(fast) and fast.runs == slow.runs == 3


def test_an_in_place_write_of_the_draw_is_enumerated():
    def write_into_a_view():  # buf's elements change through a view the draw is copied into
        buf = torch.zeros(3, dtype=torch.int64)
        buf[1:2].copy_(torch.multinomial(W, 1))
        return buf

    def setitem():
        buf = torch.full((2,), 9, dtype=torch.int64)
        buf[0] = torch.multinomial(W, 1)
        return buf

    for f in (write_into_a_view, setitem):
        fast, _ = both(f)
        assert not pushed(fast)
    assert trace(setitem).law == {(0, 9): F(1, 2), (1, 9): F(1, 4), (2, 9): F(1, 4)}


def test_moves_into_the_output_are_followed():
    def moved():  # as transformers' _speculative_sampling builds its tokens
        t = torch.multinomial(W4[None, :], num_samples=1).squeeze(1)[None, :]
        head = torch.tensor([[3, 1]])
        return torch.cat((head[:, :1], t, head.flip(-1)), dim=-1).reshape(-1)

    fast, slow = both(moved)
    assert fast.law == {(3, 0, 1, 3): F(1, 8), (3, 2, 1, 3): F(3, 8), (3, 3, 1, 3): F(1, 2)}
    assert pushed(fast) and fast.runs == 2 and slow.runs == 3

    def stacked():  # a view (expand), a copy (clone) and a stack of both, inside a tuple
        t = torch.multinomial(W, 1)
        return torch.stack([t.expand(2), t.clone().expand(2)]), t.expand(3)

    fast, _ = both(stacked)
    assert pushed(fast) and fast.law[(((2, 2), (2, 2)), (2, 2, 2))] == F(1, 4)


def test_an_output_held_in_an_object_and_a_key_see_every_category():
    def boxed():
        return SimpleNamespace(token=torch.multinomial(W4, 1), note="x")

    fast, _ = both(boxed, key=lambda o: (int(o.token) * 10, o.note))
    assert fast.law == {(0, "x"): F(1, 8), (20, "x"): F(3, 8), (30, "x"): F(1, 2)} and pushed(fast)
    # a key that branches on the value is fine: it is evaluated on each category's output
    fast, _ = both(lambda: torch.multinomial(W4, 1), key=lambda t: "big" if int(t) >= 2 else "small")
    assert fast.law == {"small": F(1, 8), "big": F(7, 8)} and pushed(fast)


def test_only_the_last_draw_is_pushed_forward():
    def two_draws():
        a = torch.multinomial(W, 1)
        b = torch.multinomial(W4, 1)
        return torch.cat([a, b])

    fast, slow = both(two_draws)
    assert fast.law == {
        (i, j): W_i * W4_j
        for i, W_i in enumerate((F(1, 2), F(1, 4), F(1, 4)))
        for j, W4_j in enumerate((F(1, 8), F(0), F(3, 8), F(1, 2)))
        if W4_j
    }
    assert pushed(fast) and fast.runs < slow.runs  # the first draw enumerated (3), the second read (+ checks)

    def draw_then_coin():  # the draw is not the last random request: enumerated
        t = torch.multinomial(W, 1)
        return torch.cat([t, (torch.rand(1) < 0.5).long()])

    fast, _ = both(draw_then_coin)
    assert not pushed(fast) and fast.law[(1, 1)] == F(1, 8)


def test_without_replacement_the_later_draw_is_pushed_forward_with_its_own_weights():
    fast, slow = both(lambda: torch.multinomial(W, 2))
    assert fast.law == {
        (0, 1): F(1, 4),
        (0, 2): F(1, 4),
        (1, 0): F(1, 6),
        (1, 2): F(1, 12),
        (2, 0): F(1, 6),
        (2, 1): F(1, 12),
    }
    assert pushed(fast)


def test_a_hidden_use_is_caught_by_the_check_run():
    # DLPack hands the draw's memory to a new tensor that the function mode does not follow: the run at the
    # default category (0) returns the draw, the check run at category 2 shows the branch, so it is enumerated
    def hidden():
        t = torch.multinomial(W, 1)
        alias = torch.utils.dlpack.from_dlpack(torch.utils.dlpack.to_dlpack(t))
        if int(alias) == 2:
            return torch.tensor([9])
        return t

    fast, slow = both(hidden)
    assert fast.law == {(0,): F(1, 2), (1,): F(1, 4), (9,): F(1, 4)}
    note = next(a for a in fast.assumptions if a.startswith("pushforward:"))
    assert "at 1 prefix the check run disagreed and every category was run" in note and fast.runs == slow.runs


def test_aliases_are_written_through_the_tensor_that_owns_their_memory():
    # expand, then detach: elements that share one memory location, in a tensor with no _base; writing the
    # draw's own result writes them (writing them directly would write one location twice)
    fast, slow = both(lambda: torch.multinomial(W, 1).expand(2).detach())
    assert fast.law == {(0, 0): F(1, 2), (1, 1): F(1, 4), (2, 2): F(1, 4)} and pushed(fast)


def test_transformers_laws_are_unchanged_on_random_logits():
    pytest.importorskip("transformers")
    from specproof.trace.adapters.transformers import speculative_sampling_law

    rng = np.random.default_rng(7)
    for v, gamma in ((6, 1), (3, 2)):
        target = (rng.normal(size=(gamma + 1, v)) * 2).astype(np.float32).tolist()
        draft = (rng.normal(size=(gamma, v)) * 2).astype(np.float32).tolist()
        fast = speculative_sampling_law(target, draft)
        slow = speculative_sampling_law(target, draft, pushforward=False)
        assert fast.law == slow.law and fast.tv == slow.tv and fast.runs < slow.runs
        assert any(a.startswith("pushforward:") for a in fast.assumptions)
