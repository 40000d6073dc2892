"""Plugin mode in the chart: a stock kube-scheduler with yunikorn-py as its extender."""

from __future__ import annotations

import base64
import json
import socket
import ssl

import kubernetes_validate
import pytest
import yaml
from cryptography import x509

from rest.extender_server import ExtenderServer, ExtenderTls
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
    mounted = "/etc/kubernetes/yunikorn-extender"
    assert extender == {"urlPrefix": f"https://yunikorn-service.{RELEASE_NAMESPACE}.svc:9443/scheduler/extender",
                        "filterVerb": "filter", "bindVerb": "bind", "nodeCacheCapable": True, "ignorable": False,
                        "httpTimeout": "5s", "enableHTTPS": True,
                        "tlsConfig": {"certFile": f"{mounted}/tls.crt", "keyFile": f"{mounted}/tls.key",
                                      "caFile": f"{mounted}/ca.crt"}}
    other = scheduler_configuration(render({"pluginMode": {"enabled": True, "extenderBind": False,
                                                           "httpTimeout": "2500ms", "extenderTls": {"enabled": False}},
                                            "scheduler": {"restPort": 9191}}))
    (extender,) = other["extenders"]
    assert "bindVerb" not in extender and extender["httpTimeout"] == "2500ms"
    assert extender["urlPrefix"] == f"http://yunikorn-service.{RELEASE_NAMESPACE}.svc:9191/scheduler/extender"
    assert extender["enableHTTPS"] is False and "tlsConfig" not in extender


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


def _certificate(secret: dict, key: str) -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


def test_the_extender_is_served_over_https_to_kube_schedulers_client_certificate_only(render):
    objects = render(PLUGIN)
    server = objects.one("Secret", "yunikorn-extender-server-tls")
    client = objects.one("Secret", "yunikorn-kube-scheduler-client-tls")
    authority = _certificate(server, "ca.crt")
    assert _certificate(client, "ca.crt") == authority  # one CA of the extender's own
    for secret in (server, client):
        _certificate(secret, "tls.crt").verify_directly_issued_by(authority)
    names = _certificate(server, "tls.crt").extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert f"yunikorn-service.{RELEASE_NAMESPACE}.svc" in names.value.get_values_for_type(x509.DNSName)
    assert _certificate(client, "tls.crt").subject.rfc4514_string() == "CN=yunikorn-kube-scheduler"
    # yunikorn-py: the server's key and the CA to check clients against, on the extender port only.
    args = scheduler_args(objects)
    assert args[args.index("--plugin-mode") + 1:][:4] == [
        "--extender-port=9443", "--extender-tls-cert-file=/etc/yunikorn/extender-tls/tls.crt",
        "--extender-tls-key-file=/etc/yunikorn/extender-tls/tls.key",
        "--extender-client-ca-file=/etc/yunikorn/extender-tls/ca.crt"]
    scheduler = objects.one("Deployment", "yunikorn-scheduler")["spec"]["template"]["spec"]
    assert {"name": "extender-tls", "secret": {"secretName": "yunikorn-extender-server-tls"}} in scheduler["volumes"]
    assert {"name": "extender", "containerPort": 9443, "protocol": "TCP"} in scheduler["containers"][0]["ports"]
    ports = objects.one("Service", "yunikorn-service")["spec"]["ports"]
    assert {"name": "extender", "port": 9443, "targetPort": "extender", "protocol": "TCP"} in ports
    # kube-scheduler: its client certificate, nothing of the server's.
    kube_scheduler = objects.one("Deployment", "yunikorn-kube-scheduler")["spec"]["template"]["spec"]
    assert {"name": "extender-client-tls", "secret": {"secretName": "yunikorn-kube-scheduler-client-tls"}} \
        in kube_scheduler["volumes"]
    assert {"name": "extender-client-tls", "mountPath": "/etc/kubernetes/yunikorn-extender", "readOnly": True} \
        in kube_scheduler["containers"][0]["volumeMounts"]


def test_plain_http_extender_when_tls_is_off(render):
    objects = render({"pluginMode": {"enabled": True, "extenderTls": {"enabled": False}}})
    assert not objects.names("Secret") & {"yunikorn-extender-server-tls", "yunikorn-kube-scheduler-client-tls"}
    assert not [arg for arg in scheduler_args(objects) if arg.startswith("--extender")]
    assert [p["name"] for p in objects.one("Service", "yunikorn-service")["spec"]["ports"]] == ["yunikorn-core"]


class _NoPlacements:
    """An extender that has placed nothing: every bind is refused."""

    def filter(self, pod, nodes):
        raise ValueError("not asked here")

    def bind(self, namespace: str, name: str, uid: str, node: str) -> str:
        return f"YuniKorn has not placed pod {namespace}/{name}"


def test_the_charts_certificates_let_kube_scheduler_and_nobody_else_reach_the_extender(render, tmp_path):
    objects = render(PLUGIN)
    files = {}
    for secret in ("yunikorn-extender-server-tls", "yunikorn-kube-scheduler-client-tls"):
        for key, value in objects.one("Secret", secret)["data"].items():
            files[secret, key] = tmp_path / f"{secret}-{key}"
            files[secret, key].write_bytes(base64.b64decode(value))
    server = "yunikorn-extender-server-tls"
    extender = ExtenderServer(_NoPlacements(), ExtenderTls(str(files[server, "tls.crt"]), str(files[server, "tls.key"]),
                                                           str(files[server, "ca.crt"])), host="127.0.0.1", port=0)
    client = "yunikorn-kube-scheduler-client-tls"
    try:
        def bind(certificate: tuple[str, str] | None) -> dict:
            context = ssl.create_default_context(cafile=str(files[client, "ca.crt"]))
            if certificate:
                context.load_cert_chain(*certificate)
            with socket.create_connection(("127.0.0.1", extender.port), timeout=10) as raw, \
                    context.wrap_socket(raw, server_hostname=f"yunikorn-service.{RELEASE_NAMESPACE}.svc") as tls:
                body = json.dumps({"PodName": "p", "PodNamespace": "default", "PodUID": "u", "Node": "n"}).encode()
                tls.sendall(b"POST /scheduler/extender/bind HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                            b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
                answer = b""
                while chunk := tls.recv(65536):
                    answer += chunk
            return json.loads(answer.split(b"\r\n\r\n", 1)[1])

        assert bind((str(files[client, "tls.crt"]), str(files[client, "tls.key"]))) == \
            {"Error": "YuniKorn has not placed pod default/p"}
        with pytest.raises((ssl.SSLError, ConnectionError)):
            bind(None)
    finally:
        extender.stop()
