"""flink-agents: LLM agents inside Apache Flink streaming jobs, pure pip + PyFlink."""

import logging as _logging

__version__ = "0.1.0"


class _BeamOptionalFileSystems(_logging.Filter):
    """Drops apache-beam's import-time notice about optional file systems it cannot load.

    PyFlink's Python runtime is apache-beam, which tries to import its GCS file system when a
    ``google.cloud`` package exists; one of our optional dependencies (mem0ai, through
    googleapis-common-protos) creates that namespace without ``google.cloud.storage``, so
    every job printed "Failed to import GCSFileSystem" although no job uses GCS. Other beam
    messages pass.
    """

    def filter(self, record: _logging.LogRecord) -> bool:
        return not str(record.msg).startswith("Failed to import GCSFileSystem")


_logging.getLogger("apache_beam.io.filesystems").addFilter(_BeamOptionalFileSystems())
