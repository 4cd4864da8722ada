"""Tracing: the exact law of a real sampler's own code, by controlling its randomness.

:mod:`~specproof.trace.tracer` (the tracer: every random number under control, thresholds read
or searched; its parts :mod:`~specproof.trace.core`, :mod:`~specproof.trace.explore`,
:mod:`~specproof.trace.sources` (one module per randomness source) and :mod:`~specproof.trace.control`
(no verdict from uncontrolled randomness)), :mod:`~specproof.trace.testing` (``compare``, ``assert_lossless``,
``search_lossy``: the pytest API), :mod:`~specproof.trace.conformance` (statistical tests of an
engine's output against the exact law), :mod:`~specproof.trace.adapters` (engines' own
verifiers). ``specproof.trace`` exports the tracer's public names, as it did when it was one
module.
"""

from specproof.trace.tracer import *  # noqa: F401,F403
from specproof.trace.tracer import (
    __all__,  # noqa: F401
    __getattr__,  # noqa: F401,E402  (renamed names warn where they went)
)
