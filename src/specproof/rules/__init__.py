"""Rules: what a verifier computes, as data, and the audit of a rule.

:mod:`~specproof.laws.floats` (IEEE binary16, bfloat16, binary32, binary64, exactly),
:mod:`~specproof.rules.policy` (a rule: accept test, coin, residual, arithmetic, processing; logits as an
input), :mod:`~specproof.rules.libm` (a library's own log, exp, softmax and cumulative sum, evaluated as data),
:mod:`~specproof.rules.audit` (the exact law of a rule at one position and over a block),
:mod:`~specproof.rules.degenerate` (what a rule emits on NaN, infinite and all-zero rows),
:mod:`~specproof.rules.faithful` (the float-ideal family and the lossless / float-faithful /
lossy verdict).
"""
