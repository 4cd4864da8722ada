"""Public path of :mod:`specproof.laws.exact` (the exact core over Fractions), kept for users."""

from specproof.laws.exact import *  # noqa: F401,F403
from specproof.laws.exact import __all__  # noqa: F401
