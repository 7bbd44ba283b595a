"""SQL for agents: ``CREATE TOOL`` / ``CREATE AGENT`` / ``CREATE CONNECTION``, the agent
catalog, and ``agent_run(...)`` over tables.

The statements follow the FLIP-548 draft (agent and tool resources in Flink SQL). Run them
through the Flink agents environment::

    agents_env = AgentsExecutionEnvironment.get_execution_environment(env, t_env)
    agents_env.execute_sql("CREATE FUNCTION get_weather AS 'udfs.get_weather' LANGUAGE PYTHON")
    agents_env.execute_sql("CREATE TOOL weather USING FUNCTION get_weather")
    agents_env.execute_sql("CREATE AGENT helper USING MODEL gpt USING PROMPT 'Be brief.' "
                           "USING TOOLS weather")
    agents_env.execute_sql("INSERT INTO answers SELECT * FROM agent_run("
                           "INPUT => TABLE questions PARTITION BY user_id, "
                           "AGENT => AGENT helper, COL => DESCRIPTOR(question))")

or as a script: ``flink-agents sql -f script.sql``. This package holds the parts without
PyFlink (parser, catalog, options, the agent); :mod:`flink_agents.runtime.flink.sql` the
parts that talk to Flink.
"""

from flink_agents.sql.catalog import (
    AgentCatalog,
    CatalogAgent,
    CatalogConnection,
    CatalogTool,
    ObjectIdentifier,
)
from flink_agents.sql.result import SqlResult

__all__ = [
    "AgentCatalog",
    "CatalogAgent",
    "CatalogConnection",
    "CatalogTool",
    "ObjectIdentifier",
    "SqlResult",
]
