"""``/validate-conf`` over real HTTPS: the scheduler's verdict on the pending queue configuration."""

from __future__ import annotations

from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS
from tests.webhook.harness import free_port

GOOD = """partitions:
  - name: default
    queues:
      - name: root
        submitacl: "*"
        queues:
          - name: batch
"""
BAD = """partitions:
  - name: default
    placementrules:
      - name: invalid
    queues:
      - name: root
"""


def configmap(name: str, data: dict, namespace: str = "default") -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def test_valid_queue_configuration_is_allowed(rules, scheduler_rest):
    response = rules.validate(configmap(CONFIGMAP_CONFIGS, {"queues.yaml": GOOD}))
    assert response["allowed"] is True and "status" not in response
    assert scheduler_rest.received[-1] == GOOD


def test_invalid_queue_configuration_is_denied_with_the_schedulers_reason(rules, scheduler_rest):
    response = rules.validate(configmap(CONFIGMAP_CONFIGS, {"queues.yaml": BAD}))
    assert response["allowed"] is False
    assert scheduler_rest.received[-1] == BAD
    assert response["status"]["message"] == scheduler_rest.core.scheduler.validate(BAD)
    assert "invalid" in response["status"]["message"]


def test_defaults_configmap_is_validated_too(rules, scheduler_rest):
    pending = configmap(CONFIGMAP_DEFAULTS, {"queues.yaml": BAD,
                                                "admissionController.webHook.schedulerServiceAddress":
                                                scheduler_rest.address})
    assert rules.validate(pending)["allowed"] is False


def test_policy_group_of_the_pending_change_selects_the_file(rules, scheduler_rest):
    pending = configmap(CONFIGMAP_CONFIGS, {"service.policyGroup": "custom", "custom.yaml": BAD,
                                               "queues.yaml": GOOD})
    assert rules.validate(pending)["allowed"] is False
    assert scheduler_rest.received[-1] == BAD


def test_other_configmaps_are_not_checked(rules, scheduler_rest):
    before = len(scheduler_rest.received)
    assert rules.validate(configmap("unrelated", {"queues.yaml": BAD}))["allowed"] is True
    assert rules.validate(configmap(CONFIGMAP_CONFIGS, {"queues.yaml": BAD}, namespace="elsewhere"),
                          namespace="elsewhere")["allowed"] is True
    assert len(scheduler_rest.received) == before


def test_unreachable_scheduler_allows_and_warns(rules, configured):
    dead = f"127.0.0.1:{free_port()}"
    configured({"admissionController.webHook.schedulerServiceAddress": dead})
    response = rules.validate(configmap(CONFIGMAP_CONFIGS, {"queues.yaml": BAD,
                                                               "admissionController.webHook.schedulerServiceAddress":
                                                               dead}))
    assert response["allowed"] is True
    assert f"scheduler at {dead} could not validate" in rules.controller.log()
