"""``python -m transformer_lab.selfcheck``: see :mod:`transformer_lab.selfcheck.cli`."""

import sys

from transformer_lab.selfcheck.cli import main

sys.exit(main())
