"""deploy/kubernetes/ against the Flink Kubernetes Operator's CRD schemas, offline.

The CRDs are copied from the operator's repository (apache/flink-kubernetes-operator, tag
release-1.15.0, helm/flink-kubernetes-operator/crds/) into tests/data, named by version.
Kubernetes prunes fields a structural schema does not know instead of refusing them, so a
misspelt field would silently do nothing: the schemas are made strict here (no field the
CRD does not declare, except where it preserves unknown fields). The manifests must also
fit together: the claim they mount exists, the job script is in the image, the session
job names its cluster, and flinkVersion matches the image's FLINK_VERSION.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

#: libyaml's loader where there is one (the deployment CRD is 540 kB: 4 s in pure Python).
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy" / "kubernetes"
OPERATOR = "1.15.0"
CRDS = REPO / "tests" / "data" / f"flink-kubernetes-operator-{OPERATOR}"
#: The flinkVersion values operator 1.15 knows, for our supported Flink versions.
OPERATOR_FLINK_VERSIONS = {"1.20": "v1_20", "2.0": "v2_0", "2.1": "v2_1", "2.2": "v2_2"}


def _strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` on every object that declares its
    properties and does not preserve unknown fields."""
    if isinstance(schema, dict):
        schema = {k: _strict(v) for k, v in schema.items()}
        if (
            "properties" in schema
            and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the strict schema of the whole resource."""
    found = {}
    for path in sorted(CRDS.glob("*.yml")):
        crd = yaml.load(path.read_text(), Loader=LOADER)
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            schema = _strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
            schema["properties"].update(
                apiVersion={"const": f"{group}/{version['name']}"},
                kind={"const": kind},
                metadata={"type": "object"},
            )
            schema["required"] = ["apiVersion", "kind", "metadata", "spec"]
            found[(f"{group}/{version['name']}", kind)] = schema
    return found


SCHEMAS = _schemas()
#: One validator per resource kind (``jsonschema.validate`` checks the schema itself on
#: every call: seconds for the deployment CRD); the schemas are checked once, below.
VALIDATORS = {key: jsonschema.Draft7Validator(schema) for key, schema in SCHEMAS.items()}


def validate(doc: dict[str, Any]) -> None:
    VALIDATORS[(doc["apiVersion"], doc["kind"])].validate(doc)


def _documents() -> list[tuple[str, dict[str, Any]]]:
    return [
        (path.name, doc)
        for path in sorted(DEPLOY.glob("*.yaml"))
        for doc in yaml.load_all(path.read_text(), Loader=LOADER)
        if doc
    ]


def _flink(docs: list[tuple[str, dict[str, Any]]], kind: str) -> list[dict[str, Any]]:
    return [d for _, d in docs if d["kind"] == kind]


def test_the_crds_of_the_named_operator_version_are_there() -> None:
    assert set(SCHEMAS) == {
        ("flink.apache.org/v1beta1", "FlinkDeployment"),
        ("flink.apache.org/v1beta1", "FlinkSessionJob"),
    }
    for schema in SCHEMAS.values():
        jsonschema.Draft7Validator.check_schema(schema)


@pytest.mark.parametrize("name_and_doc", _documents(), ids=lambda nd: f"{nd[0]}:{nd[1]['kind']}")
def test_each_operator_resource_validates_against_its_crd(name_and_doc) -> None:
    _, doc = name_and_doc
    if doc["kind"] == "PersistentVolumeClaim":
        assert doc["apiVersion"] == "v1" and doc["spec"]["accessModes"] == ["ReadWriteMany"]
        return
    validate(doc)


def test_a_misspelt_or_wrong_field_is_refused() -> None:
    """The strict schemas can fail: an unknown field, a bad enum value, a wrong type."""
    (app,) = _flink(_documents(), "FlinkDeployment")[:1]
    for change in (
        lambda d: d["spec"]["job"].update(upgradeMod="savepoint"),
        lambda d: d["spec"]["job"].update(upgradeMode="on-savepoint"),
        lambda d: d["spec"].update(flinkVersion="v2_3"),  # operator 1.15 knows up to v2_2
        lambda d: d["spec"]["job"].update(parallelism="two"),
    ):
        broken = copy.deepcopy(app)
        change(broken)
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)


def test_jobs_upgrade_with_savepoints_in_the_shared_volume() -> None:
    docs = _documents()
    claims = {
        d["metadata"]["name"]
        for d in (doc for _, doc in docs)
        if d["kind"] == "PersistentVolumeClaim"
    }
    jobs = [d["spec"]["job"] for _, d in docs if "job" in d.get("spec", {})]
    assert len(jobs) == 2 and all(j["upgradeMode"] == "savepoint" for j in jobs)
    for deployment in _flink(docs, "FlinkDeployment"):
        conf = deployment["spec"]["flinkConfiguration"]
        pod = deployment["spec"]["podTemplate"]["spec"]
        (volume,) = pod["volumes"]
        assert volume["persistentVolumeClaim"]["claimName"] in claims
        (mount,) = pod["containers"][0]["volumeMounts"]
        assert mount["name"] == volume["name"]
        for key in ("execution.checkpointing.dir", "execution.checkpointing.savepoint-dir"):
            assert conf[key].startswith(f"file://{mount['mountPath']}/"), key
        assert conf["kubernetes.operator.savepoint.format.type"] == "CANONICAL"


def test_the_manifests_fit_the_image_and_each_other() -> None:
    docs = _documents()
    dockerfile = (REPO / "docker" / "Dockerfile").read_text()
    sessions = {
        d["metadata"]["name"] for d in _flink(docs, "FlinkDeployment") if "job" not in d["spec"]
    }
    images = {}
    for deployment in _flink(docs, "FlinkDeployment"):
        spec = deployment["spec"]
        version = spec["image"].rsplit(":", 1)[1]
        images[deployment["metadata"]["name"]] = version
        minor = ".".join(version.split(".")[:2])
        assert spec["flinkVersion"] == OPERATOR_FLINK_VERSIONS[minor], spec["image"]
        conf = spec["flinkConfiguration"]
        assert conf["kubernetes.entry.path"] in dockerfile.replace(
            "./docker/", "/opt/flink-agents/docker/"
        ) or (conf["kubernetes.entry.path"] == "/opt/flink-agents/docker/entrypoint.sh")
        assert 'ENTRYPOINT ["/opt/flink-agents/docker/entrypoint.sh"]' in dockerfile
    for _, doc in docs:
        job = doc.get("spec", {}).get("job")
        if not job:
            continue
        assert job["entryClass"] == "org.apache.flink.client.python.PythonDriver"
        script = job["args"][job["args"].index("-py") + 1]
        assert script.startswith("/opt/flink-agents/examples/")
        assert (REPO / script.removeprefix("/opt/flink-agents/")).is_file(), script
        if doc["kind"] == "FlinkDeployment":
            assert job["jarURI"] == "local:///opt/flink-agents/lib/flink-python.jar"
            assert "/opt/flink-agents/lib/flink-python.jar" in dockerfile
        else:
            assert doc["spec"]["deploymentName"] in sessions
            version = images[doc["spec"]["deploymentName"]]
            assert re.fullmatch(
                rf"https://repo1\.maven\.org/maven2/org/apache/flink/flink-python/{re.escape(version)}/flink-python-{re.escape(version)}\.jar",
                job["jarURI"],
            ), job["jarURI"]


@pytest.mark.parametrize("minor", sorted(OPERATOR_FLINK_VERSIONS))
def test_every_supported_flink_but_2_3_has_an_operator_flink_version(minor: str) -> None:
    (app,) = _flink(_documents(), "FlinkDeployment")[:1]
    changed = copy.deepcopy(app)
    changed["spec"]["flinkVersion"] = OPERATOR_FLINK_VERSIONS[minor]
    validate(changed)


def test_jvm_flags_are_those_of_the_docker_image() -> None:
    """The docker config covers every supported Flink distribution's JDK 17 flags
    (tests/docker/test_compose.py, run on each version); the pods get the same."""
    docker = yaml.safe_load((REPO / "docker" / "config.yaml").read_text())
    flags = set(docker["env.java.opts.all"].split())
    assert "--add-exports=java.base/sun.net.util=ALL-UNNAMED" in flags  # 1.20's, 2.0's
    for deployment in _flink(_documents(), "FlinkDeployment"):
        conf = deployment["spec"]["flinkConfiguration"]
        assert set(conf["env.java.opts.all"].split()) == flags
