"""Public path of :mod:`specproof.trace.testing` (the pytest API), kept for users."""

from specproof.trace.testing import *  # noqa: F401,F403
from specproof.trace.testing import (
    __all__,  # noqa: F401
    __getattr__,  # noqa: F401,E402  (renamed names warn where they went)
)
