"""Port of upstream's test/e2e/configmap/configmap_test.go (suite: configmap_suite_test.go; BeforeEach saves the
configmap, AfterEach restores it). testdata/ holds upstream's test/e2e/testdata files byte for byte.

Upstream's invalid-name specs expect the configmap update itself to be refused: the admission controller's
validating webhook does it, asking the scheduler. Those specs run the ``yunikorn-admission-controller``
command beside the scheduler, and kubesim calls its webhook."""

from __future__ import annotations

import base64
import gzip
import json
import pathlib

import pytest
import yaml
from kubernetes import client as k8s

from tests.upstream.framework import CONFIG_MAP, POLICY_GROUP

TESTDATA = pathlib.Path(__file__).parent / "testdata"
GO_FIELDS = {"name": "Name", "queues": "Queues", "submitacl": "SubmitACL", "adminacl": "AdminACL",
             "parent": "Parent", "properties": "Properties", "placementrules": "PlacementRules",
             "resources": "Resources", "maxapplications": "MaxApplications", "limits": "Limits",
             "childtemplate": "ChildTemplate", "nodesortpolicy": "NodeSortPolicy", "preemption": "Preemption"}


@pytest.fixture
def old_config_map(yk):
    old = yk.kube.get_config_map(CONFIG_MAP, yk.configmaps.namespace)
    assert old is not None
    yield old
    yk.configmaps.restore(old)


def get_config_map_obj(path: pathlib.Path) -> dict:
    return yaml.safe_load(path.read_text())


def update_config_map(yk, body: dict):
    body = {**body, "metadata": {**body.get("metadata", {}), "name": CONFIG_MAP, "namespace": yk.configmaps.namespace}}
    return yk.kube.core.replace_namespaced_config_map(CONFIG_MAP, yk.configmaps.namespace, body)


def as_go_json(value):
    """A queues.yaml value as encoding/json writes the Go config struct (field names), for the keys set."""
    if isinstance(value, list):
        return [as_go_json(v) for v in value]
    if isinstance(value, dict):
        return {GO_FIELDS.get(k, k): (v if k == "properties" else as_go_json(v)) for k, v in value.items()}
    return value


def contains(actual, expected) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return isinstance(actual, list) and len(actual) == len(expected) and all(
            contains(a, e) for a, e in zip(actual, expected, strict=True))
    return actual == expected


def check_scheduler_config(yk, scheduler_config: dict) -> None:
    """checkSchedulerConfig: /ws/v1/config's partitions are the configured ones. Upstream compares the decoded
    structs whole; here every field the configmap sets must be there with its value."""
    config = yk.rest._get("ws/v1/config")
    assert config is not None
    assert contains(config["Partitions"], as_go_json(scheduler_config["partitions"])), config["Partitions"]


def test_verify_configmap_file(yk, old_config_map):
    """It("Verify_ConfigMap_File")"""
    config_map = get_config_map_obj(TESTDATA / "yunikorn-configs.yaml")
    assert config_map is not None
    update_config_map(yk, config_map)
    scheduler_config = yaml.safe_load(config_map["data"][POLICY_GROUP])
    assert len(scheduler_config["partitions"]) == 1
    assert len(scheduler_config["partitions"][0]["queues"]) == 1
    yk.rest.wait_for_queue_ts("root", scheduler_config["partitions"][0]["queues"][0]["properties"]["timestamp"])
    check_scheduler_config(yk, scheduler_config)


def test_verify_compressed_configmap_file(yk, old_config_map):
    """It("Verify_Compressed_ConfigMap_File")"""
    config_map = get_config_map_obj(TESTDATA / "compressed_yunikorn-configs.yaml")
    assert config_map is not None
    update_config_map(yk, config_map)
    queues_gz = base64.b64decode(config_map["binaryData"][POLICY_GROUP + ".gz"])
    assert queues_gz
    scheduler_config = yaml.safe_load(gzip.decompress(queues_gz))
    assert len(scheduler_config["partitions"]) == 1
    assert len(scheduler_config["partitions"][0]["queues"]) == 1
    yk.rest.wait_for_queue_ts("root", scheduler_config["partitions"][0]["queues"][0]["properties"]["timestamp"])
    check_scheduler_config(yk, scheduler_config)


VALID_QUEUE_NAME = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: root_Test-a_b_#_c_#_d_/_e@dom:ain
        submitacl: '*'
"""
INVALID_QUEUE_NAME = """
partitions:
  - name: default
    placementrules:
      - name: tag
        value: namespace
        create: true
    queues:
      - name: ro!ot
        submitacl: '*'
"""
VALID_USER_FILTER = """
partitions:
  - name: default
    placementrules:
      - name: fixed
        value: root_Test-a_b_#_c_#_d_/_e@dom:ain
        create: true
        filter:
          type: allow
          users:
            - user_Test-a_b_#_c_#_d_/_e@dom:ain.com
    queues:
      - name: root
        submitacl: '*'
"""
INVALID_USER_FILTER = """
partitions:
  - name: default
    placementrules:
      - name: fixed
        value: root_Test-a_b_#_c_#_d_/_e@dom:ain
        create: true
        filter:
          type: allow
          users:
            - user_inva!lid
    queues:
      - name: root
        submitacl: '*'
"""
VALID_GROUP_FILTER = """
partitions:
  - name: default
    placementrules:
      - name: fixed
        value: root_Test-a_b_#_c_#_d_/_e@dom:ain
        create: true
        filter:
          type: allow
          groups:
            - group1
            - group_Test-a_b_#_c_#_d_/_e@dom:ain.com
    queues:
      - name: root
        submitacl: '*'
"""
INVALID_GROUP_FILTER = """
partitions:
  - name: default
    placementrules:
      - name: fixed
        value: root_Test-a_b_#_c_#_d_/_e@dom:ain
        create: true
        filter:
          type: allow
          groups:
            - group_inva!lid
    queues:
      - name: root
        submitacl: '*'
"""


@pytest.mark.parametrize("config", [
    pytest.param(VALID_QUEUE_NAME, id="Configure the scheduler with an valid queue name"),
    pytest.param(VALID_USER_FILTER, id="Configure the scheduler with an valid user name in placement rule filter"),
    pytest.param(VALID_GROUP_FILTER, id="Configure the scheduler with a valid group name in placement rule filter"),
])
def test_configure_the_scheduler_with_a_valid_name(yk, old_config_map, config):
    """It("Configure the scheduler with an valid queue name"), It("Configure the scheduler with an valid user
    name in placement rule filter"), It("Configure the scheduler with a valid group name in placement rule
    filter"): the update is accepted."""
    cm = update_config_map(yk, {"metadata": {"name": CONFIG_MAP}, "data": {"queues.yaml": config}})
    assert cm is not None


@pytest.mark.parametrize("config", [
    pytest.param(INVALID_QUEUE_NAME, id="Configure the scheduler with an invalid queue name"),
    pytest.param(INVALID_USER_FILTER, id="Configure the scheduler with an invalid user name in placement rule filter"),
    pytest.param(INVALID_GROUP_FILTER, id="Configure the scheduler with an invalid group name in placement rule filter"),
])
def test_configure_the_scheduler_with_an_invalid_name(yk, admission_controller, old_config_map, config):
    """It("Configure the scheduler with an invalid queue name"), It("Configure the scheduler with an invalid
    user name in placement rule filter"), It("Configure the scheduler with an invalid group name in placement
    rule filter"): the update is refused."""
    with pytest.raises(k8s.ApiException) as refused:
        update_config_map(yk, {"metadata": {"name": CONFIG_MAP}, "data": {"queues.yaml": config}})
    # refused by the admission controller's validating webhook, from the scheduler's verdict
    assert json.loads(refused.value.body)["message"].startswith(
        'admission webhook "admission-webhook.yunikorn.validate-conf" denied the request: ')
