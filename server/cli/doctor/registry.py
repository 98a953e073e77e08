"""The checks `knowledge-mcp doctor` runs, in the order their lines are shown.

To add a check: write `async def check_something(ctx: Context) -> list[Finding]` in a module of
this package (it must not change anything; a problem is a `fail` finding with a `fix`, never an
exception) and list it here. A check of each source database goes in
`stores.DATABASE_CHECKS` instead; a PostgreSQL one after `check_postgres`.
"""

from __future__ import annotations

from .checks import check_config, check_data_dir, check_model, check_postgres, check_version
from .findings import Check
from .host_links import check_hosts
from .stores import check_sources

CHECKS: tuple[Check, ...] = (
    check_version,
    check_config,
    check_data_dir,  # finds the users the next check reads
    check_sources,
    check_model,
    check_postgres,
    check_hosts,
)
