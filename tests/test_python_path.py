"""The Python workers' path (``python.pythonpath``): one builder, its rules one by one."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import flink_agents
from flink_agents._python_path import worker_python_path

STDLIB = os.path.realpath(os.path.dirname(os.__file__))
ROOT = str(Path(flink_agents.__file__).resolve().parent.parent)


def test_rules_in_order(tmp_path, monkeypatch):
    extra = tmp_path / "extra"
    cwd = tmp_path / "cwd"
    venv_site = tmp_path / "venv" / "lib" / "site-packages"
    pth_dir = tmp_path / "from_a_pth_file"
    relative = cwd / "relative"
    for folder in (extra, cwd, venv_site, pth_dir, relative):
        folder.mkdir(parents=True)
    (tmp_path / "python311.zip").write_bytes(b"")
    # A site-packages inside the standard library folder (a system Python's) stays; the
    # standard library itself and lib-dynload do not.
    system_site = tmp_path / "site-packages"
    system_site.symlink_to(os.path.join(STDLIB, "json"))
    stdlib_link = tmp_path / "stdlib_link"
    stdlib_link.symlink_to(STDLIB)
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(
        sys,
        "path",
        [
            "",
            str(tmp_path / "python311.zip"),
            STDLIB,
            os.path.join(STDLIB, "lib-dynload"),
            str(stdlib_link),
            str(venv_site),
            str(system_site),
            "relative",
            str(pth_dir),
            str(tmp_path / "missing"),
            str(venv_site),
        ],
    )

    paths = worker_python_path([str(extra), str(tmp_path / "missing-extra"), str(extra)])

    assert paths == [
        str(extra),  # configured extras first
        ROOT,  # the folder holding flink_agents (editable installs)
        str(cwd),  # where the job was started
        str(venv_site),
        str(system_site),
        str(relative),  # made absolute
        str(pth_dir),
    ]


def test_this_interpreter_gives_its_site_packages_and_no_stdlib():
    paths = worker_python_path()
    assert paths[0] == ROOT
    assert any(p.endswith("site-packages") for p in paths)
    assert all(os.path.isabs(p) and os.path.isdir(p) for p in paths)
    assert not any(
        os.path.realpath(p).startswith(STDLIB) and "site-packages" not in p for p in paths
    )
    assert len(paths) == len(set(paths))


def test_the_cluster_configures_the_same_path(tmp_path):
    from flink_agents.ops import cluster

    cluster._write_config(
        tmp_path,
        tmp_path,  # a Flink home without log4j files to copy
        port=8081,
        slots=1,
        taskmanagers=1,
        java_opts=(),
        extra_config=None,
    )
    config = (tmp_path / "conf" / "config.yaml").read_text(encoding="utf-8")
    expected = os.pathsep.join(worker_python_path())
    assert f'python.pythonpath: "{expected}"' in config
