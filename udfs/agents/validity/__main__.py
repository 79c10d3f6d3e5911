"""``python -m udfs.agents.validity``: the validity agent's command (:mod:`udfs.agents.validity.cli`)."""

import sys

from udfs.agents.validity.cli import main

sys.exit(main())
