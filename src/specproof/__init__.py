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

The names a user needs are at the top level (imported on first use, so ``import specproof`` stays
light: no torch, transformers, Ray or numba, and not even NumPy until a float function is used):

===============================  ============================================================
name                             what it is
===============================  ============================================================
``emitted_distribution(p, q)``   the seed's function: ``(dist, alpha)`` of the textbook verifier,
                                 float64, batched over ``[..., V]`` (:mod:`specproof.numeric`)
``acceptance_probability``,      alpha, TV(p, q) and the normalized residual ``(p - q)+``, float64
``tv_distance``, ``residual``
``exact``                        the same functions over ``fractions.Fraction``, exactly
                                 (:mod:`specproof.exact`); ``numeric`` is the float module
``compare(sampler, p, q)``       the exact law of YOUR sampler's code and its verdict: lossless,
                                 float-faithful or lossy (:mod:`specproof.testing`)
``assert_lossless``,             the same as pytest assertions; ``search_lossy`` finds the
``assert_law``, ``search_lossy``  smallest input on which a sampler is wrong
``SpecProofError`` and its       every error on bad input (a ``ValueError``)
subclasses
===============================  ============================================================

``specproof.exact``, ``specproof.numeric``, ``specproof.testing``, ``specproof.trace`` and
``specproof.checker`` are the import paths users rely on.

Examples
--------
>>> from specproof import emitted_distribution
>>> dist, alpha = emitted_distribution([0.5, 0.25, 0.25], [0.25, 0.5, 0.25])
>>> dist.tolist(), float(alpha)
([0.5, 0.25, 0.25], 0.75)
"""

from typing import Any

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

# name -> the module it is read from, on first use (PEP 562): the float path needs NumPy, the
# tracer's API imports the tracer; neither is paid for by ``import specproof`` or the CLI's start.
_LAZY = {
    "emitted_distribution": "specproof.numeric",
    "acceptance_probability": "specproof.numeric",
    "tv_distance": "specproof.numeric",
    "residual": "specproof.numeric",
    "compare": "specproof.testing",
    "assert_lossless": "specproof.testing",
    "assert_law": "specproof.testing",
    "search_lossy": "specproof.testing",
}
_SUBMODULES = ("exact", "numeric", "testing", "trace", "checker")

__all__ = [
    "__version__",
    "emitted_distribution",
    "acceptance_probability",
    "tv_distance",
    "residual",
    "exact",
    "numeric",
    "compare",
    "assert_lossless",
    "assert_law",
    "search_lossy",
    "SpecProofError",
    "InvalidDistribution",
    "FloatNotExact",
    "ResidualUndefined",
    "CrosscheckFailed",
    "InvalidOption",
    "BackendUnavailable",
]


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"specproof.{name}")
    else:
        raise AttributeError(f"module 'specproof' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_SUBMODULES))
