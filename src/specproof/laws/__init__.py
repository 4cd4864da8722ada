"""Laws: the exact law of what a verifier emits, and its float mirror.

:mod:`~specproof.laws.rational` (the exact boundary: floats in, Fractions out),
:mod:`~specproof.laws.exact` (one position over Fractions), :mod:`~specproof.laws.symbolic`
(SymPy, every V), :mod:`~specproof.laws.numeric` (NumPy floats, batched),
:mod:`~specproof.laws.outcome` (outcome trees and blocks), :mod:`~specproof.laws.chain`
(chain verification with gamma drafts), :mod:`~specproof.laws.variants` (multi-draft, token
trees, block verification, typical acceptance), :mod:`~specproof.laws.relaxed` (relaxed
acceptance).
"""
