"""The configmaps merged into the scheduler configuration."""

import base64
import gzip

import pytest

from actors.shim.objects import parse_configmap
from actors.shim.schedconfig import SchedulerConfigError, merge


def configmap(name, data=None, binary=None):
    return parse_configmap({"metadata": {"name": name}, "data": data or {}, "binaryData": binary or {}})


def test_configs_override_defaults_and_the_rest_is_extra():
    defaults = configmap("yunikorn-defaults", {"queues.yaml": "partitions: []", "log.level": "info",
                                               "service.clusterId": "c1"})
    configs = configmap("yunikorn-configs", {"log.level": "debug", "event.trackingEnabled": "false"})
    config = merge(defaults, configs)
    assert config.queues_yaml == "partitions: []"
    assert dict(config.extra) == {"log.level": "debug", "service.clusterId": "c1", "event.trackingEnabled": "false"}
    assert config.hot_refresh and config.cluster_id == "c1" and config.policy_group == "queues"


def test_policy_group_selects_the_queues_key():
    config = merge(None, configmap("yunikorn-configs", {"service.policyGroup": "batch",
                                                        "batch.yaml": "x: 1", "queues.yaml": "y: 2"}))
    assert config.queues_yaml == "x: 1"
    assert "queues.yaml" in config.extra


def test_gzipped_binary_data():
    text = "partitions:\n  - name: default\n"
    encoded = base64.b64encode(gzip.compress(text.encode())).decode()
    plain = base64.b64encode(b"true").decode()
    config = merge(None, configmap("yunikorn-configs", binary={"queues.yaml.gz": encoded,
                                                              "service.enableConfigHotRefresh": plain}))
    assert config.queues_yaml == text and config.hot_refresh


def test_no_configmaps_means_the_default_configuration():
    config = merge(None, None)
    assert config.queues_yaml == "" and config.hot_refresh and config.cluster_id == "mycluster"


def test_hot_refresh_can_be_disabled():
    assert not merge(None, configmap("c", {"service.enableConfigHotRefresh": "false"})).hot_refresh


@pytest.mark.parametrize("data, binary, message", [
    ({"service.enableConfigHotRefresh": "sometimes"}, {}, "not true or false"),
    ({}, {"queues.yaml.gz": base64.b64encode(b"not gzip").decode()}, "unreadable"),
    ({}, {"queues.yaml": "!!notbase64"}, "unreadable"),
])
def test_unreadable_configmaps_raise_a_clear_error(data, binary, message):
    with pytest.raises(SchedulerConfigError, match=message):
        merge(None, configmap("yunikorn-configs", data, binary))


def test_a_gzip_bomb_is_refused_without_unpacking_it():
    bomb = base64.b64encode(gzip.compress(b"#" * 50_000_000)).decode()
    with pytest.raises(SchedulerConfigError, match="unpacks to more than"):
        merge(None, configmap("yunikorn-configs", binary={"queues.yaml.gz": bomb}))
