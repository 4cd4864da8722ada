"""A SymPy proof, for every vocabulary size V, that speculative sampling is lossless.

Each step is an identity that SymPy reduces at call time: per-token steps by an exhaustive
case split (substitutions such as ``a = b + t, t >= 0``), ``rewrite(Piecewise)``,
``piecewise_fold`` and ``simplify``; steps about a generic V by linearity of the finite
``Sum`` plus a per-token lemma applied to the summand. No sum is ever unrolled.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import sympy as sp

__all__ = [
    "prove_every_v",
    "COQ_DIR",
    "COQ_FILES",
    "FLOCQ_FILES",
    "COQ_THEOREMS",
    "COQ_SPEC_FILE",
    "coq_spec",
    "formal_proof",
    "check_coq",
]

Case = tuple[str, dict]

_P, _Q = sp.IndexedBase("p"), sp.IndexedBase("q")
_I = sp.Symbol("i", integer=True, positive=True)
_V = sp.Symbol("V", integer=True, positive=True)
_LIM = (_I, 1, _V)


def _sum(f: sp.Expr) -> sp.Sum:
    return sp.Sum(f, _LIM)


def _decided(rel: sp.Basic) -> sp.Basic:
    # Compare lhs - rhs, factored, with 0, so the symbols' assumptions can decide the sign.
    return type(rel)(sp.factor(rel.lhs - rel.rhs), 0)


def _reduce(expr: sp.Basic) -> sp.Basic:
    """rewrite(Piecewise), piecewise_fold, decide conditions by assumptions, simplify."""
    folded = sp.piecewise_fold(expr.rewrite(sp.Piecewise))
    return sp.simplify(folded.replace(lambda e: e.is_Relational, _decided))


def _split(x: sp.Expr, y: sp.Expr, nonneg: bool = True, y_pos: bool = False) -> list[Case]:
    """Exhaustive split ``x >= y`` (``x = y' + t``) / ``x < y`` (``y = x' + u``).

    ``nonneg`` makes x', y' >= 0 (covering all x, y >= 0), else real (all real x, y);
    ``y_pos`` makes y' > 0 in the first case (y a divisor; y = x' + u > 0 in the second).
    """
    t, u = sp.Symbol("t", nonnegative=True), sp.Symbol("u", positive=True)
    kind = {"nonnegative": True} if nonneg else {"real": True}
    xs, ys = sp.Symbol(str(x), **kind), sp.Symbol(str(y), **({"positive": True} if y_pos else kind))
    return [(f"{x} >= {y}", {x: ys + t, y: ys}), (f"{x} < {y}", {x: xs, y: xs + u})]


def check_identity(expr: sp.Basic, cases: Sequence[Case] = ()) -> tuple[str, bool]:
    """Reduce ``expr`` in every case; verified iff each reduces to 0 (or to True).

    Returns ``(result, verified)``; never raises (a SymPy failure is "not verified").
    """
    out = []
    for name, subs in cases or [("", {})]:
        try:
            r = _reduce(expr.subs(subs, simultaneous=True))
        except Exception as exc:  # noqa: BLE001 - a failed check is a result, not an error
            r = sp.Symbol(f"error:{type(exc).__name__}")
        out.append((name, r))
    ok = all(r is sp.true or (isinstance(r, sp.Expr) and r == 0) for _, r in out)
    return "; ".join(f"{n}: {r}" if n else str(r) for n, r in out), ok


def _per_token_summand(f: sp.Expr) -> sp.Expr:
    """Lemma (a) on a summand in p[i], q[i]: rename to a, b >= 0, reduce, rename back."""
    a, b = sp.symbols("a b", nonnegative=True)
    return _reduce(f.subs({_P[_I]: a, _Q[_I]: b})).subs({a: _P[_I], b: _Q[_I]})


def check_sum_identity(expr: sp.Expr, hypotheses: dict) -> tuple[str, bool]:
    """Merge the Sums (linearity), apply per-token-lemma to each summand, substitute hypotheses."""
    try:
        merged = sp.simplify(expr)
        merged = merged.replace(
            lambda e: isinstance(e, sp.Sum), lambda s: sp.Sum(_per_token_summand(s.function), *s.limits)
        )
        r = sp.simplify(merged.subs(hypotheses))
    except Exception as exc:  # noqa: BLE001
        r = sp.Symbol(f"error:{type(exc).__name__}")
    return str(r), r == 0


def _step(
    sid: str,
    claim: str,
    method: str,
    uses: list[str],
    expr: sp.Basic,
    check: Callable[[], tuple[str, bool]],
    verified: str | None,
) -> dict:
    """One step of the record: ``check()`` run, or (``verified`` given) the result a verified
    check writes, without running it."""
    result, ok = check() if verified is None else (verified, True)
    return {
        "id": sid,
        "claim": claim,
        "method": method,
        "uses": uses,
        "check": str(expr),
        "result": result,
        "verified": bool(ok),
    }


def _verified_result(expr: sp.Basic, cases: Sequence[Case] = ()) -> str:
    """What :func:`check_identity` writes when every case reduces to 0 (or, for a relation, True)."""
    value = "True" if expr.is_Relational else "0"
    return "; ".join(f"{name}: {value}" for name, _ in cases) if cases else value


# ---------------------------------------------------------------- the Coq proof

#: Where the Coq development lives in a source checkout (absent from an installed wheel).
COQ_DIR = Path(__file__).resolve().parents[3] / "proofs" / "coq"
#: Its files, in compilation order, under the logical prefix ``SpecProof``; the last five need Flocq.
COQ_FILES = (
    "Spec.v",
    "OnePosition.v",
    "Chain.v",
    "FloatCoin.v",
    "Optimal.v",
    "NPositions.v",
    "Block.v",
    "FloatGrid.v",
    "Fl32Coin.v",
    "Fl32Verifier.v",
    "FlCoin.v",
    "Fl64Verifier.v",
)
#: The files that need Flocq (over Coq's standard reals): their theorems may rest on FloatGrid.axioms.
FLOCQ_FILES = ("FloatGrid.v", "Fl32Coin.v", "Fl32Verifier.v", "FlCoin.v", "Fl64Verifier.v")
_FLOCQ_FILES = FLOCQ_FILES
#: The axioms a Flocq theorem may rest on (Coq's standard reals and classical logic), one per line.
_ALLOWED_AXIOMS_FILE = "FloatGrid.axioms"
_COQ_FLAGS = ("-w", "-notation-overridden,-ambiguous-paths")
_CLOSED = "Closed under the global context"

#: The main Coq theorems: name, file, statement (the source text, whitespace-normalized; a
#: test keeps it equal to the file) and what it says. ``Print Assumptions`` of each must
#: print "Closed under the global context", except for the theorems of :data:`FLOCQ_FILES` (Flocq,
#: over Coq's standard reals), whose axioms must all be listed in FloatGrid.axioms. In
#: OnePosition.v and FloatCoin.v, R is any numFieldType and T any finite type (the vocabulary).
COQ_THEOREMS: tuple[dict[str, str], ...] = (
    {
        "name": "verifier_lossless",
        "file": "OnePosition.v",
        "statement": "Theorem verifier_lossless p q fallback : is_distribution p -> is_distribution q -> "
        "forall y, verifier p q fallback y = p y.",
        "says": "for distributions p (target) and q (draft) on any finite vocabulary and any fallback law for "
        "an empty residual, the verifier program (draft x ~ q, accept with min(1, p x / q x), else draw "
        "from (p - q)+ normalized) emits a token whose law is p",
    },
    {
        "name": "acceptance_is_alpha",
        "file": "OnePosition.v",
        "statement": "Theorem acceptance_is_alpha p q : is_distribution p -> is_distribution q -> "
        "acceptance_prob p q = \\sum_x Num.min (p x) (q x).",
        "says": "the probability that the drafted token is accepted is alpha = sum_x min(p x, q x)",
    },
    {
        "name": "alpha_eq_1_minus_TV",
        "file": "OnePosition.v",
        "statement": "Theorem alpha_eq_1_minus_TV p q : is_distribution p -> is_distribution q -> "
        "alpha p q = 1 - TV p q.",
        "says": "alpha = 1 - TV(p, q), TV = (1/2) sum_x |p x - q x|",
    },
    {
        "name": "TV_is_residual_mass",
        "file": "OnePosition.v",
        "statement": "Theorem TV_is_residual_mass p q : is_distribution p -> is_distribution q -> "
        "TV p q = residual_mass p q.",
        "says": "TV(p, q) is the residual's mass Z = sum_x (p x - q x)+",
    },
    {
        "name": "draft_never_proposes",
        "file": "OnePosition.v",
        "statement": "Corollary draft_never_proposes p q fallback y : is_distribution p -> is_distribution q -> "
        "q y = 0 -> 0 < p y -> q y * accept_prob p q y = 0 /\\ verifier p q fallback y = p y.",
        "says": "q y = 0 < p y: y is never accepted as a draft, yet emitted with mass p y",
    },
    {
        "name": "target_never_wants",
        "file": "OnePosition.v",
        "statement": "Corollary target_never_wants p q fallback y : is_distribution p -> is_distribution q -> "
        "p y = 0 -> 0 < q y -> accept_prob p q y = 0 /\\ verifier p q fallback y = 0.",
        "says": "p y = 0 < q y: y is drafted but always rejected, and never emitted",
    },
    {
        "name": "identical_draft",
        "file": "OnePosition.v",
        "statement": "Corollary identical_draft p fallback : is_distribution p -> residual_mass p p = 0 /\\ "
        "rejection_prob p p = 0 /\\ forall y, verifier p p fallback y = p y.",
        "says": "p == q: the residual is empty, the rejection branch has probability 0, and whatever the "
        "fallback law the verifier emits p",
    },
    {
        "name": "sum_nonneg_eq0",
        "file": "OnePosition.v",
        "statement": "Lemma sum_nonneg_eq0 (F : T -> R) : (forall x, 0 <= F x) -> \\sum_x F x = 0 -> "
        "forall x, F x = 0.",
        "says": "a finite sum of non-negative terms is 0 only if every term is 0 (the lemma the SymPy proof "
        "uses without checking it)",
    },
    {
        "name": "speculative_lossless",
        "file": "Chain.v",
        "statement": "Theorem speculative_lossless (R : numFieldType) (T : finType) "
        "(p q fallback : seq T -> T -> R) (gamma n : nat) (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "forall s, speculative_law p q fallback gamma n c s = target_law p n c s.",
        "says": "with target and draft that depend on the prefix, for every gamma and every n, the first n "
        "tokens that speculative decoding (gamma drafts per step, verified in order, residual at the "
        "first rejection, bonus token from the target after gamma acceptances, then the next step) "
        "emits after any prefix c have the target's joint law",
    },
    {
        "name": "first_block_lossless",
        "file": "Chain.v",
        "statement": "Corollary first_block_lossless (R : numFieldType) (T : finType) "
        "(p q fallback : seq T -> T -> R) (gamma : nat) (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "forall s, speculative_law p q fallback gamma gamma.+1 c s = target_law p gamma.+1 c s.",
        "says": "in particular the first gamma + 1 emitted tokens (the bonus token included) have the target's "
        "joint law",
    },
    {
        "name": "grid_coin_bound",
        "file": "FloatCoin.v",
        "statement": "Theorem grid_coin_bound (N : nat) (r : R) : (0 < N)%N -> 0 <= r -> "
        "Num.min 1 r <= grid_coin N r < Num.min 1 r + N%:R^-1.",
        "says": "a coin u uniform on the N points k/N of [0, 1) has u < r with probability at least min(1, r) "
        "and less than min(1, r) + 1/N, for every r >= 0",
    },
    {
        "name": "float32_coin_bound",
        "file": "FloatCoin.v",
        "statement": "Theorem float32_coin_bound (r : R) : 0 <= r -> "
        "Num.min 1 r <= float32_coin r < Num.min 1 r + 2 ^- 24.",
        "says": "the float32 coin (N = 2^24): its acceptance probability exceeds min(1, r) by less than 2^-24",
    },
    {
        "name": "coin_error_TV",
        "file": "FloatCoin.v",
        "statement": "Theorem coin_error_TV acc : TV (verifier_with acc p q fallback) p <= "
        "\\sum_x q x * `|acc x - accept_prob p q x|.",
        "says": "for distributions p, q and fallback, a verifier whose accept probabilities are acc x instead "
        "of min(1, p x / q x) emits a law within total variation sum_x q x |acc x - min(1, p x / q x)| "
        "of p",
    },
    {
        "name": "float32_verifier_TV",
        "file": "FloatCoin.v",
        "statement": "Theorem float32_verifier_TV : TV (float32_verifier p q fallback) p < 2 ^- 24.",
        "says": "for distributions p, q and fallback, one position verified with the float32 coin (u < p x / q x) "
        "emits a law within total variation less than 2^-24 of p",
    },
    {
        "name": "coin_TV_lt",
        "file": "FloatCoin.v",
        "statement": "Theorem coin_TV_lt acc (eps : R) : (forall x, 0 < q x -> `|acc x - accept_prob p q x| < eps) -> "
        "TV (verifier_with acc p q fallback) p < eps.",
        "says": "for distributions p, q and fallback, a coin within eps of min(1, p x / q x) at every token the draft "
        "can propose (q x > 0) gives an emitted law within total variation less than eps of p",
    },
    {
        "name": "grid_coin_le_extra",
        "file": "FloatCoin.v",
        "statement": "Theorem grid_coin_le_extra (N : nat) (r : R) : 0 <= r -> grid_coin_le N r - grid_coin N r = "
        "N%:R^-1 * \\sum_(0 <= k < N) (k%:R / N%:R == r)%:R.",
        "says": "the <= coin's exact extra mass: a coin uniform on the N grid points accepts u <= r more often than "
        "u < r by exactly the mass of the grid points equal to r (1/N when r is one of them, else 0)",
    },
    {
        "name": "grid_coin_le_at_zero",
        "file": "FloatCoin.v",
        "statement": "Corollary grid_coin_le_at_zero (N : nat) : (0 < N)%N -> "
        "grid_coin N (0 : R) = 0 /\\ grid_coin_le N (0 : R) = N%:R^-1.",
        "says": "at r = 0 (a draft with p x = 0) the < coin never accepts, and the <= coin accepts with "
        "probability 1/N (2^-24 for the float32 coin): how p = 0 drafts get accepted",
    },
    {
        "name": "lossless_acceptance_le_alpha",
        "file": "Optimal.v",
        "statement": "Theorem lossless_acceptance_le_alpha p q K : is_distribution p -> is_distribution q -> "
        "(forall x, is_distribution (K x)) -> (forall y, bind q K y = p y) -> "
        "kernel_acceptance q K <= alpha p q.",
        "says": "any lossless single-draft verifier (a kernel K: given the draft x ~ q it emits a token drawn from "
        "K x, and the emitted law is p) emits the drafted token itself with probability "
        "sum_x q x K x x at most alpha = sum_x min(p x, q x)",
    },
    {
        "name": "lossless_acceptance_le_1_minus_TV",
        "file": "Optimal.v",
        "statement": "Corollary lossless_acceptance_le_1_minus_TV p q K : is_distribution p -> is_distribution q -> "
        "(forall x, is_distribution (K x)) -> (forall y, bind q K y = p y) -> "
        "kernel_acceptance q K <= 1 - TV p q.",
        "says": "hence any lossless single-draft verifier accepts the draft with probability at most 1 - TV(p, q)",
    },
    {
        "name": "verifier_kernel_attains",
        "file": "Optimal.v",
        "statement": "Theorem verifier_kernel_attains : (forall x, is_distribution (verifier_kernel p q fallback x)) /\\ "
        "(forall y, bind q (verifier_kernel p q fallback) y = p y) /\\ "
        "kernel_acceptance q (verifier_kernel p q fallback) = alpha p q.",
        "says": "for distributions p, q and fallback, the textbook verifier as a kernel is lossless and emits the "
        "drafted token with probability exactly alpha = 1 - TV(p, q): the bound is attained",
    },
    {
        "name": "TV_bind",
        "file": "NPositions.v",
        "statement": "Theorem TV_bind (d1 d2 : T -> R) (k1 k2 : T -> U -> R) : (forall x, 0 <= d1 x) -> "
        "(forall x, is_distribution (k2 x)) -> "
        "TV (bind d1 k1) (bind d2 k2) <= TV d1 d2 + \\sum_x d1 x * TV (k1 x) (k2 x).",
        "says": "over finite types T and U: the total variation between two two-stage laws (a first draw from d1 or "
        "d2, then a kernel k1 x or k2 x) is at most the total variation of the first stages plus the "
        "d1-expected total variation of the kernels",
    },
    {
        "name": "TV_bind_le",
        "file": "NPositions.v",
        "statement": "Corollary TV_bind_le (d1 d2 : T -> R) (k1 k2 : T -> U -> R) (eps : R) : is_distribution d1 -> "
        "(forall x, is_distribution (k2 x)) -> (forall x, TV (k1 x) (k2 x) <= eps) -> "
        "TV (bind d1 k1) (bind d2 k2) <= TV d1 d2 + eps.",
        "says": "hence at most the total variation of the first stages plus the largest total variation of the kernels",
    },
    {
        "name": "speculative_TV_tokens",
        "file": "NPositions.v",
        "statement": "Theorem speculative_TV_tokens (R : numFieldType) (T : finType) "
        "(p q fallback acc : seq T -> T -> R) (gamma n : nat) (c : seq T) (eps : R) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "(forall c, is_distribution (fallback c)) -> (forall c x, 0 <= acc c x <= 1) -> "
        "(forall c, TV (verifier_with (acc c) (p c) (q c) (fallback c)) (p c) <= eps) -> "
        "TV_tokens n (speculative_law_with p q fallback gamma acc n c) (target_law p n c) <= n%:R * eps.",
        "says": "the n-token bound: speculative decoding as in Chain.v (prefix-dependent rows, gamma drafts per step, "
        "residual at the first rejection, bonus token) but accepting draft x after prefix c with probability "
        "acc c x: if every position's verifier emits a law within total variation eps of the target's row, "
        "the first n emitted tokens are within total variation n eps of the target's joint law (over the "
        "sequences of length n)",
    },
    {
        "name": "float32_speculative_TV_tokens",
        "file": "NPositions.v",
        "statement": "Corollary float32_speculative_TV_tokens (R : numFieldType) (T : finType) "
        "(p q fallback : seq T -> T -> R) (gamma n : nat) (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "(forall c, is_distribution (fallback c)) -> "
        "TV_tokens n (speculative_law_with p q fallback gamma "
        "(fun c x => float32_coin (p c x / q c x)) n c) (target_law p n c) <= n%:R * 2 ^- 24.",
        "says": "with the float32 grid coin at every position (u < p x / q x at the exact ratio, u on the 2^24 "
        "multiples of 2^-24): the first n tokens are within total variation n 2^-24 of the target's joint "
        "law",
    },
    {
        "name": "speculative_law_with_exact",
        "file": "NPositions.v",
        "statement": "Corollary speculative_law_with_exact n c s : (forall c, is_distribution (p c)) -> "
        "(forall c, is_distribution (q c)) -> "
        "speculative_law_with p q fallback gamma (fun c => accept_prob (p c) (q c)) n c s = target_law p n c s.",
        "says": "non-vacuity and the link with Chain.v: the chain with a coin, given the exact accept probability "
        "min(1, p/q), is Chain.v's speculative law, so its first n tokens have the target's joint law",
    },
    {
        "name": "block_verification_lossless_le1",
        "file": "Block.v",
        "statement": "Theorem block_verification_lossless_le1 (gamma : nat) (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> (gamma <= 1)%N -> "
        "forall s, block_law p q fallback gamma c s = target_law p gamma.+1 c s.",
        "says": "block verification (Sun et al. 2024, Algorithm 2, as Spec.v's block_law: weights p_i, residuals "
        "(p_i M_b - M_s)+, thresholds h_i, tau decided from the top), for prefix-dependent rows that are "
        "distributions and any fallback, with gamma <= 1 drafts: the step followed by the target emits "
        "the target's joint law of gamma + 1 tokens (block_verification_lossless is every gamma)",
    },
    {
        "name": "block_gamma1_is_token_verification",
        "file": "Block.v",
        "statement": "Corollary block_gamma1_is_token_verification (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "forall s, block_law p q fallback 1 c s = speculative_law p q fallback 1 2 c s.",
        "says": "at gamma = 1, block verification and token verification (Chain.v) emit the same law of the first "
        "two tokens",
    },
    {
        "name": "block_draft_split",
        "file": "Block.v",
        "statement": "Lemma block_draft_split k : forall c xs a L s, 0 <= a <= 1 -> (size xs + k = gamma)%N -> "
        "block_draft p q fallback gamma k c xs a L s = "
        "a * emits xs (target_law p k.+1 c) s + (1 - a) * L s.",
        "says": "the key lemma of block verification (rows distributions after every prefix): at a level with "
        "accepted drafts xs and weight a in [0, 1], with k drafts left, whatever law L the lower levels "
        "give, the rest of the step is a times the target continuing after xs plus 1 - a times L",
    },
    {
        "name": "block_verification_lossless",
        "file": "Block.v",
        "statement": "Theorem block_verification_lossless (gamma : nat) (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "forall s, block_law p q fallback gamma c s = target_law p gamma.+1 c s.",
        "says": "block verification (Sun et al. 2024, Algorithm 2, as Spec.v's block_law) is lossless for every "
        "gamma and every finite vocabulary: for prefix-dependent rows that are distributions and any "
        "fallback, one step followed by the target emits the target's joint law of gamma + 1 tokens "
        "(Sun et al.'s Theorem 1)",
    },
    {
        "name": "block_same_law_as_token_verification",
        "file": "Block.v",
        "statement": "Corollary block_same_law_as_token_verification (gamma : nat) (c : seq T) : "
        "(forall c, is_distribution (p c)) -> (forall c, is_distribution (q c)) -> "
        "forall s, block_law p q fallback gamma c s = speculative_law p q fallback gamma gamma.+1 c s.",
        "says": "block verification and token verification (Chain.v) emit the same law of the first gamma + 1 tokens",
    },
    {
        "name": "ret_is_distribution",
        "file": "Spec.v",
        "statement": "Lemma ret_is_distribution (x : T) : is_distribution (ret R x).",
        "says": "non-vacuity: distributions exist (a point mass is one)",
    },
    {
        "name": "always_accept_emits_q",
        "file": "Spec.v",
        "statement": "Lemma always_accept_emits_q p q fallback y : verifier_with (fun _ => 1) p q fallback y = q y.",
        "says": "non-vacuity: the verifier program with a coin that always accepts emits the draft's law q",
    },
    {
        "name": "never_accept_emits_residual",
        "file": "Spec.v",
        "statement": "Lemma never_accept_emits_residual p q fallback y : \\sum_x q x = 1 -> residual_mass p q != 0 -> "
        "verifier_with (fun _ => 0) p q fallback y = residual p q y / residual_mass p q.",
        "says": "non-vacuity: with a coin that never accepts it emits the residual (p - q)+ normalized by its mass",
    },
    {
        "name": "target_law_chain_rule",
        "file": "Spec.v",
        "statement": "Lemma target_law_chain_rule (p : seq T -> T -> R) n c y s : "
        "target_law p n.+1 c (y :: s) = p c y * target_law p n (rcons c y) s.",
        "says": "non-vacuity: the target's joint law obeys the chain rule (first token from p c, the rest after it)",
    },
    {
        "name": "float32_grid_exact",
        "file": "FloatGrid.v",
        "statement": "Theorem float32_grid_exact (k : Z) : (0 <= k < 2 ^ 24)%Z -> "
        "is_finite (grid_float k) = true /\\ B2R (grid_float k) = IZR k * bpow radix2 (-24) /\\ "
        "0 <= B2R (grid_float k) < 1.",
        "says": "(Flocq, over Coq's standard reals) every point k 2^-24, 0 <= k < 2^24, of the float32 coin's grid "
        "is exactly a finite binary32 float, in [0, 1)",
    },
    {
        "name": "float32_lt_is_real_lt",
        "file": "FloatGrid.v",
        "statement": "Theorem float32_lt_is_real_lt (u r : binary32) : is_finite u = true -> "
        "is_finite r = true -> (Bcompare u r = Some Lt <-> B2R u < B2R r).",
        "says": "(Flocq) for finite binary32 floats, u < r in floating point is u < r in the reals",
    },
    {
        "name": "fl32_count_bound",
        "file": "Fl32Coin.v",
        "statement": "Theorem fl32_count_bound p q : nonneg_float p -> pos_float q -> "
        "let a := Z.to_nat (units p) in let b := Z.to_nat (units q) in "
        "let c := count_below (fl32_below p q) grid_size in "
        "(0 < b)%nat /\\ ((b <= a)%nat -> c = grid_size) /\\ "
        "((a < b)%nat -> (c * b < grid_size * a + b)%nat /\\ (grid_size * a < c * b + b)%nat).",
        "says": "(Flocq) for finite binary32 p >= 0 and q > 0 (p = a 2^-149, q = b 2^-149), the number c of the "
        "2^24 grid floats u = k 2^-24 for which the engine's float test u < fl32(p / q) holds (Bdiv rounded "
        "to nearest, ties to even; Bcompare; overflow to +infinity included) is 2^24 when p >= q, and "
        "otherwise |c / 2^24 - p / q| < 2^-24",
    },
    {
        "name": "fl32_ratio_coin_bound",
        "file": "Fl32Verifier.v",
        "statement": "Theorem fl32_ratio_coin_bound p q : nonneg_float p -> pos_float q -> "
        "`|fl32_ratio_coin p q - Num.min 1 (f32_val p / f32_val q)| < 2 ^- 24.",
        "says": "(Flocq) over any numFieldType: for binary32 p >= 0 and q > 0, a coin uniform on the float32 grid "
        "k 2^-24 passes the code's test u < fl32(p / q) with probability within 2^-24 (strictly, both "
        "ways) of min(1, p / q), the exact ratio of the floats' values",
    },
    {
        "name": "fl32_ratio_coin_is_grid_coin",
        "file": "Fl32Verifier.v",
        "statement": "Theorem fl32_ratio_coin_is_grid_coin p q : nonneg_float p -> pos_float q -> "
        "BinarySingleNaN.is_finite (fl32_div p q) = true -> "
        "fl32_ratio_coin p q = float32_coin (f32_val (fl32_div p q)).",
        "says": "(Flocq) the link: when fl32(p / q) is finite, that probability is FloatCoin.v's float32_coin (the "
        "grid coin) at the value of fl32(p / q)",
    },
    {
        "name": "fl32_verifier_TV",
        "file": "Fl32Verifier.v",
        "statement": "Theorem fl32_verifier_TV : (forall x, nonneg_float (pf x)) -> (forall x, nonneg_float (qf x)) -> "
        "is_distribution (fun x => f32_val (pf x)) -> is_distribution (fun x => f32_val (qf x)) -> "
        "is_distribution fallback -> TV fl32_verifier (fun x => f32_val (pf x)) < 2 ^- 24.",
        "says": "(Flocq) one position of the textbook verifier on binary32 rows whose exact values are "
        "distributions, accepting when the float32 coin is below fl32(p x / q x), emits a law within total "
        "variation less than 2^-24 of the target (the residual computed exactly)",
    },
    {
        "name": "fl_count_bound_le",
        "file": "FlCoin.v",
        "statement": "Theorem fl_count_bound_le p q : fl_nonneg p -> fl_pos q -> "
        "let a := Z.to_nat (fl_units p) in let b := Z.to_nat (fl_units q) in "
        "let c := count_below (fl_below_le p q) fl_grid_size in "
        "(0 < b)%nat /\\ ((b <= a)%nat -> c = fl_grid_size) /\\ "
        "((a < b)%nat -> (fl_grid_size * a < c * b)%nat /\\ (c * b < fl_grid_size * a + 2 * b)%nat).",
        "says": "(Flocq) for any binary format (prec, emax) and coin grid k 2^-g of its floats (g <= prec, "
        "emin <= -g), finite p >= 0 and q > 0 (p = a 2^emin, q = b 2^emin): the number c of grid floats u "
        "passing u <= fl(p / q) (vLLM's fl(p / q) >= u; Bdiv to nearest, ties to even, overflow included) "
        "is 2^g when p >= q, and otherwise p / q < c / 2^g < p / q + 2 / 2^g (FlCoin.v's fl_count_bound "
        "is the same count for u < fl(p / q), with Fl32Coin.v's bound)",
    },
    {
        "name": "fl64_ratio_coin_bound",
        "file": "Fl64Verifier.v",
        "statement": "Theorem fl64_ratio_coin_bound (p q : binary64) : fl_nonneg p -> fl_pos q -> "
        "`|fl64_ratio_coin p q - Num.min 1 (f64_val p / f64_val q)| < 2 ^- 53.",
        "says": "(Flocq) over any numFieldType: for binary64 p >= 0 and q > 0, a coin uniform on the float64 grid "
        "k 2^-53 passes u < fl64(p / q) with probability within 2^-53 (strictly) of min(1, p / q)",
    },
    {
        "name": "fl64_ratio_coin_le_bound",
        "file": "Fl64Verifier.v",
        "statement": "Theorem fl64_ratio_coin_le_bound (p q : binary64) : fl_nonneg p -> fl_pos q -> "
        "Num.min 1 (f64_val p / f64_val q) <= fl64_ratio_coin_le p q < "
        "Num.min 1 (f64_val p / f64_val q) + 2 ^- 52.",
        "says": "(Flocq) over any numFieldType: for binary64 p >= 0 and q > 0, the float64 grid coin passes vLLM's "
        "test fl64(p / q) >= u (u <= fl64(p / q)) with probability at least min(1, p / q) and less than "
        "min(1, p / q) + 2^-52",
    },
    {
        "name": "fl64_verifier_TV",
        "file": "Fl64Verifier.v",
        "statement": "Theorem fl64_verifier_TV : (forall x, fl_nonneg (pf x)) -> (forall x, fl_nonneg (qf x)) -> "
        "is_distribution (fun x => f64_val (pf x)) -> is_distribution (fun x => f64_val (qf x)) -> "
        "is_distribution fallback -> TV fl64_verifier (fun x => f64_val (pf x)) < 2 ^- 53.",
        "says": "(Flocq) one position of the textbook verifier on binary64 rows whose exact values are "
        "distributions, accepting when the float64 coin is below fl64(p x / q x), is within total variation "
        "less than 2^-53 of the target (the residual computed exactly)",
    },
    {
        "name": "fl64_verifier_le_TV",
        "file": "Fl64Verifier.v",
        "statement": "Theorem fl64_verifier_le_TV : (forall x, fl_nonneg (pf x)) -> (forall x, fl_nonneg (qf x)) -> "
        "is_distribution (fun x => f64_val (pf x)) -> is_distribution (fun x => f64_val (qf x)) -> "
        "is_distribution fallback -> TV fl64_verifier_le (fun x => f64_val (pf x)) < 2 ^- 52.",
        "says": "(Flocq) the same with vLLM's test fl64(p x / q x) >= u: within total variation less than 2^-52 "
        "of the target (rows, quotient and coin all binary64; the residual computed exactly)",
    },
)


#: The pinned record of every definition in :data:`COQ_FILES` (under :data:`COQ_DIR`), written by
#: ``python proofs/coq/pin_spec.py``; tests/test_coq.py requires it to equal :func:`coq_spec`.
COQ_SPEC_FILE = "spec.json"
_COQ_DEFINITION = re.compile(
    r"^[ \t]*(Definition|Fixpoint|Variables|Variable)\s+\(?(\w+)\b(.*?)\.(?=\s|$)", re.M | re.S
)


def _strip_coq_comments(text: str) -> str:
    out, depth, i = [], 0, 0
    while i < len(text):
        if text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif depth and text.startswith("*)", i):
            depth, i = depth - 1, i + 2
        else:
            if not depth:
                out.append(text[i])
            i += 1
    return "".join(out)


def coq_spec(source_dir: str | Path | None = None) -> dict[str, Any]:
    """The text of every definition of the Coq model, for pinning.

    Parameters
    ----------
    source_dir : str or pathlib.Path, optional
        Directory holding :data:`COQ_FILES` (default :data:`COQ_DIR`).

    Returns
    -------
    dict
        ``schema`` (1), ``files`` (the files read), ``definitions`` (a list, in file order, of
        dicts with ``file``, ``kind`` (``Definition``, ``Fixpoint``, or ``Variable`` / ``Variables``
        for the section variables the definitions are generalized over), ``name`` (of the
        first variable, for those), ``text`` (the
        whole sentence, comments removed and whitespace normalized) and ``sha256`` of the text)
        and ``sha256`` (of all the texts, one per line). Nothing is compiled: a definition whose
        text changes changes its record, which tests/test_coq.py compares with the committed
        proofs/coq/spec.json.

    Raises
    ------
    specproof.errors.SpecProofError
        A file of :data:`COQ_FILES` is missing from ``source_dir``.

    Examples
    --------
    >>> [d["name"] for d in coq_spec()["definitions"] if d["kind"] == "Definition"][:3]
    ['is_distribution', 'ret', 'bind']
    """
    from specproof.errors import SpecProofError

    src = Path(source_dir) if source_dir is not None else COQ_DIR
    definitions = []
    for name in COQ_FILES:
        path = src / name
        if not path.is_file():
            raise SpecProofError(f"{name} not found in {src} (the Coq sources ship with the repository)")
        text = _strip_coq_comments(path.read_text(encoding="utf-8"))
        for m in _COQ_DEFINITION.finditer(text):
            body = " ".join(m.group(0).split())
            definitions.append(
                {
                    "file": name,
                    "kind": m.group(1),
                    "name": m.group(2),
                    "text": body,
                    "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest(),
                }
            )
    joined = "\n".join(d["text"] for d in definitions)
    return {
        "schema": 1,
        "files": list(COQ_FILES),
        "definitions": definitions,
        "sha256": hashlib.sha256(joined.encode("utf-8")).hexdigest(),
    }


def formal_proof() -> dict[str, Any]:
    """Describe the Coq proof of the theorem (what it states, not whether it ran here).

    Returns
    -------
    dict
        JSON-ready: ``prover``, ``sources``, ``files``, ``field``, ``theorems`` (a list of
        dicts with ``name``, ``file``, ``statement``, ``says``, as in :data:`COQ_THEOREMS`),
        ``checked_by`` and ``not_proved``. The same dict on every call and every machine
        (nothing is run), so records that embed it regenerate byte-identically with or
        without Coq.

    Examples
    --------
    >>> [t["name"] for t in formal_proof()["theorems"]][:2]
    ['verifier_lossless', 'acceptance_is_alpha']
    """
    return {
        "prover": "Coq 8.16.1 with Mathematical Components 1.15 (ssreflect, algebra) and Flocq 4.1",
        "sources": "proofs/coq",
        "files": list(COQ_FILES),
        "field": "any numFieldType R (the rationals, the reals, ...) and any finite vocabulary T",
        "theorems": [dict(t) for t in COQ_THEOREMS],
        "checked_by": "coqc compiles the files, and Print Assumptions of each theorem below must print "
        "'Closed under the global context' (no axioms, no Admitted), except the Flocq "
        "theorems (FloatGrid.v, Fl32Coin.v, Fl32Verifier.v, FlCoin.v, Fl64Verifier.v), which may "
        "rest only on the axioms of "
        "Coq's standard reals and classical logic (proofs/coq/FloatGrid.axioms): checked by .ci/run "
        "(make -C proofs/coq, "
        "tests/test_coq.py) and by `specproof prove` when coqc is on PATH.",
        "not_proved": "that the float32 coin is uniform on its grid (measured on torch.rand); that the Coq "
        "programs are any engine's code; float rows that do not sum to exactly 1, the float "
        "residual and its sum; a float64 coin compared with a ratio computed in another format "
        "(Fl64Verifier.v has rows, quotient and coin all binary64); the n-position bound for the "
        "code's test "
        "u < fl32(p / q) on binary32 rows (NPositions.v proves n eps from any per-position "
        "bound eps, and n 2^-24 for the float32 grid coin at the exact ratio p / q).",
    }


def _run(cmd: Sequence[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def _first_lines(text: str, n: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[:n] if line.strip())


def _axioms(printed: str) -> list[str]:
    """The axiom names in what ``Print Assumptions`` printed ([] if closed)."""
    if printed.strip() == _CLOSED:
        return []
    return [
        line.split(" :")[0].strip()
        for line in printed.splitlines()
        if line.strip() and not line[0].isspace() and line.strip() != "Axioms:"
    ]


def _probe(exe: str, flags: Sequence[str], work: Path, line: str, timeout: float) -> subprocess.CompletedProcess:
    (work / "Probe.v").write_text(line + "\n", encoding="utf-8")
    return _run([exe, *flags, "Probe.v"], work, timeout)


def check_coq(source_dir: str | Path | None = None, coqc: str | None = None, timeout: float = 600.0) -> dict[str, Any]:
    """Compile the Coq proofs in a scratch directory and check each main theorem's assumptions.

    Parameters
    ----------
    source_dir : str or pathlib.Path, optional
        Directory holding :data:`COQ_FILES` (default :data:`COQ_DIR`). It is only read: the
        files are copied into a temporary directory and compiled there.
    coqc : str, optional
        The ``coqc`` executable (default: ``coqc`` found on ``PATH``).
    timeout : float
        Seconds allowed for each ``coqc`` call.

    Returns
    -------
    dict
        ``run`` (bool: False when Coq, MathComp or the sources are missing), ``passed``
        (True / False, or None when not run), ``coq_version`` (str or None), ``seconds``
        (float), ``assumptions`` (theorem name -> what ``Print Assumptions`` printed, str),
        ``skipped`` (theorems not checked because Flocq is missing, list of str), ``summary``
        (one line for people). Never raises for a missing or failing Coq: a failure is a
        result.

    Notes
    -----
    Takes about 5 s on a 2-core machine (four files and one ``Print Assumptions`` file, each
    theorem's output redirected to its own file so that no output is attributed to the wrong
    theorem). ``passed`` is True only if every file compiles, every theorem of
    :data:`COQ_THEOREMS` outside :data:`FLOCQ_FILES` prints exactly "Closed under the global
    context", and every axiom a theorem of those files prints is listed in FloatGrid.axioms.
    Without Flocq, those files are skipped (``skipped``, and the summary says so).

    Examples
    --------
    >>> check_coq(coqc="/nonexistent/coqc")["run"]
    False
    """
    started = time.monotonic()
    src = Path(source_dir) if source_dir is not None else COQ_DIR
    exe = shutil.which(coqc or "coqc")
    result: dict[str, Any] = {
        "run": False,
        "passed": None,
        "coq_version": None,
        "seconds": 0.0,
        "assumptions": {},
        "skipped": [],
        "summary": "",
    }

    def done(summary: str, **kw: Any) -> dict[str, Any]:
        result.update(kw, summary=summary, seconds=round(time.monotonic() - started, 2))
        return result

    if exe is None:
        return done(
            f"formal check (Coq) not run: {coqc or 'coqc'} not found on PATH (the Coq proofs in "
            "proofs/coq are checked by .ci/run)"
        )
    missing = [f for f in (*COQ_FILES, _ALLOWED_AXIOMS_FILE) if not (src / f).is_file()]
    if missing:
        return done(
            f"formal check (Coq) not run: {', '.join(missing)} not found in {src} (the Coq sources "
            "ship with the repository, not with the installed package)"
        )
    allowed = set((src / _ALLOWED_AXIOMS_FILE).read_text(encoding="utf-8").split())
    try:
        version = _run([exe, "--print-version"], src, timeout).stdout.split()
        result["coq_version"] = coq = version[0] if version else None
        with tempfile.TemporaryDirectory(prefix="specproof-coq-") as tmp:
            work = Path(tmp)
            flags = [*_COQ_FLAGS, "-Q", ".", "SpecProof"]
            probe = _probe(exe, flags, work, "From mathcomp Require Import ssreflect ssralg ssrnum.", timeout)
            if probe.returncode != 0:
                return done(
                    "formal check (Coq) not run: MathComp (ssreflect, algebra) is not installed for "
                    f"coqc {coq}: {_first_lines(probe.stderr, 2)}"
                )
            files = list(COQ_FILES)
            if _probe(exe, flags, work, "From Flocq Require Import Core.", timeout).returncode != 0:
                files = [f for f in files if f not in _FLOCQ_FILES]
                result["skipped"] = [t["name"] for t in COQ_THEOREMS if t["file"] in _FLOCQ_FILES]
            result["run"] = True
            for name in files:
                shutil.copyfile(src / name, work / name)
                out = _run([exe, *flags, name], work, timeout)
                if out.returncode != 0:
                    return done(
                        f"formal check (Coq {coq}) FAILED: coqc rejected {name}: "
                        f"{_first_lines(out.stderr + out.stdout)}",
                        passed=False,
                    )
            checked = [t for t in COQ_THEOREMS if t["file"] in files]
            lines = ["From SpecProof Require Import " + " ".join(Path(f).stem for f in files) + "."]
            lines += [f'Redirect "assume_{t["name"]}" Print Assumptions {t["name"]}.' for t in checked]
            (work / "CheckAssumptions.v").write_text("\n".join(lines) + "\n", encoding="utf-8")
            out = _run([exe, *flags, "CheckAssumptions.v"], work, timeout)
            if out.returncode != 0:
                return done(
                    f"formal check (Coq {coq}) FAILED: Print Assumptions did not run: "
                    f"{_first_lines(out.stderr + out.stdout)}",
                    passed=False,
                )
            for t in checked:
                printed = work / f"assume_{t['name']}.out"
                text = printed.read_text(encoding="utf-8").strip() if printed.is_file() else "(nothing printed)"
                result["assumptions"][t["name"]] = text
    except (OSError, subprocess.SubprocessError) as exc:
        return done(f"formal check (Coq) FAILED: {type(exc).__name__}: {exc}", passed=False)
    bad = []
    for t in checked:
        text = result["assumptions"][t["name"]]
        extra = [a for a in _axioms(text) if t["file"] not in _FLOCQ_FILES or a not in allowed]
        if text != _CLOSED and (extra or not text.startswith("Axioms:")):
            bad.append(f"{t['name']}: {', '.join(extra) or _first_lines(text, 2)}")
    if bad:
        return done(
            f"formal check (Coq {coq}) FAILED: not closed under the global context: " + "; ".join(bad), passed=False
        )
    closed = [t["name"] for t in checked if t["file"] not in _FLOCQ_FILES]
    flocq = [t["name"] for t in checked if t["file"] in _FLOCQ_FILES]
    summary = (
        f"formal check (Coq {coq}): proofs/coq compiled; Print Assumptions of {', '.join(closed)}: closed "
        "under the global context"
    )
    summary += (
        f"; {', '.join(flocq)} (Flocq): only the standard reals' axioms and classical logic"
        if flocq
        else f"; not checked, Flocq is not installed: {', '.join(result['skipped'])}"
    )
    return done(summary, passed=True)


def _coq_paragraph() -> str:
    info = formal_proof()
    lines = [
        f"\n\nMachine-checked in Coq ({info['sources']}; {info['prover']}), over {info['field']}. "
        f"{info['checked_by']} Generating this transcript does not run Coq. Not proved in Coq: "
        f"{info['not_proved']} The theorems:"
    ]
    lines += [f"- `{t['name']}` ({t['file']}): {t['says']}. `{t['statement']}`" for t in info["theorems"]]
    return "\n".join(lines)


def _every_v_record(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The every-V proof's record around its steps: their conclusion (proved when every step is verified), the
    statement and its assumptions, and the Coq proof of the same theorem."""
    ids = [s["id"] for s in steps]
    done = all(s["verified"] for s in steps)
    steps.append(
        {
            "id": "conclusion",
            "claim": "the emitted law equals p for every token and alpha = 1 - TV, for every V >= 1",
            "method": "conjunction of every step above",
            "uses": ids,
            "check": "all(verified: " + ", ".join(ids) + ")",
            "result": str(done),
            "verified": done,
        }
    )
    return {
        "schema": "specproof.symbolic-proof/1",
        "name": "lossless-every-v",
        "statement": "For every vocabulary size V >= 1 and all p, q with p_i, q_i >= 0 and "
        "sum_i p_i = sum_i q_i = 1, one verification step (draft x ~ q, accept with "
        "probability min(1, p(x)/q(x)), else emit a token from (p - q)+ / Z) emits a token "
        "whose law is exactly p, and its acceptance probability alpha = sum_i min(p_i, q_i) "
        "equals 1 - TV(p, q).",
        "assumptions": [
            "finite vocabulary: V is an integer, V >= 1 (a SymPy integer positive symbol)",
            "p_i and q_i are real with p_i >= 0 and q_i >= 0 for every token i",
            "sum_i p_i = 1 and sum_i q_i = 1 exactly",
            "a token with q_i = 0 is never drafted (its accept mass is 0)",
            "when Z = sum_i (p_i - q_i)+ = 0 the residual is never sampled",
            "a finite sum of non-negative terms is 0 only if every term is 0: not checked by SymPy, "
            "proved in Coq (lemma sum_nonneg_eq0 in proofs/coq/OnePosition.v, closed under the global context)",
        ],
        "sympy_version": sp.__version__,
        "steps": steps,
        "conclusion": (
            "Proved: for every V >= 1 the emitted law equals p (steps "
            "emitted-positive-residual and emitted-zero-residual) and alpha = 1 - TV "
            "(step tv)."
            if done
            else "Not proved: some step was not verified."
        )
        + _coq_paragraph(),
        "formal_proof": formal_proof(),
        "proved": done,
    }


def prove_every_v(checks: bool = True) -> dict:
    """Prove with SymPy that the verification step emits p, for every vocabulary size V.

    Parameters
    ----------
    checks : bool, default True
        Run every step's check. With False, nothing is reduced: each step holds the result a
        verified check writes, so the dict is the record a successful run returns (in well under
        a second, SymPy's import aside). A record that differs from it cannot equal a fresh run
        that proves everything, so ``specproof check`` rejects it without re-running the proof.

    Returns
    -------
    dict
        A JSON-ready document (str, bool, int, list and dict values only): ``schema``,
        ``name``, ``statement``, ``assumptions``, ``sympy_version``, ``steps`` (each with
        ``id``, ``claim``, ``method``, ``uses``, ``check`` = ``str`` of the SymPy expression
        checked, ``result`` = ``str`` of what SymPy reduced it to, ``verified``),
        ``conclusion`` (which also names the Coq theorems and their statements),
        ``formal_proof`` (:func:`formal_proof`: the Coq theorems that machine-check this
        statement and the chain) and ``proved`` (True iff every step is verified). The same
        dict on every call.

    Notes
    -----
    Every check runs at call time; a step SymPy cannot reduce is recorded with
    ``verified`` False (and ``proved`` False) rather than raising. Generic V is handled by
    ``Sum`` over ``IndexedBase`` p, q with a positive-integer symbol V: linearity merges
    the sums, the per-token lemma rewrites the summand, the normalization ``sum p = 1``
    (or ``sum q = 1``) is substituted; sums are never unrolled. Special cases: q(x) = 0
    (step ``accept-mass-zero``), Z = 0 i.e. p == q (step ``emitted-zero-residual``), V = 1
    (covered: V is any positive integer). Not checked by SymPy: that a finite sum of
    non-negative terms is 0 only if every term is (SymPy checks the terms' sign); it is the
    Coq lemma ``sum_nonneg_eq0``. Nothing here runs Coq: :func:`check_coq` does.

    References
    ----------
    Leviathan et al. 2023, Theorem 3.5 and Appendix A.1; Chen et al. 2023, Theorem 1.

    Examples
    --------
    >>> doc = prove_every_v()
    >>> doc["proved"], len(doc["steps"])
    (True, 14)
    """
    a, b, p, q = sp.symbols("a b p q", real=True)
    Z, alpha = sp.Symbol("Z", positive=True), sp.Symbol("alpha", nonnegative=True)
    t = sp.Symbol("t", nonnegative=True)
    pi, qi = _P[_I], _Q[_I]
    r_pq, r_qp, m_pq = sp.Max(pi - qi, 0), sp.Max(qi - pi, 0), sp.Min(pi, qi)
    alpha_v = _sum(m_pq)
    norm_p, norm_q = {_sum(pi): 1}, {_sum(qi): 1}
    split = "case split {}; each case: rewrite(Piecewise), piecewise_fold, simplify"
    linear = (
        "linearity of the finite sum plus the per-token lemma (per-token-lemma) applied to the "
        "summand: simplify merges the Sums, the summand is reduced with p[i], q[i] "
        "renamed a, b >= 0, then the normalization {} is substituted; never unrolled"
    )
    accept = sp.Piecewise((0, sp.Eq(q, 0)), (q * sp.Min(1, p / q), True))
    steps = []

    def add(sid, claim, method, uses, expr, cases=(), check=None):  # check: check_identity(expr, cases)
        run = check or (lambda: check_identity(expr, cases))
        steps.append(_step(sid, claim, method, uses, expr, run, None if checks else _verified_result(expr, cases)))

    e = sp.Min(a, b) + sp.Max(a - b, 0) - a
    add(
        "per-token-lemma",
        "min(a, b) + (a - b)+ = a for all real a, b >= 0",
        split.format("a >= b (a = b + t, t >= 0) / a < b (b = a + u, u > 0)"),
        [],
        e,
        _split(a, b),
    )
    e_b = q * sp.Min(1, p / q) - sp.Min(p, q)
    add(
        "accept-mass-positive",
        "q min(1, p/q) = min(p, q) for p >= 0, q > 0",
        split.format("p >= q (p = q + t, q > 0) / p < q (q = p + u, u > 0)"),
        [],
        e_b,
        _split(p, q, y_pos=True),
    )
    e_c = accept - sp.Min(p, q)
    add(
        "accept-mass-zero",
        "a token with q = 0 is never drafted, so its accept mass is 0 = "
        "min(p, 0) for p >= 0; with accept-mass-positive, accept(x) = min(p(x), q(x)) for every q(x) >= 0",
        "substitute q = 0, p >= 0 into the operational accept mass (0 where q = 0, "
        "q min(1, p/q) elsewhere) minus min(p, q); simplify",
        ["accept-mass-positive"],
        e_c,
        [("q = 0", {p: sp.Symbol("p", nonnegative=True), q: 0})],
    )
    e_d = sp.Abs(a - b) - sp.Max(a - b, 0) - sp.Max(b - a, 0)
    add(
        "abs-split",
        "|a - b| = (a - b)+ + (b - a)+ for all real a, b",
        split.format("a >= b (a = b + t) / a < b (b = a + u), a, b real"),
        [],
        e_d,
        _split(a, b, nonneg=False),
    )
    e_e1 = _sum(r_pq) + _sum(m_pq) - _sum(r_pq + m_pq)
    add(
        "sum-linearity",
        "sum_i (p_i - q_i)+ + sum_i min(p_i, q_i) = sum_i ((p_i - q_i)+ + min(p_i, q_i)) for every V >= 1",
        "simplify merges Sums with equal limits (linearity of the finite sum)",
        [],
        e_e1,
    )
    for sid, f, x in (("summand-p", r_pq + m_pq - pi, "p"), ("summand-q", r_qp + m_pq - qi, "q")):
        add(
            sid,
            f"the summand: ({x}[i] - {'q' if x == 'p' else 'p'}[i])+ + min(p[i], q[i]) = "
            f"{x}[i] for p[i], q[i] >= 0 (per-token-lemma with a = {x}[i])",
            split.format(f"{x}[i] >= other / {x}[i] < other as in per-token-lemma"),
            ["per-token-lemma"],
            f,
            _split(pi, qi) if x == "p" else _split(qi, pi),
        )
    e_e = _sum(r_pq) - (1 - alpha_v)
    add(
        "normalizer-p",
        "Z = sum_i (p_i - q_i)+ = 1 - alpha, alpha = sum_i min(p_i, q_i), for every V >= 1 given sum_i p_i = 1",
        linear.format("sum p = 1"),
        ["sum-linearity", "summand-p", "per-token-lemma"],
        e_e,
        check=lambda: check_sum_identity(e_e, norm_p),
    )
    e_f = _sum(r_qp) - (1 - alpha_v)
    add(
        "normalizer-q",
        "sum_i (q_i - p_i)+ = 1 - alpha for every V >= 1 given sum_i q_i = 1 (the symmetric case)",
        linear.format("sum q = 1"),
        ["sum-linearity", "summand-q", "per-token-lemma"],
        e_f,
        check=lambda: check_sum_identity(e_f, norm_q),
    )
    e_g = sp.Rational(1, 2) * _sum(sp.Abs(pi - qi)) - (1 - alpha_v)

    def tv_check():
        try:  # abs-split in the summand, split the Sum (linearity), then normalizer-p and normalizer-q
            split_abs = e_g.replace(sp.Abs, lambda x: sp.Max(x, 0) + sp.Max(-x, 0)).expand()
            r = sp.simplify(split_abs.subs({_sum(r_pq): 1 - alpha_v, _sum(r_qp): 1 - alpha_v}))
        except Exception as exc:  # noqa: BLE001
            r = sp.Symbol(f"error:{type(exc).__name__}")
        return str(r), r == 0

    add(
        "tv",
        "TV = 1/2 sum_i |p_i - q_i| = 1/2 (sum_i (p_i - q_i)+ + sum_i (q_i - p_i)+) = 1 - alpha, for every V >= 1",
        "replace |x| by (x)+ + (-x)+ in the summand (abs-split), split the Sum by linearity (expand), "
        "substitute normalizer-p and normalizer-q, simplify",
        ["abs-split", "normalizer-p", "normalizer-q"],
        e_g,
        check=tv_check,
    )
    e_h = sp.Min(a, b) + (1 - alpha) * sp.Max(a - b, 0) / Z - a
    add(
        "emitted-positive-residual",
        "if Z > 0: emitted(x) = accept(x) + (1 - alpha) "
        "(p(x) - q(x))+ / Z = min(p, q) + (p - q)+ = p(x), with a = p(x), b = q(x)",
        "substitute Z = 1 - alpha (e; the cancellation is valid as 1 - alpha = Z > 0), then "
        + split.format("a >= b / a < b as in per-token-lemma"),
        ["accept-mass-positive", "accept-mass-zero", "normalizer-p", "per-token-lemma"],
        e_h,
        [(n, {Z: 1 - alpha, **s}) for n, s in _split(a, b)],
    )
    e_n = sp.GreaterThan(sp.Max(a - b, 0), 0, evaluate=False)
    add(
        "residual-nonnegative",
        "(a - b)+ >= 0 for all real a, b >= 0, so Z = 0 forces (p(x) - q(x))+ = 0, i.e. p(x) <= q(x), for every token",
        split.format("as in per-token-lemma"),
        [],
        e_n,
        _split(a, b),
    )
    e_i, a_nn = sp.Min(a, b) - a, sp.Symbol("a", nonnegative=True)
    add(
        "emitted-zero-residual",
        "if Z = 0 (p == q; the residual is never sampled): "
        "emitted(x) = accept(x) = min(p, q) = p(x), since p(x) <= q(x)",
        "substitute b = a + t, t >= 0 (the case (a - b)+ = 0 left by the previous step); "
        "rewrite(Piecewise), piecewise_fold, simplify",
        ["residual-nonnegative", "accept-mass-positive", "accept-mass-zero", "per-token-lemma"],
        e_i,
        [("b = a + t", {a: a_nn, b: a_nn + t})],
    )
    return _every_v_record(steps)
