"""specproof: exact laws and proofs for speculative-decoding verifiers.

Submodules: :mod:`specproof.laws.exact` (Fraction), :mod:`specproof.laws.symbolic` (SymPy),
:mod:`specproof.laws.numeric` (NumPy floats, batched), :mod:`specproof.laws.rational` (the exact
boundary), :mod:`specproof.certify.crosscheck` (float path against the exact law).
"""

from specproof.errors import (
    CrosscheckFailed,
    FloatNotExact,
    InvalidDistribution,
    ResidualUndefined,
    SpecProofError,
)

__version__ = "0.1.0"

__all__ = [
    "__version__",
    "SpecProofError",
    "InvalidDistribution",
    "FloatNotExact",
    "ResidualUndefined",
    "CrosscheckFailed",
]
