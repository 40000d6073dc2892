"""Plugin mode in the chart: a stock kube-scheduler with yunikorn-py as its extender."""

from __future__ import annotations

import kubernetes_validate
import yaml

from tests.chart.rendering import RELEASE_NAMESPACE
from tests.chart.test_render import KUBERNETES_VERSION

PLUGIN = {"pluginMode": {"enabled": True}}
PLUGIN_OBJECTS = {("Deployment", "yunikorn-kube-scheduler"), ("ConfigMap", "yunikorn-kube-scheduler-config"),
                  ("ServiceAccount", "yunikorn-kube-scheduler")}


def scheduler_configuration(objects) -> dict:
    return yaml.safe_load(objects.one("ConfigMap", "yunikorn-kube-scheduler-config")["data"]["config.yaml"])


def scheduler_args(objects) -> list[str]:
    (container,) = objects.one("Deployment", "yunikorn-scheduler")["spec"]["template"]["spec"]["containers"]
    return container["args"]


def pod_rules(objects) -> list[dict]:
    role = objects.one("ClusterRole", "yunikorn-scheduler")
    return [rule for rule in role["rules"] if rule["apiGroups"] == [""] and "pods" in rule["resources"]]


def test_off_by_default(render):
    objects = render()
    assert not {(obj["kind"], obj["metadata"]["name"]) for obj in objects} & PLUGIN_OBJECTS
    assert "--plugin-mode" not in scheduler_args(objects)
    assert not any("patch" in rule["verbs"] for rule in pod_rules(objects))


def test_enabled_renders_valid_objects(render):
    objects = render(PLUGIN)
    assert PLUGIN_OBJECTS <= {(obj["kind"], obj["metadata"]["name"]) for obj in objects}
    for obj in objects:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        if obj["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            expected = "kube-system" if obj["metadata"]["name"] == "yunikorn-kube-scheduler-authentication-reader" \
                else RELEASE_NAMESPACE
            assert obj["metadata"]["namespace"] == expected, obj["metadata"]["name"]


def test_kube_scheduler_configuration(render):
    objects = render(PLUGIN)
    config = scheduler_configuration(objects)
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1" and config["kind"] == "KubeSchedulerConfiguration"
    assert config["profiles"] == [{"schedulerName": "yunikorn"}]
    assert config["leaderElection"] == {"leaderElect": True, "resourceName": "yunikorn-kube-scheduler",
                                        "resourceNamespace": RELEASE_NAMESPACE, "resourceLock": "leases"}
    (extender,) = config["extenders"]
    assert extender == {"urlPrefix": f"http://yunikorn-service.{RELEASE_NAMESPACE}.svc:9080/scheduler/extender",
                        "filterVerb": "filter", "bindVerb": "bind", "nodeCacheCapable": True, "ignorable": False,
                        "httpTimeout": "5s", "enableHTTPS": False}
    other = scheduler_configuration(render({"pluginMode": {"enabled": True, "extenderBind": False,
                                                           "httpTimeout": "2500ms"},
                                            "scheduler": {"restPort": 9191}}))
    (extender,) = other["extenders"]
    assert "bindVerb" not in extender and extender["httpTimeout"] == "2500ms"
    assert extender["urlPrefix"].endswith(":9191/scheduler/extender")


def test_the_kube_scheduler_deployment(render):
    objects = render({"pluginMode": {"enabled": True, "nodeSelector": {"pool": "system"}}})
    deployment = objects.one("Deployment", "yunikorn-kube-scheduler")
    spec = deployment["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert container["image"] == "registry.k8s.io/kube-scheduler:v1.35.0"
    assert container["command"][:2] == ["kube-scheduler", "--config=/etc/kubernetes/yunikorn/config.yaml"]
    assert container["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert spec["serviceAccountName"] == "yunikorn-kube-scheduler" and spec["nodeSelector"] == {"pool": "system"}
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["volumes"][0]["configMap"]["name"] == "yunikorn-kube-scheduler-config"
    assert "checksum/config" in deployment["spec"]["template"]["metadata"]["annotations"]


def test_yunikorn_runs_in_plugin_mode_and_may_annotate_pods(render):
    objects = render(PLUGIN)
    assert "--plugin-mode" in scheduler_args(objects)
    assert any(rule["resources"] == ["pods"] and rule["verbs"] == ["patch"] for rule in pod_rules(objects))


def test_the_kube_scheduler_rbac(render):
    objects = render(PLUGIN)
    bound = {obj["roleRef"]["name"] for obj in objects.of_kind("ClusterRoleBinding")
             if obj["subjects"][0]["name"] == "yunikorn-kube-scheduler"}
    assert bound == {"system:kube-scheduler", "system:volume-scheduler"}
    reader = objects.one("RoleBinding", "yunikorn-kube-scheduler-authentication-reader")
    assert reader["roleRef"]["name"] == "extension-apiserver-authentication-reader"
    lease = objects.one("Role", "yunikorn-kube-scheduler-lease")
    assert {"resourceNames": ["yunikorn-kube-scheduler"], "verbs": ["get", "update"]}.items() <= lease["rules"][1].items()
    for obj in objects.of_kind("Role") + objects.of_kind("ClusterRole"):
        for rule in obj["rules"]:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], obj["metadata"]["name"]
