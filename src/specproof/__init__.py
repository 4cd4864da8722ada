"""specproof: exact laws and proofs for speculative-decoding verifiers.

The package, by role (read in this order):

- :mod:`specproof.laws`: the exact law of what a verifier emits (Fraction, SymPy) and its
  NumPy float mirror; outcome trees, chains, variants.
- :mod:`specproof.rules`: a verifier as data (accept test, coin, residual, float arithmetic,
  processing), its audit, and the lossless / float-faithful / lossy verdict.
- :mod:`specproof.trace`: the exact law of a real sampler's own code, by controlling its
  randomness; :mod:`specproof.testing` is its pytest API.
- :mod:`specproof.certify` (untrusted): certificates, the symbolic proof, the main job.
- :mod:`specproof.checker` (trusted, standard library only): re-verifies every certificate.
- :mod:`specproof.report`: transcripts, plots, LaTeX, rendered from what the checker re-derived.
- :mod:`specproof.models`: the real language models and the pairs they give (fixtures).
- :mod:`specproof.corpus`: exact acceptance along a text, and an engine's counters checked, in
  process or on Ray Data.
- :mod:`specproof.cli`: the ``specproof`` command, one module per subcommand.

``specproof.exact``, ``specproof.testing``, ``specproof.trace`` and ``specproof.checker`` are the
import paths users rely on. Importing :mod:`specproof` imports none of the heavy optional
dependencies (torch, transformers, Ray, numba).
"""

from specproof.errors import (
    BackendUnavailable,
    CrosscheckFailed,
    FloatNotExact,
    InvalidDistribution,
    InvalidOption,
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
    "InvalidOption",
    "BackendUnavailable",
]
