"""Apache Flink Agents 0.3.1's own public-API unit tests pass against this package (see
``upstream_sdist.py``: downloaded at test time, nothing of upstream kept here)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.compat import upstream_sdist as up

ROOT = Path(__file__).resolve().parents[2]

CONFTEST = '''"""Ours: upstream's tests run as they are; no fixtures needed."""
'''


def _run(tmp_path: Path) -> dict[str, str]:
    files = up.extract(up.sdist(), tmp_path, up.FILES)
    (tmp_path / "conftest.py").write_text(CONFTEST)
    report = tmp_path / "report.xml"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            f"--junitxml={report}",
            *map(str, files),
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        path = Path(case.get("classname", "").replace(".", "/") + ".py")
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = f"failed: {(child.get('message') or '')[:300]}"
            elif child.tag == "skipped":
                outcome = "skipped"
        outcomes[up.test_id(path, case.get("name", ""))] = outcome
    return outcomes


def test_upstream_public_api_tests_pass_but_the_listed_differences(tmp_path):
    outcomes = _run(tmp_path)
    # Every file ran (a collection error would leave a file without tests).
    assert {k.split("::")[0] for k in outcomes} == set(up.FILES)
    unexpected = {k: v for k, v in outcomes.items() if v != "passed" and k not in up.DIFFERENCES}
    assert not unexpected, "upstream tests failing here:\n" + "\n".join(
        f"{k}: {v}" for k, v in sorted(unexpected.items())
    )
    now_passing = [k for k in up.DIFFERENCES if outcomes.get(k) == "passed"]
    assert not now_passing, f"these pass now: remove them from DIFFERENCES: {now_passing}"
    missing = [k for k in up.DIFFERENCES if k not in outcomes]
    assert not missing, f"DIFFERENCES names tests that do not exist: {missing}"
    passed = sum(v == "passed" for v in outcomes.values())
    print(f"upstream {up.VERSION} tests: {passed} of {len(outcomes)} pass")  # noqa: T201
    assert passed == len(outcomes) - len(up.DIFFERENCES)


def test_the_differences_are_documented():
    page = (ROOT / "docs" / "migrating.md").read_text()
    for test in up.DIFFERENCES:
        assert test.split("::")[1] in page, f"{test} is not in docs/migrating.md"
