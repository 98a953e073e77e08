"""`python -m knowledge_mcp`: the same CLI as the `knowledge-mcp` console script."""

import sys

from knowledge_mcp.server.cli import main

sys.exit(main())
