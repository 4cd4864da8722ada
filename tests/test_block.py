"""Tests for specproof.laws.block: the one engine for a step over a block, its stream judge and the
target's joint law, against hand-derived values and independent enumerations."""

import dataclasses
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specproof.errors import InvalidDistribution
from specproof.laws.block import (
    Position,
    compose,
    extend_by_target,
    given_block,
    stream_tv,
    target_joint,
    tree_position,
)
from specproof.laws.chain import textbook_position, verification_law
from specproof.laws.outcome import FLOAT32_OPEN_CLOSED, block_tree
from specproof.rules import audit, policy
from specproof.rules.policy import Rule

HALF = (F(1, 2), F(1, 2))


def _enumerated_tv(emitted, target, gamma, stops=frozenset()):
    """The stream TV by brute force: cut each block at its first stop token, continue both sides by
    the target until gamma + 1 tokens or a stop token, and compare every sequence (small V only)."""

    def row(prefix):
        return target(prefix)

    def extend(starts):
        out, frontier = {}, list(starts)
        while frontier:
            seq, m = frontier.pop()
            if len(seq) >= gamma + 1 or (seq and seq[-1] in stops):
                out[seq] = out.get(seq, F(0)) + m
                continue
            frontier.extend((seq + (y,), m * py) for y, py in enumerate(row(seq)) if py)
        return out

    cut = []
    for b, m in emitted.items():
        n = next((i + 1 for i, t in enumerate(b) if t in stops), len(b))
        cut.append((b[:n], m))
    mine, ref = extend(cut), extend([((), F(1))])
    return sum((abs(mine.get(k, F(0)) - ref.get(k, F(0))) for k in set(mine) | set(ref)), F(0)) / 2


def _position(p, q, name, prefix):
    tree = audit.position_tree(p, q, policy.named_rule(name))
    return tree_position(tree, tree.rows["reference"])


def test_compose_by_hand_gamma_1():
    # p = (1/2, 1/2), q = (1/4, 3/4): accept 0 w.p. 1/4, 1 w.p. 1/2, stop w.p. 1/4 emitting 0
    pos = Position(HALF, (F(1, 4), F(1, 2)), F(1), (F(1, 4), F(0)), F(1), F(1, 4))
    law = compose(lambda s: pos, 1, lambda s: (HALF, F(1, 2), (1, 1)), node_tv=True)
    assert dict(law.emitted) == {(0,): F(1, 4), (0, 0): F(1, 8), (0, 1): F(1, 8), (1, 0): F(1, 4), (1, 1): F(1, 4)}
    assert law.accepted_length_law == law.accepted_length_law == (F(1, 4), F(3, 4))
    assert law.reach == {(): 1, (0,): F(1, 4), (1,): F(1, 2)} and law.alphas == {(): F(3, 4)}
    assert law.lossless and law.node_tv == {(): 0, (0,): 0, (1,): 0}


def test_node_tv_and_lossless_see_a_wrong_stop_row_and_an_out_of_range_id():
    # the stop emits token 1 instead of 0: the root's next token is (1/4, 3/4), TV 1/4 from p
    wrong = Position(HALF, (F(1, 4), F(1, 2)), F(1), (F(0), F(1, 4)), F(1), F(1, 4))
    law = compose(lambda s: wrong, 1, lambda s: (HALF, F(1, 2), (1, 1)), node_tv=True)
    assert not law.lossless and law.node_tv[()] == F(1, 4) and law.out_of_range == 0
    # the stop emits id 7 (outside [0, 2)): its block is listed, its mass counts in full
    outside = Position(HALF, (F(1, 4), F(1, 2)), F(1), (F(0), F(0)), F(1), F(1, 4), {7: F(1, 4)})
    law = compose(lambda s: outside, 1, lambda s: (HALF, F(1, 2), (1, 1)), node_tv=True)
    assert law.emitted[(7,)] == F(1, 4) and (7,) in set(law.emitted) and law.out_of_range == F(1, 4)
    assert not law.lossless and law.node_tv[()] == F(1, 4)
    assert sum(law.emitted.values()) == 1


def test_compose_names_the_prefix_of_a_bad_row_and_of_a_size_change():
    def position(prefix):
        p = ["1/2", "1/2"] if prefix == () else ["1/2", "1/4", "1/4"]
        return _position(p, p, "standard", prefix)

    with pytest.raises(InvalidDistribution, match=r"after the drafted prefix \(1,\): rows have different"):
        compose(position, 2, lambda s: (HALF, F(1, 2), (1, 1)))

    def bad(prefix):
        return _position(["1/2", "1/3"], HALF, "standard", prefix)

    with pytest.raises(InvalidDistribution, match=r"^after the path \(\): p sums to 5/6"):
        compose(bad, 1, lambda s: (HALF, F(1, 2), (1, 1)), where="after the path")


def _one_position(leaves, v=2):
    """A hand-made position tree: a draw from p of each (y, accepted) leaf, p uniform over V ids."""
    from specproof.laws.outcome import Branch, Draw, Leaf, Node, OutcomeTree

    p = tuple(F(1, v) for _ in range(v))
    root = Node("draw", tuple(Branch(Draw("p", i), prob, Leaf(y, acc)) for i, (y, acc, prob) in enumerate(leaves)))
    return OutcomeTree({"p": p, "q": p}, root, v, recipes={"p": ("input", "p"), "q": ("input", "q")})


def test_block_tree_refuses_what_the_engine_finds_wrong():
    from specproof.laws.outcome import InvalidTree

    outside = _one_position([(0, True, F(1, 2)), (7, False, F(1, 2))])
    with pytest.raises(InvalidTree, match=r"after \[\] the verifier emits id 7, outside \[0, V\)"):
        block_tree(lambda prefix: outside, 2)
    wider = _one_position([(0, True, F(1, 3)), (1, False, F(1, 3)), (2, False, F(1, 3))], 3)
    with pytest.raises(InvalidTree, match=r"after \[0\] the rows have 3 entries, not V = 2"):
        block_tree(lambda prefix: _one_position([(0, True, F(1, 2)), (1, False, F(1, 2))]) if not prefix else wider, 2)
    never = _one_position([(0, True, F(0)), (1, False, F(1))])
    with pytest.raises(InvalidTree, match=r"after \[\] a branch of probability 0 leads to the accepted draft 0"):
        block_tree(lambda prefix: never, 1)
    with pytest.raises(InvalidDistribution, match=r"^after the drafted prefix \(\): p sums to 5/6"):
        block_tree(lambda prefix: audit.position_tree(["1/2", "1/3"], HALF, policy.STANDARD), 1)


def test_rule_trees_reproduce_the_textbook_integer_path_with_stop_tokens():
    p = lambda s: ["1/2", "1/4", "1/4"] if len(s) % 2 else ["1/3", "1/3", "1/3"]  # noqa: E731
    q = lambda s: ["1/4", "1/4", "1/2"]  # noqa: E731
    textbook = verification_law(p, q, 3, stop_tokens=[2])
    rules = audit.block_law(p, q, 3, policy.STANDARD, stop_tokens=[2])
    assert rules.emitted == dict(textbook.emitted) and rules.accepted_length_law == textbook.accepted_length_law
    assert textbook.lossless and rules.lossless and rules.stream_tv == 0


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(2, 3), st.integers(1, 3), st.sets(st.integers(0, 2), max_size=1))
def test_stream_tv_equals_the_enumeration_with_stop_tokens(data, v, gamma, stops):
    weights = st.lists(st.integers(0, 4), min_size=v, max_size=v).filter(any)
    rows = {}

    def target(prefix):
        if prefix not in rows:
            w = data.draw(weights)
            rows[prefix] = tuple(F(x, sum(w)) for x in w)
        return rows[prefix]

    blocks = data.draw(
        st.lists(
            st.lists(st.integers(0, v - 1), min_size=1, max_size=gamma + 1).map(tuple),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    masses = data.draw(st.lists(st.integers(1, 5), min_size=len(blocks), max_size=len(blocks)))
    emitted = {b: F(m, sum(masses)) for b, m in zip(blocks, masses)}
    stops = {t for t in stops if t < v}
    assert stream_tv(emitted, target, gamma, stop_tokens=stops) == _enumerated_tv(emitted, target, gamma, stops)


def test_stream_tv_and_the_joint_law_by_hand():
    assert stream_tv({(0,): F(1)}, ["1/2", "1/2"], 1) == F(1, 2)
    # a stop token 0 ends both streams: the block (0,) is then the target's own first token half the time
    assert stream_tv({(0,): F(1, 2), (1, 1): F(1, 2)}, HALF, 1, stop_tokens=[0]) == F(1, 4)
    assert stream_tv({(0,): F(1, 2), (1, 0): F(1, 4), (1, 1): F(1, 4)}, HALF, 1, stop_tokens=[0]) == 0
    assert target_joint(["1/4", "3/4"], 2) == {(0, 0): F(1, 16), (0, 1): F(3, 16), (1, 0): F(3, 16), (1, 1): F(9, 16)}
    assert extend_by_target({(0, 1, 1): F(1)}, HALF, 2) == {(0, 1): F(1)}


def test_given_block_by_hand():
    lengths, rows = given_block([(F(1, 2), (F(1), F(0))), (F(1, 3), (F(0), F(1)))], HALF)
    assert lengths == (F(1, 2), F(1, 3), F(1, 6)) and rows == ((F(1), F(0)), (F(0), F(1)), HALF)
    assert given_block([], HALF) == ((F(1),), (HALF,))


@pytest.mark.parametrize(
    "emitted, gamma, stops, message",
    [
        ({(0,): F(1)}, -1, (), "gamma must be an integer >= 0, got -1"),
        ({(0,): F(1)}, 1.0, (), "gamma must be an integer >= 0, got 1.0"),
        ({(0,): F(1)}, True, (), "gamma must be an integer >= 0, got True"),
        ([((0,), F(1))], 1, (), "the emitted law is a list, not a mapping block -> probability"),
        ({(): F(1)}, 1, (), r"the emitted law has the block \(\), not a tuple of 1 to 2 integer ids"),
        ({(0, 1, 0): F(1)}, 1, (), r"the block \(0, 1, 0\), not a tuple of 1 to 2 integer ids"),
        ({(0, True): F(1)}, 1, (), "not a tuple of 1 to 2 integer ids"),
        ({0: F(1)}, 1, (), "the block 0, not a tuple"),
        ({(0,): 0.5, (1,): 0.5}, 1, (), r"the mass of the block \(0,\) is the float 0.5"),
        ({(0,): F(3, 2), (1,): F(-1, 2)}, 1, (), r"gives the block \(1,\) the mass -1/2, which is negative"),
        ({(0,): F(3, 4), (1,): F(1, 2)}, 1, (), "the emitted law's masses sum to 5/4, above 1"),
        ({(0,): F(1)}, 1, ["0"], r"stop_tokens are \['0'\], not integer ids"),
    ],
)
def test_stream_tv_refuses_what_is_not_a_block_law(emitted, gamma, stops, message):
    with pytest.raises(InvalidDistribution, match=message):
        stream_tv(emitted, HALF, gamma, stop_tokens=stops)


def test_stream_tv_of_a_law_missing_mass_counts_it_in_full():
    # half the mass set aside (invalid blocks, as rules.faithful does): it adds 1/2 to the sum, 1/4 to the TV
    assert stream_tv({(0,): F(1, 2)}, HALF, 0) == F(1, 4)
    assert stream_tv({}, HALF, 1) == F(1, 2)
    # an id outside [0, V) counts in full; gamma = 0 compares one token
    assert stream_tv({(5,): F(1)}, HALF, 0) == 1
    with pytest.raises(InvalidDistribution, match="p sums to 3/4, not 1"):
        stream_tv({(0,): F(1)}, ["1/2", "1/4"], 1)
    with pytest.raises(InvalidDistribution, match="length must be an integer >= 0, got -1"):
        target_joint(HALF, -1)
    with pytest.raises(InvalidDistribution, match=r"the starting law gives the block \(0,\) the mass -1"):
        extend_by_target({(0,): F(-1)}, HALF, 2)


@pytest.mark.parametrize(
    "steps, bonus, message",
    [
        ([(F(3, 2), HALF)], HALF, r"step 0: the pass probability is 3/2, not in \[0, 1\]"),
        ([(F(-1, 2), HALF)], HALF, r"step 0: the pass probability is -1/2, not in \[0, 1\]"),
        ([(0.5, HALF)], HALF, "step 0: the pass probability is the float 0.5"),
        ([(F(1, 2), HALF), (F(1, 2), (F(3, 4), F(1, 2)))], HALF, "step 1: the rejection row sums to 5/4, above 1"),
        ([(F(1, 2), (F(3, 2), F(-1, 2)))], HALF, r"step 0: the rejection row\[1\] is -1/2, which is negative"),
        ([(F(1, 2), (F(1),))], HALF, "step 0: the rejection row has 1 entries, not V = 2"),
        ([(F(1, 2), "ab")], HALF, "step 0: the rejection row is a str, not a sequence of rationals"),
        ([(F(1, 2), (0.5, 0.5))], HALF, r"step 0: the rejection row\[0\] is the float 0.5"),
        ([F(1, 2)], HALF, r"step 0 is Fraction\(1, 2\), not a pair"),
        ([], (F(1, 2), F(1, 4)), "the bonus row sums to 3/4, not 1"),
    ],
)
def test_given_block_refuses_bad_steps(steps, bonus, message):
    with pytest.raises(InvalidDistribution, match=message):
        given_block(steps, bonus)


def test_given_block_keeps_a_rejection_row_short_of_one_or_unused():
    # a faulty rule's rejection that emits an id outside [0, V) a quarter of the time; an unused row at keep 1
    lengths, rows = given_block([(F(1, 2), (F(3, 4), F(0))), (F(1), (0, 0))], HALF)
    assert lengths == (F(1, 2), 0, F(1, 2)) and rows == ((F(3, 4), F(0)), (F(0), F(0)), HALF)
    assert given_block([("1/3", ["1/2", "1/2"])], ["1/4", "3/4"]) == ((F(2, 3), F(1, 3)), (HALF, (F(1, 4), F(3, 4))))


def test_a_leaf_of_a_token_tree_draws_the_bonus_below_gamma():
    # position None at (0,): the drafts ran out there (a leaf of a token tree), the bonus is drawn at depth 1
    root = Position(HALF, (F(1, 2), F(1, 2)), F(1), (), F(0), F(0))
    after_1 = Position(HALF, (F(1, 2), F(0)), F(1), (F(0), F(1, 2)), F(1), F(1, 2))
    positions = {(): root, (0,): None, (1,): after_1}
    law = compose(positions.get, 2, lambda s: (HALF, F(1, 2), (1, 1)), node_tv=True)
    assert law.accepted_length_law == (0, F(3, 4), F(1, 4))
    assert dict(law.emitted) == {
        (0, 0): F(1, 4),
        (0, 1): F(1, 4),
        (1, 1): F(1, 4),
        (1, 0, 0): F(1, 8),
        (1, 0, 1): F(1, 8),
    }
    assert law.lossless and law.expected_accepted == F(5, 4) and set(law.node_tv.values()) == {0}


def test_a_given_block_law_names_its_law_over_lengths():
    # every registered step law's accepted_length_law is the contract's (tests/test_contract.py)
    from specproof.laws import chain

    p, q = ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]
    law = chain.given_block_law([p, p, p], [q, q], [0, 1])
    assert law.accepted_length_law == (F(0), F(0), F(1))  # p/q >= 1 at both drafted tokens


def test_the_engine_reads_edge_inputs_as_documented():
    import numpy as np

    # a mass past V counts in full in a position's TV: |1/2 - 1/2| + |0 - 1/2| + 1/2, halved
    assert Position(HALF, (F(1, 2), F(0), F(1, 2)), F(1), (), F(0), F(0)).tv() == F(1, 2)
    # a step given as a list; a rejection row of Fractions given as a list comes back a tuple
    lengths, rows = given_block([[F(1, 2), [F(1), F(0)]]], HALF)
    assert lengths == (F(1, 2), F(1, 2)) and rows == ((F(1), F(0)), HALF) and type(rows[0]) is tuple
    # NumPy ids and a block of mass 0 are a law's blocks too
    assert stream_tv({(np.int64(0),): F(1), (1,): F(0)}, HALF, 0) == F(1, 2)


def test_a_row_list_changed_in_place_is_read_again():
    # a model that returns one list object, refilled after every prefix: no validated copy of it is reused
    shared = [F(1, 2), F(1, 2)]

    def target(prefix):
        shared[:] = [F(1, 4), F(3, 4)] if prefix else [F(1, 2), F(1, 2)]
        return shared

    def rows(prefix):
        return (F(1, 4), F(3, 4)) if prefix else HALF

    emitted = {(0, 1): F(1, 2), (1, 1): F(1, 2)}  # read once and kept, the row would be (1/2, 1/2): TV 1/2
    assert stream_tv(emitted, target, 1) == stream_tv(emitted, rows, 1) == F(1, 4)


# ---------------------------------------------------------------- positions and their TV (mutation tests)


def test_a_position_and_a_law_are_immutable():
    # a law caches its verdict (ChainLaw.lossless): neither it nor its positions can be changed after
    pos = Position(HALF, (F(1, 4), F(1, 2)), F(1), (F(1, 4), F(0)), F(1), F(1, 4))
    law = compose(lambda s: pos, 1, lambda s: (HALF, F(1, 2), (1, 1)))
    assert law.lossless
    with pytest.raises(dataclasses.FrozenInstanceError):
        pos.stop_mass = F(0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        law.reach = {}


def test_a_step_law_is_built_by_keyword_only():
    """StepLaw and ChainLaw take their fields by name only (kw_only): a positional argument, even
    one only of a ChainLaw's own fields beside its base's by name, is a TypeError, not a law with
    its fields in some order."""
    from specproof.laws.block import ChainLaw, StepLaw

    step = StepLaw(gamma=1, emitted={(0,): F(1)}, accepted_length_law=(F(1), F(0)))
    assert step.expected_accepted == 0 and step.expected_emitted == 1
    with pytest.raises(TypeError):
        StepLaw(1, {(0,): F(1)}, (F(1), F(0)))
    law = verification_law(lambda s: HALF, lambda s: (F(1, 4), F(3, 4)), 1)
    by_name = {f.name: getattr(law, f.name) for f in dataclasses.fields(law) if f.init}
    assert ChainLaw(**by_name) == law
    base = {f.name for f in dataclasses.fields(StepLaw)}
    own = [by_name[f.name] for f in dataclasses.fields(law) if f.init and f.name not in base]
    with pytest.raises(TypeError):
        ChainLaw(*own, **{k: v for k, v in by_name.items() if k in base})


def test_the_integer_textbook_position_by_hand():
    # p = (1/2, 1/2), q = (1/4, 3/4): accept masses (1, 2) over D = 4, residual (1, 0) over Z = 1/4
    pos = textbook_position(HALF, (F(1, 4), F(3, 4)))
    assert (pos.go, pos.go_scale, pos.stop, pos.stop_scale) == ([1, 2], F(1, 4), [1, 0], F(1, 4))
    assert pos.accept_mass == F(3, 4) and pos.stop_mass == F(1, 4)
    assert pos.tv() == 0
    # the same masses stored with other scales: go (1/8, 1/4) x 2, stop (1/8, 0) x 2
    doubled = Position(HALF, (F(1, 8), F(1, 4)), F(2), (F(1, 8), F(0)), F(2), F(1, 4))
    assert doubled.accept_mass == F(3, 4) and doubled.tv() == 0
    # a position whose stop emits token 1 instead of 0, scales 1/4: TV 1/4
    wrong = Position(HALF, (1, 2), F(1, 4), (0, 1), F(1, 4), F(1, 4))
    assert wrong.accept_mass == F(3, 4) and wrong.tv() == F(1, 4)


def test_a_position_that_always_stops():
    # no go row at all: the next token is the stop's (1/4, 3/4), TV 1/4 from (1/2, 1/2)
    pos = Position(HALF, (), F(0), (1, 3), F(1, 4), F(1))
    assert pos.accept_mass == 0 and pos.tv() == F(1, 4)


@pytest.mark.parametrize(
    "scale,masses,tv",
    [
        (F(1, 2), (1, 1), F(0)),  # the reference itself, over a scale
        (F(2), (F(1, 4), F(1, 4)), F(0)),  # scale 2
        (F(1, 4), (2, 2), F(0)),
        (F(1, 4), (4,), F(1, 2)),  # a row shorter than V: token 1 has mass 0
        (F(1, 4), (2, 0, 2), F(1, 2)),  # a mass past V counts in full: |1/2 - 1/2| + |0 - 1/2| + 1/2
        (F(1, 2), (1, 0, 1), F(1, 2)),
    ],
)
def test_the_node_tv_of_a_bonus_row(scale, masses, tv):
    # gamma 1, the root always accepts token 0 (go 1): the bonus row at (0,) is judged against p
    root = Position(HALF, (F(1), F(0)), F(1), (), F(0), F(0))
    law = compose(lambda s: root, 1, lambda s: (HALF, scale, masses), node_tv=True)
    assert law.node_tv == {(): F(1, 2), (0,): tv}


def test_a_tree_position_with_an_id_outside_the_vocabulary():
    # p = (1/2, 1/2, 0), q = (1, 0, 0): draft 0 is kept iff the (0, 1] float32 coin u = k / 2^24
    # is below 1/2 (k < 2^23: 2^23 - 1 of the 2^24 values); the rejection's draw reuses u, and
    # u = 1 passes no cdf entry: id 3 with mass 2^-24, token 1 with the other 2^23
    rule = Rule(residual_draw="inverse-cdf-reuse", coin=FLOAT32_OPEN_CLOSED, fallthrough="out-of-range")
    tree = audit.position_tree(["1/2", "1/2", 0], [1, 0, 0], rule)
    pos = tree_position(tree, (F(1, 2), F(1, 2), F(0)))
    n = 2**24
    assert pos.go == (F(2**23 - 1, n), 0, 0) and pos.stop == (0, F(1, 2), 0)
    assert pos.out_of_range == {3: F(1, n)} and pos.stop_mass == F(2**23 + 1, n)
    assert pos.accept_mass == F(2**23 - 1, n) and pos.tv() == F(1, n)


def test_a_rational_vector_row_is_validated_where_it_is_first_read():
    # the same RationalVector objects at every prefix are validated once each (cached by identity), but
    # validated: a bonus row summing to 2/3, read only at depth gamma, is refused there
    from specproof.laws.rational import RationalVector

    good, bad = RationalVector((1, 1), 2), RationalVector((1, 1), 3)
    law = verification_law(lambda s: good, lambda s: HALF, 2)
    assert law.lossless and law.accepted_length_law == (0, 0, 1)
    with pytest.raises(InvalidDistribution, match=r"^after the drafted prefix \(1,\): p sums to 2/3, not 1$"):
        verification_law(lambda s: good if s == () else bad, lambda s: HALF, 1)


@pytest.mark.parametrize(
    "scale,masses,lossless",
    [
        (F(1, 2), (1, 1), True),  # the reference's own numerators over its denominator
        (F(1, 4), (2, 2), True),  # the same masses, stored over another scale
        (F(1, 2), (2, 0), False),  # the right scale, the wrong masses: the bonus is always token 0
        (F(1), (1, 1), False),  # the reference's numerators, twice its scale: the bonus masses sum to 2
    ],
)
def test_lossless_reads_a_stored_bonus_row_at_its_scale(scale, masses, lossless):
    # the root of test_compose_by_hand_gamma_1 (lossless), then a bonus row given as (scale, masses)
    pos = Position(HALF, (F(1, 4), F(1, 2)), F(1), (F(1, 4), F(0)), F(1), F(1, 4))
    law = compose(lambda s: pos, 1, lambda s: (HALF, scale, masses))
    assert law.lossless is lossless
    assert law.emitted[(1, 0)] == F(1, 2) * scale * masses[0]


def test_lossless_reads_a_bonus_row_reached_with_certainty():
    # p = (1, 0) at the root, draft 0 always kept: the block reaches (0,) with probability 1, and
    # its bonus row (1/2) x (2, 0) is token 0 for sure, not p = (1/2, 1/2)
    root = Position((F(1), F(0)), (F(1), F(0)), F(1), (), F(0), F(0))
    assert compose(lambda s: root, 1, lambda s: (HALF, F(1, 2), (1, 1))).lossless
    law = compose(lambda s: root, 1, lambda s: (HALF, F(1, 2), (2, 0)))
    assert dict(law.emitted) == {(0, 0): F(1)} and not law.lossless


@pytest.mark.parametrize("scale,tv", [(F(1), F(0)), (F(1, 2), F(1, 4)), (F(2), F(1, 2))])
def test_the_node_tv_of_a_bonus_drawn_from_the_reference_object_itself(scale, tv):
    # the bonus masses are the reference row object; only at scale 1 is that the reference's law
    root = Position(HALF, (F(1), F(0)), F(1), (), F(0), F(0))
    law = compose(lambda s: root, 1, lambda s: (HALF, scale, HALF), node_tv=True)
    assert law.node_tv == {(): F(1, 2), (0,): tv}


def test_every_step_law_keeps_its_old_accepted_length_name_with_a_warning():
    from specproof.laws.block_verification import block_verification_law
    from specproof.laws.chain import given_block_law
    from specproof.laws.relaxed import relaxed_block_law
    from specproof.laws.token_trees import deterministic_tree_law
    from specproof.laws.typical import typical_block_law

    p, q = ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]
    laws = [
        verification_law(lambda s: p, lambda s: q, 2),
        given_block_law([p, p], [q], [0]),
        typical_block_law(p, q, 2),
        relaxed_block_law(p, q, 2, "sglang-threshold"),
        block_verification_law(p, q, 2),
        deterministic_tree_law(p, [(0, [(1, [])])]),
        audit.block_law(p, q, 2),
        audit.given_block_law([p, p], [q], [0]),
    ]
    for law in laws:
        name = type(law).__name__
        with pytest.warns(
            DeprecationWarning, match=f"{name}.accepted_length is deprecated; use {name}.accepted_length_law"
        ) as seen:
            old = law.accepted_length
        assert [w.filename for w in seen] == [__file__]  # the warning names the caller's line
        assert old is law.accepted_length_law and sum(old) == 1


def test_the_step_laws_of_the_engine_share_one_base():
    from specproof.laws.block import StepLaw
    from specproof.laws.block_verification import block_verification_law
    from specproof.laws.relaxed import relaxed_block_law
    from specproof.laws.token_trees import deterministic_tree_law
    from specproof.laws.typical import typical_block_law

    p, q = ["1/2", "1/4", "1/4"], ["1/4", "1/4", "1/2"]
    chain = verification_law(lambda s: p, lambda s: q, 2)
    relaxed = relaxed_block_law(p, q, 2, "sglang-threshold")
    tree = deterministic_tree_law(p, [(0, [(1, [])]), (2, [])])
    for law in (chain, typical_block_law(p, q, 2), relaxed, block_verification_law(p, q, 2), tree):
        assert isinstance(law, StepLaw)  # the step contract's properties: tests/test_contract.py
    # alpha = 1/4 + 1/4 + 1/4 = 3/4 at every position: P(i accepted) = (1/4, 3/4 * 1/4, (3/4)^2)
    assert chain.accepted_length_law == (F(1, 4), F(3, 16), F(9, 16)) and chain.expected_accepted == F(21, 16)
    assert tree.depth == tree.gamma == 2
    with pytest.raises(TypeError):
        type(relaxed)(2, relaxed.emitted, relaxed.accepted_length_law, relaxed.stream_tv)  # keywords only
