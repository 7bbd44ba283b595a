"""The Python path of Flink's Python workers (``python.pythonpath``), built in one place.

Used by the Flink environment (:mod:`flink_agents.runtime.flink.environment`, for jobs it
builds) and by the local standalone cluster (:mod:`flink_agents.ops.cluster`, for its
configuration). Importable without PyFlink.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable


def worker_python_path(extra: Iterable[str] = ()) -> list[str]:
    """The directories the Python workers need on their path, in order, each once.

    The rules, and why each exists:

    1. ``extra`` first: paths the user configured (``python.pythonpath``) win.
    2. The folder holding the ``flink_agents`` package: a source checkout or an editable
       install is found through a ``.pth`` file or an import hook, which thread-mode workers
       (CPython embedded by pemja) do not process (``No module named 'flink_agents'``).
    3. The current directory: plans name functions by module (``examples.x:fn``), importable
       from where the job was started, and a console script does not put the current
       directory on ``sys.path``.
    4. Every other directory on this interpreter's ``sys.path``: its ``site-packages``
       (thread mode does not find the venv's on its own: ``No module named 'pemja'``), the
       script's folder, and folders added by ``PYTHONPATH`` or ``.pth`` files.
    5. But not the standard library (``lib/pythonX.Y``, ``lib-dynload``): the workers'
       interpreter brings its own. A ``site-packages`` inside it (a system Python's) stays.
    6. Only existing directories (``pythonXY.zip`` and missing entries are left out), as
       absolute paths: a relative entry means this process's directory, not the workers'.

    Args:
        extra: configured paths to put first.

    Returns:
        Absolute directory paths.
    """
    import flink_agents

    root = os.path.dirname(os.path.dirname(os.path.abspath(flink_agents.__file__)))
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    paths: list[str] = []
    for path in [*extra, root, os.getcwd(), *sys.path]:
        if not path or not os.path.isdir(path):
            continue
        absolute = os.path.abspath(path)
        if os.path.realpath(absolute).startswith(stdlib) and "site-packages" not in absolute:
            continue
        if absolute not in paths:
            paths.append(absolute)
    return paths
