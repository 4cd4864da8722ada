"""Public path of :mod:`specproof.laws.numeric` (the NumPy float path), kept for users.

``specproof.numeric`` was the float path's home before the package was grouped by role; it stays the
import path users rely on, beside :mod:`specproof.exact`, with the same function names and argument
order.
"""

from specproof.laws.numeric import *  # noqa: F401,F403
from specproof.laws.numeric import __all__  # noqa: F401
