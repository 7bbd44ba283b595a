"""The ``flink-agents`` command.

Commands::

    flink-agents plan module:attr [-o plan.json] [--config key=value ...]
                                  [--resources module:function[:args]]
    flink-agents run module:attr --input in.jsonl --output out.jsonl [--key-field id]
                                 [--config key=value ...] [--resources module:function[:args]]
                                 [--batch-size N] [--no-progress]
    flink-agents cluster start|stop|status [--workdir DIR] [--port P] [--slots N]
                                          [--taskmanagers N] [--flink-config key=value ...]
    flink-agents submit job.py [--cluster DIR | --jobmanager host:port] [--detached] [-p N]
                               [--from-savepoint PATH] [job arguments ...]
    flink-agents stop JOB_ID --savepoint DIR [--jobmanager host:port | --cluster DIR]
    flink-agents sql -f script.sql | -e 'statements' [--jobmanager host:port]  (cli/_sql.py)

``module:attr`` names the agent: an :class:`~flink_agents.api.agents.agent.Agent` instance,
an ``Agent`` subclass (instantiated without arguments) or a function without arguments that
returns an agent. ``module`` is an importable module (the current directory is on the path)
or a ``path/to/file.py``; ``attr`` may be dotted (``module:Factory.build``).

``--resources module:function[:args]`` names a function returning ``{name: resource}``
(``ResourceDescriptor``, ``Prompt``, ``Tool`` or a tool function) that is added to the
environment, e.g. ``examples.workflow_single_agent:model_resources:scripted`` for the seed
example (``:local`` for the real local LLM, when it is installed). ``args`` is a comma
separated list of arguments given to the function: ``key=value`` items are keyword
arguments, other items positional (all strings). ``attr`` may also be a dict of resources
itself. The option may be repeated.

``--config key=value`` sets a configuration option (``max-retries=5``,
``error-handling-strategy=retry``) or a free key actions read through ``ctx.config``; the
value is parsed as JSON when it is valid JSON (``3``, ``true``, ``["a"]``), else kept as a
string. Options are checked by their type.

``run`` reads the whole JSONL input first (so a bad line stops it before any model is
called), then runs the agent in the local environment in batches of ``--batch-size``
records, all on one :class:`~flink_agents.runtime.local.runner.LocalRunner` (one event
loop, one thread pool); different keys of a batch run concurrently, records of one key in
input order, and short-term memory of a key persists across batches. Each input line gives
zero or more output lines ``{"key": ..., "output": ...}`` in input order (pydantic outputs
as JSON objects). The key is the value of ``--key-field`` in each record, or else the record's
line number (each record its own key).

``cluster`` and ``submit`` delegate to :mod:`flink_agents.ops.cluster` (a standalone cluster run
from the installed PyFlink wheel, jobs submitted with ``flink run -py``). The cluster lives
in a work directory: ``--workdir`` / ``--cluster``, else ``$FLINK_AGENTS_CLUSTER_DIR``, else
``~/.flink-agents/cluster``, so ``start``, ``submit`` and ``stop`` find the same cluster.
Arguments after the job file go to the job (after ``--`` when they start with a dash:
``flink-agents submit job.py --cluster DIR -- --output out.jsonl``).

Exit codes: 0 success; 2 usage errors (bad arguments, a ``module:attr`` that cannot be
imported or is not an agent, a missing or malformed input file, a bad ``--config``
value); 1 failures of the agent or the job (plan validation, a failing action, a cluster
command or job that failed). Errors are printed to stderr as one message; ``--debug`` adds the
traceback and log output. Commands report errors by raising
:class:`~flink_agents.errors.UsageError` or :class:`~flink_agents.errors.CommandFailure`
(whose ``exit_code`` is the process's).

Modules: ``_loading`` (``module:attr`` references, ``--resources``, ``--config``, the
environment and plan), ``_run`` (``plan`` and ``run``, with their file I/O), ``_cluster``
(``cluster`` and ``submit``), ``_parser`` (the argument parser), ``_main`` (:func:`main`).
"""

from flink_agents.cli._main import main

__all__ = ["main"]
