"""``python -m specproof``: the same as the ``specproof`` command."""

import sys

from .cli import main

sys.exit(main())
