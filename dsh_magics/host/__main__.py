"""``python -m dsh_magics.host``: run a terminal host (see :mod:`.cli`)."""

import sys

from .cli import main

sys.exit(main())
