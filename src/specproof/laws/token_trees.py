"""Token-tree verification: sibling and greedy trees at one node, composed down a token tree by the
block engine (SpecInfer's multi-step speculative sampling; greedy tree verification)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from specproof.laws._verifiers import (
    _ONE,
    InvalidVerifier,
    Model,
    Prefix,
    Row,
    TokenTree,
    _accept_test,
    _Builder,
    _dist,
    _model,
    _normalized,
    _positive_int,
    _positive_part,
    _without,
)
from specproof.laws.block import BlockLaw, Position, StepLaw, compose, tree_position
from specproof.laws.multidraft import multidraft_tree
from specproof.laws.outcome import Choice, Leaf, Node, OutcomeTree
from specproof.laws.outcome import argmax as _argmax

# --------------------------------------------------------------------------- token trees


def _parse_tree(tree: Any, where: str = "tree") -> TokenTree:
    """A token tree as nested ``((token, children), ...)``; accepts lists (JSON) too."""
    if not isinstance(tree, (list, tuple)):
        raise InvalidVerifier(f"{where} must be a list of [token, children] pairs, got {type(tree).__name__}")
    out = []
    for i, item in enumerate(tree):
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise InvalidVerifier(f"{where}[{i}] must be a [token, children] pair, got {item!r}")
        token, children = item
        if isinstance(token, bool) or not isinstance(token, int) or token < 0:
            raise InvalidVerifier(f"{where}[{i}] has token {token!r}, not a token id >= 0")
        out.append((token, _parse_tree(children, f"{where}[{i}][1]")))
    return tuple(out)


def _tree_depth(tree: TokenTree) -> int:
    return max((1 + _tree_depth(c) for _, c in tree), default=0)


def _check_tokens(tokens: Sequence[int], v: int) -> None:
    for t in tokens:
        if not 0 <= t < v:
            raise InvalidVerifier(f"token tree child {t} is not a token id in [0, {v})")


def sibling_tree(p: Any, tokens: Sequence[int]) -> OutcomeTree[int]:
    """One node of a deterministic token tree: its children verified in order, q one-hot.

    Child j (token t_j) is accepted with probability ``p_j(t_j)`` (the ratio test with q one-hot
    at t_j: ``min(1, p_j(t_j)/1)``); on rejection ``p_{j+1}`` is the normalized ``(p_j - onehot(t_j))+``,
    that is p_j with t_j removed and renormalized; after every child is rejected the token is
    drawn from the last residual.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
        The target row at the node.
    tokens : sequence of int
        The children's tokens in verification order (repeats allowed; may be empty).

    Returns
    -------
    OutcomeTree
        Nodes ``child j`` (two coin branches) and ``residual draw``. Rows: ``p`` (input),
        ``uniform`` (uniform), ``only-{t}`` (without uniform, every id but t), ``onehot-{t}``
        (normalized ``only-{t}``: q one-hot at t), ``r{j}`` (positive-part of step j's target and
        ``onehot-{t_j}``) and ``r{j}n`` (normalized).

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        Bad row, or a token outside [0, V).

    Notes
    -----
    A repeated token is never accepted the second time (the residual is 0 there). A child whose
    draft probability is 0 is still verified: q is one-hot at it. The law is p exactly: it is
    rejection sampling of p with each proposal a point mass (equivalently, sample y ~ p and accept
    the child with token y if there is one).

    References
    ----------
    Miao et al. 2024 (SpecInfer), Section 4 (token tree verification); SGLang's
    ``tree_speculative_sampling_target_only`` (one-hot draft probabilities between siblings).

    Examples
    --------
    >>> tree = sibling_tree(["1/2", "1/4", "1/4"], [1, 1, 2])
    >>> tree.law()[0], tree.accept_probability()
    ((Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), Fraction(1, 2))
    """
    pv = _dist(p, "p")
    v = len(pv)
    _check_tokens(tokens, v)
    b = _Builder(v)
    b.add("p", pv, ("input", "p"), "the target row at the node")
    b.add("uniform", tuple(Fraction(1, v) for _ in range(v)), ("uniform",), "1/V for every token")

    def step(j: int, target: str) -> Node[int]:
        if j == len(tokens):
            return b.draw_all("residual draw", target)
        t = tokens[j]
        others = [i for i in range(v) if i != t]
        only = b.add(
            f"only-{t}",
            lambda: _without(b.rows["uniform"], others),
            ("without", "uniform", others),
            f"1/V at {t}, 0 elsewhere",
        )
        hot = b.add(f"onehot-{t}", lambda: _normalized(b.rows[only]), ("normalized", only), f"q one-hot at {t}")

        def rejected() -> Node[int]:
            r = b.add(
                f"r{j + 1}",
                _positive_part(b.rows[target], b.rows[hot]),
                ("positive-part", target, hot),
                f"{target} without token {t}",
            )
            rn = b.add(f"r{j + 1}n", _normalized(b.rows[r]), ("normalized", r), f"the target after child {j + 1}")
            return step(j + 1, rn)

        return _accept_test(b, f"child {j + 1}", target, hot, t, rejected)

    return b.tree(step(0, "p"))


def greedy_sibling_tree(p: Any, tokens: Sequence[int]) -> OutcomeTree[int]:
    """One node of greedy tree verification: accept the child whose token is p's argmax.

    Parameters
    ----------
    p : sequence of exact rationals, shape [V]
    tokens : sequence of int
        The children's tokens (repeats allowed; may be empty).

    Returns
    -------
    OutcomeTree
        Deterministic: a chain of :class:`~specproof.laws.outcome.Choice` nodes ``child j`` (argmax is /
        is not t_j) ending in ``Leaf(argmax, True)`` at the first child holding the argmax, or in a
        ``greedy token`` node with ``Leaf(argmax, False)``. Row: ``p`` (input).

    Notes
    -----
    Tie rule: the argmax is the smallest id among the tokens of largest probability (as
    :class:`~specproof.laws.outcome.Choice` and ``Rows.argmax`` compute it); with repeated child
    tokens the first child holding the argmax is the one accepted.

    Examples
    --------
    >>> greedy_sibling_tree(["1/4", "3/8", "3/8"], [2, 1]).law()[0]
    (Fraction(0, 1), Fraction(1, 1), Fraction(0, 1))
    """
    pv = _dist(p, "p")
    _check_tokens(tokens, len(pv))
    b = _Builder(len(pv))
    b.add("p", pv, ("input", "p"), "the target row at the node")
    top = b.rows.argmax("p")
    node: Node[int] = b.node(
        "greedy token", [b.branch(Choice(("argmax-is", "p", top), "the target's argmax"), Leaf(top, False))]
    )
    for j in range(len(tokens) - 1, -1, -1):
        t = tokens[j]
        if t == top:
            node = b.node(f"child {j + 1}", [b.branch(Choice(("argmax-is", "p", t)), Leaf(t, True))])
        else:
            node = b.node(f"child {j + 1}", [b.branch(Choice(("argmax-is-not", "p", t)), node)])
    return b.tree(node)


def topk_tree(draft: Any, widths: Sequence[int]) -> TokenTree:
    """A token tree with the draft's top ``widths[d]`` tokens as the children of each depth-d node.

    Parameters
    ----------
    draft : callable or sequence
        ``draft(prefix)``: the draft row after ``prefix`` (a sequence: the same row everywhere).
    widths : sequence of int
        Children per node at each depth, each >= 1; ``len(widths)`` is the depth.

    Returns
    -------
    tuple
        ``((token, children), ...)``; children in decreasing draft probability, ties to the
        smallest id. A child may have draft probability 0 when fewer tokens have mass.

    Examples
    --------
    >>> topk_tree(["1/2", "1/3", "1/6"], [2, 1])
    ((0, ((0, ()),)), (1, ((0, ()),)))
    """
    dmodel = _model(draft, "q")
    for w in widths:
        _positive_int(w, "tree width")

    def build(prefix: Prefix, depth: int) -> TokenTree:
        if depth == len(widths):
            return ()
        row = _dist(dmodel(prefix), "q")
        order = sorted(range(len(row)), key=lambda i: (-row[i], i))[: widths[depth]]
        return tuple((t, build(prefix + (t,), depth + 1)) for t in order)

    return build((), 0)


@dataclass(frozen=True, kw_only=True)
class TokenTreeLaw(StepLaw):
    """The exact law of one token-tree verification step: a :class:`~specproof.laws.block.StepLaw`
    (``gamma``: the tree's depth, also :attr:`depth`; ``emitted``: the accepted path, then one more
    token, the residual token at the deepest accepted node or the bonus token when that node has
    no children; ``accepted_length_law``, ``expected_accepted``, ``expected_emitted``) with:

    Attributes
    ----------
    positions : dict of tuple of int -> OutcomeTree
        At every reachable tree node with children (keyed by its path), the node's outcome tree.
    node_tv : dict of tuple of int -> Fraction
        At every reachable node, TV between the law of the next emitted token and the reference:
        the target row (sampling verifiers) or the one-hot at its argmax (greedy).
    reference : str
        ``"target"`` or ``"greedy target"``.
    """

    positions: dict[Prefix, OutcomeTree[int]]
    node_tv: dict[Prefix, Fraction]
    reference: str

    @property
    def depth(self) -> int:
        """The tree's depth, the most drafts a step can accept: :attr:`gamma`."""
        return self.gamma

    @property
    def lossless(self) -> bool:
        """True iff at every reachable node the next token has the reference law."""
        return all(v == 0 for v in self.node_tv.values())


def _walk_tree(
    target: Model,
    depth: int,
    position: Callable[[Prefix, Any, Row], OutcomeTree[int] | None],
    child_state: Callable[[Any, int], Any],
    root_state: Any,
    greedy: bool,
) -> TokenTreeLaw:
    """Walk accepted tree nodes (:func:`specproof.laws.block.compose`): ``position(path, state, p)`` gives the
    node's outcome tree (None at a node without children: the bonus token), ``child_state(state, token)``
    the accepted child's."""
    states: dict[Prefix, Any] = {(): root_state}
    rows: dict[Prefix, tuple[Row, Row]] = {}
    positions: dict[Prefix, OutcomeTree[int]] = {}

    def row(path: Prefix) -> tuple[Row, Row]:
        if path not in rows:
            pv = _dist(target(path), "p")
            top = _argmax(pv)
            rows[path] = pv, tuple(Fraction(int(i == top)) for i in range(len(pv))) if greedy else pv
        return rows[path]

    def node(path: Prefix) -> Position | None:
        pv, ref = row(path)
        tree = position(path, states[path], pv)
        if tree is None:
            return None
        positions[path] = tree
        for y, accepted in tree.outcomes():
            if accepted:
                states[path + (y,)] = child_state(states[path], y)
        return tree_position(tree, ref)

    def bonus(path: Prefix) -> tuple[Row, Fraction, Row]:  # no children: the bonus token (greedy: the argmax)
        ref = row(path)[1]
        return ref, _ONE, ref

    law = compose(node, depth, bonus, where="after the path", node_tv=True)
    assert isinstance(law.emitted, BlockLaw) and law.node_tv is not None  # as compose builds them (node_tv=True)
    return TokenTreeLaw(
        gamma=depth,
        emitted=law.emitted.to_dict(),
        accepted_length_law=law.accepted_length_law,
        positions=positions,
        node_tv=dict(law.node_tv),
        reference="greedy target" if greedy else "target",
    )


def _first_child(tree: TokenTree, token: int) -> TokenTree:
    for t, children in tree:
        if t == token:
            return children
    raise InvalidVerifier(f"token {token} was accepted but is not a child")  # not reachable


def deterministic_tree_law(target: Any, tree: Any) -> TokenTreeLaw:
    """Recursive rejection down a given token tree, q one-hot between siblings; bonus at the end.

    Parameters
    ----------
    target : callable or sequence
        ``target(path)``: the target row after the path of accepted tokens (a sequence: the same
        row at every node).
    tree : sequence
        ``[[token, children], ...]`` (nested; ``[]`` for no children), or :func:`topk_tree`'s
        output. Siblings are verified in the order given.

    Returns
    -------
    TokenTreeLaw
        ``positions[path]`` is :func:`sibling_tree` of the node's row and children.

    Raises
    ------
    InvalidDistribution, InvalidVerifier
        Bad rows or a malformed tree.

    Notes
    -----
    At each node, :func:`sibling_tree` emits one token with the target's law; if it is a child's
    token (the first child holding it) the walk goes on below that child, otherwise the step ends
    with that token. At a node without children the bonus token is drawn from the target. So the
    next token's law at every reachable node is the target's (``lossless``), and the emitted path
    continued by target sampling has the target's joint law.

    References
    ----------
    Miao et al. 2024 (SpecInfer), Section 4 and Theorem 4.2; Li et al. 2024 (EAGLE-2) and SGLang
    for deterministic top-k trees.

    Examples
    --------
    >>> law = deterministic_tree_law(["1/2", "1/2"], [[0, [[1, []]]]])
    >>> law.accepted_length_law, law.lossless
    ((Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), True)
    """
    parsed = _parse_tree(tree)
    tmodel = _model(target)

    def position(path: Prefix, node: TokenTree, pv: Row) -> OutcomeTree[int] | None:
        return sibling_tree(pv, [t for t, _ in node]) if node else None

    return _walk_tree(tmodel, _tree_depth(parsed), position, _first_child, parsed, greedy=False)


def greedy_tree_law(target: Any, tree: Any) -> TokenTreeLaw:
    """Greedy tree verification: accept the child that is the target's argmax, go on below it.

    Parameters
    ----------
    target : callable or sequence
        As :func:`deterministic_tree_law`.
    tree : sequence
        As :func:`deterministic_tree_law`.

    Returns
    -------
    TokenTreeLaw
        One emitted path with probability 1; its reference is greedy decoding of the target, so
        ``lossless`` says the path equals the target's greedy continuation.

    Notes
    -----
    Tie rule: the smallest id among the tokens of largest target probability; among repeated
    children the first. At a node without children, or when no child is the argmax, the argmax
    is emitted (the bonus / correction token).

    Examples
    --------
    >>> greedy_tree_law(["1/4", "3/4"], [[0, []], [1, [[0, []]]]]).emitted
    {(1, 1): Fraction(1, 1)}
    """
    parsed = _parse_tree(tree)

    def position(path: Prefix, node: TokenTree, pv: Row) -> OutcomeTree[int] | None:
        return greedy_sibling_tree(pv, [t for t, _ in node]) if node else None

    return _walk_tree(_model(target), _tree_depth(parsed), position, _first_child, parsed, greedy=True)


def stochastic_tree_law(
    target: Any, draft: Any, branching: Sequence[int], *, method: str = "with-replacement"
) -> TokenTreeLaw:
    """A token tree whose children are drafted from q at each node, verified by recursive rejection.

    Parameters
    ----------
    target, draft : callable or sequence
        ``target(path)``, ``draft(path)``: rows after a path (a sequence: the same row everywhere).
    branching : sequence of int
        ``branching[d]`` children per node at depth d (SpecInfer's expansion configuration); the
        depth is ``len(branching)``.
    method : {"with-replacement", "without-replacement", "spectr"}
        How the children of a node are drafted and verified (:func:`multidraft_tree`).

    Returns
    -------
    TokenTreeLaw
        ``positions[path]`` is :func:`multidraft_tree` of the node's rows.

    Notes
    -----
    Every node at depth d has the same number of children, and each child's subtree is drafted
    independently of the verification at its parent, so which sibling was accepted does not
    change the law below: the state after an accepted token y is the path and the depth.

    References
    ----------
    Miao et al. 2024 (SpecInfer), Section 4 (expansion-based token trees, multi-step speculative
    sampling) and Theorem 4.2.

    Examples
    --------
    >>> law = stochastic_tree_law(["1/2", "1/2"], ["1", "0"], [2])
    >>> law.accepted_length_law, law.lossless
    ((Fraction(1, 2), Fraction(1, 2)), True)
    """
    widths = [_positive_int(k, "branching") for k in branching]
    dmodel = _model(draft, "q")

    def position(path: Prefix, depth: int, pv: Row) -> OutcomeTree[int] | None:
        if depth == len(widths):
            return None
        return multidraft_tree(pv, _dist(dmodel(path), "q"), widths[depth], method=method)

    return _walk_tree(_model(target), len(widths), position, lambda depth, y: depth + 1, 0, greedy=False)
