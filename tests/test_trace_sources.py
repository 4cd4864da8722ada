"""specproof.trace.sources: the Source interface, the registry, and a source added as one small class."""

from __future__ import annotations

import types
from fractions import Fraction as F

import pytest

from specproof.errors import InvalidOption
from specproof.trace import sources
from specproof.trace.core import UnmodelledRandomness, _draw_categorical, _run, _uniform_values
from specproof.trace.sources import Patcher, Source, register, unregister
from specproof.trace.tracer import trace

# a stand-in for a library with its own generator: dice.roll() and dice.coin()
dice = types.ModuleType("dice")
dice.roll = lambda: 4
dice.coin = lambda: 0.5
dice.shuffle = lambda xs: xs


class DiceSource(Source):
    name = "dice"
    assumptions = {
        "dice.roll": "dice.roll: exactly uniform on 1..6",
        "dice.coin": "dice.coin: k/2^8, k uniform on the grid",
    }

    def install(self, patcher: Patcher) -> None:
        patcher.set(dice, "roll", lambda: _draw_categorical(_run(), tuple(range(1, 7)), (F(1, 6),) * 6, "dice.roll"))
        patcher.set(dice, "coin", lambda: _uniform_values(_run(), 1, 8, "dice.coin")[0])

        def refuse(xs):
            raise UnmodelledRandomness("dice.shuffle is not modelled")

        patcher.set(dice, "shuffle", refuse)


@pytest.fixture
def dice_source():
    source = register(DiceSource())
    yield source
    unregister("dice")


def test_the_built_in_sources_are_registered_in_order():
    assert [s.name for s in sources.SOURCES][:3] == ["torch", "numpy", "python-random"]


def test_a_new_source_is_traced_with_its_assumptions(dice_source):
    result = trace(lambda: dice.roll() + (dice.coin() < 0.25))
    assert result.law == {
        1: F(3, 24),
        2: F(1, 24) + F(3, 24),
        3: F(1, 24) + F(3, 24),
        4: F(1, 24) + F(3, 24),
        5: F(1, 24) + F(3, 24),
        6: F(1, 24) + F(3, 24),
        7: F(1, 24),
    }
    assert result.calls == ("dice.coin", "dice.roll")
    assert "dice.roll: exactly uniform on 1..6" in result.assumptions
    assert "dice.coin: k/2^8, k uniform on the grid" in result.assumptions
    assert dice.roll() == 4 and dice.coin() == 0.5  # the patches are undone after the trace


def test_a_new_source_refuses_what_it_does_not_model(dice_source):
    with pytest.raises(UnmodelledRandomness, match="dice.shuffle"):
        trace(lambda: dice.shuffle([1, 2]))
    assert dice.shuffle([1, 2]) == [1, 2]


def test_unregistered_source_is_not_installed():
    register(DiceSource())
    unregister("dice")
    assert trace(lambda: dice.roll()).law == {4: F(1)}


def test_register_refuses_a_source_without_a_name():
    with pytest.raises(InvalidOption, match="Source instance with a name"):
        register(Source())
    with pytest.raises(InvalidOption):
        register(object())


def test_the_patcher_undoes_in_reverse_order():
    box = types.SimpleNamespace(x=1)
    calls = []
    patcher = Patcher()
    patcher.set(box, "x", 2)
    patcher.at_exit(lambda: calls.append(box.x))
    patcher.set(box, "x", 3)
    patcher.set(box, "absent", 4)  # no such attribute: nothing set
    assert box.x == 3 and not hasattr(box, "absent")
    patcher.undo()
    assert box.x == 1 and calls == [2]
