"""Operating Flink for agent jobs, as a library (the CLI's ``cluster``, ``submit``, ``stop``,
``jobs`` commands call it):

- :mod:`.cluster`: a local standalone cluster from the PyFlink wheel's own Flink
  distribution, and ``flink run`` submission to it or to any JobManager;
- :mod:`.jobs`: running jobs through Flink's REST API: stop with a savepoint, cancel,
  checkpoints.
"""
