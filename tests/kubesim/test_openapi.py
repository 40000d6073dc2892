"""``/openapi/v3`` and ``/openapi/v2``: well-formed OpenAPI documents that tell kubectl the server validates
fields itself and let ``kubectl explain`` find each kind."""

import json
import urllib.request

import pytest
from openapi_spec_validator import validate

from kubesim.resources import KINDS


def fetch(kubesim, path, accept="application/json"):
    request = urllib.request.Request(kubesim.url + path, headers={"Accept": accept})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def test_the_v3_index_names_one_document_per_group_version(kubesim):
    index = fetch(kubesim, "/openapi/v3")["paths"]
    assert set(index) == {"api/v1", "apis/scheduling.k8s.io/v1", "apis/admissionregistration.k8s.io/v1",
                          "apis/coordination.k8s.io/v1", "apis/policy/v1", "apis/storage.k8s.io/v1", "apis/batch/v1",
                          "apis/apps/v1", "apis/rbac.authorization.k8s.io/v1",
                          "apis/authorization.k8s.io/v1"}
    for group_version, entry in index.items():
        assert entry["serverRelativeURL"].startswith(f"/openapi/v3/{group_version}?hash=")


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.plural)
def test_each_kind_has_a_schema_and_a_patch_that_takes_field_validation(kubesim, kind):
    group_version = f"apis/{kind.group}/{kind.version}" if kind.group else f"api/{kind.version}"
    url = fetch(kubesim, "/openapi/v3")["paths"][group_version]["serverRelativeURL"]
    document = fetch(kubesim, url)
    validate(document)
    gvk = {"group": kind.group, "version": kind.version, "kind": kind.kind}
    schemas = [s for s in document["components"]["schemas"].values()
               if gvk in s.get("x-kubernetes-group-version-kind", [])]
    assert len(schemas) == 1 and {"apiVersion", "kind", "metadata"} <= set(schemas[0]["properties"])
    patches = [item["patch"] for item in document["paths"].values()
               if item.get("patch", {}).get("x-kubernetes-group-version-kind") == gvk]
    assert len(patches) == 1
    assert {"name": "fieldValidation", "in": "query"}.items() <= next(
        p for p in patches[0]["parameters"] if p["name"] == "fieldValidation").items()
    # Strategic merge is not advertised: kubectl then builds it from its own types (see kubesim/openapi.py).
    assert set(patches[0]["requestBody"]["content"]) == {"application/json-patch+json", "application/merge-patch+json"}


def test_unknown_group_versions_are_not_found(kubesim):
    with pytest.raises(urllib.error.HTTPError) as missing:
        fetch(kubesim, "/openapi/v3/apis/networking.k8s.io/v1")
    assert missing.value.code == 404


def test_v2_is_one_swagger_document_in_json(kubesim):
    document = fetch(kubesim, "/openapi/v2")
    validate(document)
    assert document["swagger"] == "2.0"
    assert {"io.k8s.api.core.v1.Pod", "io.k8s.api.scheduling.v1.PriorityClass"} <= set(document["definitions"])


def test_write_requests_accept_the_field_validation_parameter(core):
    created = core.create_namespaced_config_map("default", {"metadata": {"name": "cm"}}, field_validation="Strict",
                                                field_manager="kubectl-create")
    patched = core.patch_namespaced_config_map("cm", "default", {"data": {"a": "1"}}, field_validation="Strict")
    assert created.metadata.name == "cm" and patched.data == {"a": "1"}
