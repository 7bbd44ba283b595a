"""User-facing API of flink-agents (names follow Apache Flink Agents' Python API)."""
