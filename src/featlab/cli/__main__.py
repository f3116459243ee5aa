"""``python -m featlab.cli``: the same as the ``featlab`` command."""

import sys

from . import main

sys.exit(main())
