"""A trace that cannot finish is refused after its first runs, with the estimate (issue 33, item 4). The clock is a
fake one that advances one second per reading, so nothing here depends on the machine's speed."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from specproof.trace import explore  # noqa: E402
from specproof.trace.tracer import TraceTimeout, TraceTooLarge, trace  # noqa: E402


def textbook(p, q):
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def rows(v):
    p = torch.arange(1, v + 1, dtype=torch.float64)
    return p / p.sum(), torch.full((v,), 1.0 / v, dtype=torch.float64)


@pytest.fixture
def one_second_per_reading(monkeypatch):
    ticks = itertools.count()
    monkeypatch.setattr(explore, "_MONOTONIC", lambda: float(next(ticks)))


def test_a_budget_too_small_for_the_vocabulary_is_refused_after_the_first_runs(one_second_per_reading):
    with pytest.raises(
        TraceTimeout,
        match=r"refused after 1 run: the first run's draw from torch.multinomial has "
        r"2000 outcomes.*at least 2000 runs, about 33.3 min, past the time "
        r"budget of 10 s",
    ):
        trace(textbook, rows(2000), max_seconds=10)


def test_with_no_budget_a_trace_past_an_hour_is_refused_with_its_estimate(one_second_per_reading):
    with pytest.raises(
        TraceTooLarge,
        match=r"refused after 3 runs: .* 5000 outcomes.*about 83.3 min, past 60 min; "
        r"trace a smaller vocabulary, or pass max_seconds",
    ):
        trace(textbook, rows(5000))


def test_a_small_vocabulary_is_never_refused_for_its_estimate(one_second_per_reading):
    law = trace(textbook, rows(4), max_seconds=10**6).law
    assert sum(law.values()) == 1 and len(law) == 4
