"""``python -m udfs.llm.serving start|stop|status``: the command line of ``udfs.llm.serving.cli``."""

import os
import sys

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

from udfs.llm.serving.cli import main

sys.exit(main())
