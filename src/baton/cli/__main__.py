"""`python -m baton.cli`: the `baton` command."""

import sys

from baton.cli.main import main

sys.exit(main())
