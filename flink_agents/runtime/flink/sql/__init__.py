"""The SQL statement layer on the Flink host: Flink's catalogs, ``agent_run`` views, scripts.

See :mod:`flink_agents.sql` for the statements and the agent catalog (no PyFlink there).
"""

from flink_agents.runtime.flink.sql.session import (
    CATALOG_DIR,
    ScriptStep,
    SqlSession,
    remote_environment,
    sql_session,
)

__all__ = ["CATALOG_DIR", "ScriptStep", "SqlSession", "remote_environment", "sql_session"]
