"""``python -m specproof``: the same as the ``specproof`` command."""

import sys

from specproof.cli import main

sys.exit(main())
