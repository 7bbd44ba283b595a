"""flink-agents: LLM agents inside Apache Flink streaming jobs, pure pip + PyFlink."""

__version__ = "0.1.0"
