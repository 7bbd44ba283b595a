"""``python -m flink_agents.cli``: the same as the ``flink-agents`` console script."""

import sys

from flink_agents.cli._main import main

if __name__ == "__main__":
    sys.exit(main())
