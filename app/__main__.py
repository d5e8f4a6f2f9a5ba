"""`python -m app` runs the same entry point as the `delegate-scope` command."""

import sys

from app.cli.main import main

sys.exit(main())
