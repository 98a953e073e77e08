"""`python -m knowledge_mcp.server.cli`: the same CLI as `python -m knowledge_mcp`."""

import sys

from . import main

sys.exit(main())
