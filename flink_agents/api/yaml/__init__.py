"""YAML agents: declare agents, their actions and resources in a YAML file and load it with
``agents_env.load_yaml(path)`` (Apache Flink Agents' YAML API). See
:mod:`flink_agents.api.yaml.loader` and the schema in :mod:`flink_agents.api.yaml.specs`."""
