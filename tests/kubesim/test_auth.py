"""kubesim's authentication, impersonation and RBAC, through the official client: service-account tokens
(TokenRequest and legacy token Secrets) as Bearer tokens, ``Impersonate-*`` headers, RBAC roles and
bindings with kube-apiserver's 401 and 403 answers, the user an admission webhook is told of, and the
switch."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request

import pytest
from kubernetes import client

from kubesim import KubeSim
from kubesim.resources import BY_PLURAL
from tests.kubesim.raw import post
from tests.kubesim.test_admission_webhooks import hook, register  # noqa: F401 - hook: a fixture
from tests.waiting import wait_for

SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]
RBAC = "rbac.authorization.k8s.io"


@pytest.fixture
def rbac(sim_api):
    return client.RbacAuthorizationV1Api(sim_api)


def token_of(sim_core, name: str = "robot", namespace: str = "default", **spec) -> str:
    """A TokenRequest's token for the account ``name``, made first if missing."""
    if not [a for a in sim_core.list_namespaced_service_account(namespace).items if a.metadata.name == name]:
        sim_core.create_namespaced_service_account(namespace, {"metadata": {"name": name}})
    answer = sim_core.create_namespaced_service_account_token(name, namespace, {"spec": spec})
    return answer.status.token


def client_with(sim, token: str | None = None, **headers) -> client.ApiClient:
    """An ApiClient sending ``Authorization: Bearer <token>`` (the kubeconfig way) and ``headers``."""
    configuration = client.Configuration()
    configuration.host = sim.url
    if token is not None:
        configuration.api_key = {"authorization": token}
        configuration.api_key_prefix = {"authorization": "Bearer"}
    made = client.ApiClient(configuration)
    for name, value in headers.items():
        made.set_default_header(name.replace("_", "-"), value)
    return made


def refusal(call) -> tuple[int, dict]:
    with pytest.raises(client.ApiException) as refused:
        call()
    return refused.value.status, json.loads(refused.value.body)


def pod(name: str = "p") -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


def grant(rbac, name: str, rules: list[dict], subject: dict, namespace: str | None = None,
          cluster_role: bool | None = None) -> None:
    """A Role (in ``namespace``) or ClusterRole holding ``rules``, bound to ``subject`` by a RoleBinding in
    ``namespace`` or else a ClusterRoleBinding."""
    cluster_role = namespace is None if cluster_role is None else cluster_role
    role = {"metadata": {"name": name}, "rules": rules}
    if cluster_role:
        rbac.create_cluster_role(role)
    else:
        rbac.create_namespaced_role(namespace, role)
    binding = {"metadata": {"name": name}, "subjects": [subject],
               "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole" if cluster_role else "Role", "name": name}}
    if namespace is None:
        rbac.create_cluster_role_binding(binding)
    else:
        rbac.create_namespaced_role_binding(namespace, binding)


def robot(namespace: str = "default", name: str = "robot") -> dict:
    return {"kind": "ServiceAccount", "name": name, "namespace": namespace}


def test_a_token_request_authenticates_its_account_which_rbac_then_authorises(sim, sim_core, rbac):
    token = token_of(sim_core)
    with client_with(sim, token) as api:
        as_robot = client.CoreV1Api(api)
        code, status = refusal(lambda: as_robot.list_namespaced_pod("default"))
        assert code == 403
        assert status["reason"] == "Forbidden" and status["details"] == {"kind": "pods"}
        assert status["message"] == ('pods is forbidden: User "system:serviceaccount:default:robot" cannot list '
                                     'resource "pods" in API group "" in the namespace "default"')
        grant(rbac, "pod-reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
              robot(), namespace="default")
        assert as_robot.list_namespaced_pod("default").items == []
        code, status = refusal(lambda: as_robot.create_namespaced_pod("default", pod()))
        assert code == 403 and "cannot create resource" in status["message"]
        sim_core.create_namespace({"metadata": {"name": "other"}})
        code, status = refusal(lambda: as_robot.list_namespaced_pod("other"))
        assert status["message"].endswith('in the namespace "other"')
        code, status = refusal(lambda: as_robot.list_node())
        assert status["message"] == ('nodes is forbidden: User "system:serviceaccount:default:robot" cannot list '
                                     'resource "nodes" in API group "" at the cluster scope')
        assert client.VersionApi(api).get_code().git_version  # a non-resource path: every user reads it


def test_rules_match_verbs_groups_resources_subresources_and_names(sim, sim_core, rbac):
    token = token_of(sim_core)
    sim_core.create_namespaced_pod("default", pod("mine"))
    sim_core.create_namespaced_pod("default", pod("theirs"))
    grant(rbac, "some", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["mine"]},
                         {"apiGroups": [""], "resources": ["pods/status"], "verbs": ["*"]},
                         {"apiGroups": ["*"], "resources": ["*"], "verbs": ["watch"]}],
          {"kind": "Group", "name": "system:serviceaccounts:default"}, namespace="default", cluster_role=True)
    with client_with(sim, token) as api:
        as_robot = client.CoreV1Api(api)
        assert as_robot.read_namespaced_pod("mine", "default").metadata.name == "mine"
        code, status = refusal(lambda: as_robot.read_namespaced_pod("theirs", "default"))
        assert status["message"].startswith('pods "theirs" is forbidden: User ')
        assert status["details"] == {"name": "theirs", "kind": "pods"}
        assert as_robot.read_namespaced_pod_status("theirs", "default").metadata.name == "theirs"
        code, status = refusal(lambda: as_robot.delete_namespaced_pod("theirs", "default"))
        assert 'cannot delete resource "pods"' in status["message"]
        stream = as_robot.list_namespaced_config_map("default", watch=True, timeout_seconds=1,
                                                     _preload_content=False)
        assert stream.status == 200
        stream.release_conn()
        # a ClusterRole bound by a RoleBinding grants in that namespace alone
        code, status = refusal(lambda: as_robot.read_namespaced_pod_status("x", "kube-system"))
        assert 'cannot get resource "pods/status" in API group "" in the namespace "kube-system"' in status["message"]
    with client_with(sim, token) as api:
        apps = client.AppsV1Api(api)
        code, status = refusal(lambda: apps.list_namespaced_deployment("default"))
        assert status["message"].startswith("deployments.apps is forbidden: ")
        assert 'in API group "apps"' in status["message"]


def test_unknown_forged_or_orphaned_tokens_are_unauthorized(sim, sim_core):
    token = token_of(sim_core)
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims["sub"] = "system:serviceaccount:kube-system:admin"
    forged = ".".join((header, base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("="),
                       signature))
    other_audience = token_of(sim_core, audiences=["vault"])
    for bad in ("nonsense", forged, other_audience):
        with client_with(sim, bad) as api:
            code, status = refusal(lambda api=api: client.CoreV1Api(api).list_namespaced_pod("default"))
            assert (code, status["reason"], status["message"]) == (401, "Unauthorized", "Unauthorized"), bad
    sim_core.delete_namespaced_service_account("robot", "default")
    with client_with(sim, token) as api:
        assert refusal(lambda: client.CoreV1Api(api).list_namespaced_pod("default"))[0] == 401
    for other_scheme in ("Basic dXNlcjpwdw==", "Bearer"):
        request = urllib.request.Request(f"{sim.url}/api/v1/namespaces", headers={"Authorization": other_scheme})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 401


def test_a_token_request_is_checked(sim, sim_core):
    sim_core.create_namespaced_service_account("default", {"metadata": {"name": "robot"}})
    code, status = refusal(lambda: sim_core.create_namespaced_service_account_token(
        "robot", "default", {"spec": {"expirationSeconds": 599}}))
    assert code == 422 and status["message"] == (
        'TokenRequest.authentication.k8s.io "robot" is invalid: spec.expirationSeconds: Invalid value: 599: '
        "may not specify a duration less than 10 minutes")
    code, status = refusal(lambda: sim_core.create_namespaced_service_account_token(
        "robot", "default", {"spec": {"expirationSeconds": 2**32 + 1}}))
    assert code == 422 and status["message"].endswith("may not specify a duration larger than 2^32 seconds")
    code, status = refusal(lambda: sim_core.create_namespaced_service_account_token("ghost", "default", {"spec": {}}))
    assert (code, status["message"]) == (404, 'serviceaccounts "ghost" not found')
    answer = sim_core.create_namespaced_service_account_token("robot", "default", {"spec": {}})
    assert answer.spec.audiences == ["https://kubernetes.default.svc.cluster.local"]
    assert answer.spec.expiration_seconds == 3600 and answer.status.expiration_timestamp is not None


def test_a_service_account_token_secret_is_filled_and_goes_with_its_account(sim, sim_core):
    sim_core.create_namespaced_service_account("default", {"metadata": {"name": "robot"}})
    sim_core.create_namespaced_secret("default", {
        "metadata": {"name": "robot-token", "annotations": {"kubernetes.io/service-account.name": "robot"}},
        "type": "kubernetes.io/service-account-token"})

    def filled():
        return (sim_core.read_namespaced_secret("robot-token", "default").data or {}).get("token")
    wait_for(filled, timeout=5, message="the token written into the Secret")
    secret = sim_core.read_namespaced_secret("robot-token", "default")
    assert base64.b64decode(secret.data["namespace"]) == b"default" and "ca.crt" in secret.data
    account = sim_core.read_namespaced_service_account("robot", "default")
    assert secret.metadata.annotations["kubernetes.io/service-account.uid"] == account.metadata.uid
    with client_with(sim, base64.b64decode(secret.data["token"]).decode()) as api:
        code, status = refusal(lambda: client.CoreV1Api(api).list_namespaced_pod("default"))
        assert code == 403 and 'User "system:serviceaccount:default:robot"' in status["message"]
        secret.data["token"] = "not base64!"  # a Secret rewritten by hand no longer vouches for its token
        sim_core.replace_namespaced_secret("robot-token", "default", secret)
        assert refusal(lambda: client.CoreV1Api(api).list_namespaced_pod("default"))[0] == 401
        sim_core.delete_namespaced_service_account("robot", "default")
        wait_for(lambda: not [s for s in sim_core.list_namespaced_secret("default").items
                              if s.metadata.name == "robot-token"], timeout=5, message="the token Secret deleted")
        assert refusal(lambda: client.CoreV1Api(api).list_namespaced_pod("default"))[0] == 401
    code, status = refusal(lambda: sim_core.create_namespaced_secret("default", {
        "metadata": {"name": "nameless"}, "type": "kubernetes.io/service-account-token"}))
    assert code == 422 and "metadata.annotations[kubernetes.io/service-account.name]: Required value" \
        in status["message"]


def test_a_webhook_is_told_the_authenticated_or_impersonated_user(sim, sim_api, sim_core, rbac, request):
    webhook = request.getfixturevalue("hook")  # test_admission_webhooks' fixture: a webhook behind a Service
    register(client.AdmissionregistrationV1Api(sim_api), webhook, resources=("configmaps",))
    token = token_of(sim_core)
    account_uid = sim_core.read_namespaced_service_account("robot", "default").metadata.uid
    grant(rbac, "writer", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "update"]}],
          {"kind": "User", "name": "alice"}, namespace="default")
    grant(rbac, "robot-writer", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]}], robot(),
          namespace="default")
    sim_core.create_namespaced_config_map("default", {"metadata": {"name": "by-admin"}})
    with client_with(sim, token) as api:
        client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "by-robot"}})
    with client_with(sim, None, Impersonate_User="alice", Impersonate_Uid="alice-1",
                     Impersonate_Extra_scopes="view") as api:
        client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "by-alice"}})
        code, status = refusal(lambda: client.CoreV1Api(api).list_namespaced_config_map("default"))
        assert code == 403 and 'User "alice" cannot list resource "configmaps"' in status["message"]
    with client_with(sim, None, Impersonate_User="system:serviceaccount:default:robot") as api:
        client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": "as-robot"}})
    users = {r["request"]["name"]: r["request"]["userInfo"] for r in webhook.reviews}
    assert users == {
        "by-admin": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
        "by-robot": {"username": "system:serviceaccount:default:robot", "uid": account_uid, "groups": SA_GROUPS},
        "by-alice": {"username": "alice", "uid": "alice-1", "groups": ["system:authenticated"],
                     "extra": {"scopes": ["view"]}},
        "as-robot": {"username": "system:serviceaccount:default:robot", "groups": SA_GROUPS}}


def raw_request(sim, path: str, headers: list[tuple[str, str]]) -> tuple[int, dict]:
    """A GET with headers that may repeat (the official client sends each default header once)."""
    import http.client
    connection = http.client.HTTPConnection(sim.host, sim.port, timeout=10)
    try:
        connection.putrequest("GET", path)
        for name, value in headers:
            connection.putheader(name, value)
        connection.endheaders()
        answer = connection.getresponse()
        return answer.status, json.loads(answer.read())
    finally:
        connection.close()


def test_impersonation_needs_the_impersonate_verb_and_a_user(sim, sim_core, rbac):
    token = token_of(sim_core)
    as_alice_in_two_groups = [("Authorization", f"Bearer {token}"), ("Impersonate-User", "alice"),
                              ("Impersonate-Group", "devs"), ("Impersonate-Group", "ops")]
    code, status = raw_request(sim, "/api/v1/namespaces/default/pods", as_alice_in_two_groups)
    assert (code, status["message"]) == (403, 'users "alice" is forbidden: User "system:serviceaccount:default:robot" '
                                              'cannot impersonate resource "users" in API group "" at the cluster scope')
    grant(rbac, "impersonate-alice", [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"],
                                       "resourceNames": ["alice"]}], robot())
    code, status = raw_request(sim, "/api/v1/namespaces/default/pods", as_alice_in_two_groups)
    assert (code, status["message"]) == (403, 'groups "devs" is forbidden: User "system:serviceaccount:default:robot" '
                                              'cannot impersonate resource "groups" in API group "" at the cluster '
                                              "scope")
    grant(rbac, "impersonate-groups", [{"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"]}],
          robot())
    grant(rbac, "ops-read", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
          {"kind": "Group", "name": "ops"})
    code, status = raw_request(sim, "/api/v1/namespaces/default/pods", as_alice_in_two_groups)
    assert (code, status["kind"]) == (200, "PodList")
    code, status = raw_request(sim, "/api/v1/namespaces/default/pods",
                               [*as_alice_in_two_groups, ("Impersonate-Uid", "alice-1")])
    assert (code, status["message"]) == (403, 'uids.authentication.k8s.io "alice-1" is forbidden: User '
                                              '"system:serviceaccount:default:robot" cannot impersonate resource '
                                              '"uids" in API group "authentication.k8s.io" at the cluster scope')
    code, status = raw_request(sim, "/api/v1/namespaces/default/pods", [("Impersonate-Group", "ops")])
    assert code == 500 and "without impersonating a user" in status["message"]


def test_rbac_is_switched_off():
    with KubeSim(rbac=False) as sim, sim.api_client() as admin:
        token = token_of(client.CoreV1Api(admin))
        with client_with(sim, token) as api:
            assert client.CoreV1Api(api).create_namespaced_pod("default", pod()).metadata.name == "p"
        with client_with(sim, "nonsense") as api:
            assert refusal(lambda: client.CoreV1Api(api).list_namespaced_pod("default"))[0] == 401


def test_roles_and_bindings_are_validated_and_defaulted(sim, rbac):
    """kube-apiserver's defaults (roleRef and User/Group subjects get the RBAC apiGroup) and its field errors;
    a refused object is not stored, and a binding's roleRef cannot change."""
    bindings = f"{sim.url}/apis/{RBAC}/v1/clusterrolebindings"
    code, status = post(bindings, {"metadata": {"name": "bad"}, "roleRef": {"kind": "Role", "name": "x"},
                                   "subjects": [{"kind": "ServiceAccount", "name": "robot"}, {"kind": "Robot"}]})
    assert code == 422 and status["message"] == (
        'ClusterRoleBinding.rbac.authorization.k8s.io "bad" is invalid: [roleRef.kind: Unsupported value: "Role": '
        'supported values: "ClusterRole", subjects[0].namespace: Required value, subjects[1].name: Required value, '
        'subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"]')
    code, status = post(f"{sim.url}/apis/{RBAC}/v1/namespaces/default/roles", {"metadata": {"name": "bad"}, "rules": [
        {"verbs": [], "resources": ["pods"]}, {"verbs": ["get"], "nonResourceURLs": ["/healthz"]}, {"verbs": "get"}]})
    assert code == 422 and status["message"] == (
        'Role.rbac.authorization.k8s.io "bad" is invalid: [rules[0].verbs: Required value: verbs must contain at '
        "least one value, rules[0].apiGroups: Required value: resource rules must supply at least one api group, "
        "rules[1].nonResourceURLs: Invalid value: namespaced rules cannot apply to non-resource URLs, "
        "rules[2].verbs: Invalid value: must be a list of strings]")
    assert rbac.list_cluster_role_binding().items == [] and rbac.list_namespaced_role("default").items == []
    made = rbac.create_cluster_role_binding({"metadata": {"name": "good"}, "roleRef": {"kind": "ClusterRole",
                                             "name": "view"}, "subjects": [{"kind": "User", "name": "alice"}]})
    assert (made.role_ref.api_group, made.subjects[0].api_group) == (RBAC, RBAC)
    made.role_ref.name = "edit"
    code, status = refusal(lambda: rbac.replace_cluster_role_binding("good", made))
    assert code == 422 and status["message"].endswith("roleRef: Invalid value: cannot change roleRef")


def test_bindings_and_roles_of_any_shape_never_break_authorisation(sim, sim_core):
    """Stored roles and bindings are read as tenant input: written around validation, nonsense in them grants
    nothing and answers no request with 500."""
    token = token_of(sim_core)
    cluster_bindings, cluster_roles = (BY_PLURAL[plural] for plural in ("clusterrolebindings", "clusterroles"))
    for number, binding in enumerate((
            {"roleRef": {"kind": ["ClusterRole"], "name": {"x": 1}}, "subjects": [robot()]},
            {"roleRef": {"kind": "ClusterRole", "name": ["odd"]}, "subjects": [robot()]},
            {"roleRef": "pod-reader", "subjects": "everyone"},
            {"roleRef": {"kind": "ClusterRole", "name": "odd"}, "subjects": [robot(), 7, {"kind": None}]})):
        sim.store.create(cluster_bindings, "", {"metadata": {"name": f"odd-{number}"}, **binding})
    sim.store.create(cluster_roles, "", {"metadata": {"name": "odd"}, "rules": [
        {"verbs": "list", "resources": {"pods": 1}}, None, {"verbs": [[]], "apiGroups": [""]}]})
    sim.store.create(BY_PLURAL["rolebindings"], "default", {
        "metadata": {"name": "odd"}, "roleRef": {"kind": "Role", "name": {"x": 1}}, "subjects": [robot()]})
    with client_with(sim, token) as api:
        assert refusal(lambda: client.CoreV1Api(api).list_namespaced_pod("default"))[0] == 403


def test_a_self_subject_access_review_answers_for_whoever_asks(sim, sim_core, rbac):
    token = token_of(sim_core)
    grant(rbac, "pod-reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}], robot(),
          namespace="default")

    def asks(api, **attributes) -> bool:
        review = client.AuthorizationV1Api(api).create_self_subject_access_review({"spec": attributes})
        return review.status.allowed
    with client_with(sim, token) as api:
        assert asks(api, resourceAttributes={"verb": "list", "resource": "pods", "namespace": "default"}) is True
        assert asks(api, resourceAttributes={"verb": "list", "resource": "pods"}) is False  # every namespace
        assert asks(api, resourceAttributes={"verb": "list", "resource": "pods", "subresource": "status",
                                             "namespace": "default"}) is False
        assert asks(api, nonResourceAttributes={"verb": "get", "path": "/version"}) is True
        code, status = refusal(lambda: client.AuthorizationV1Api(api).create_self_subject_access_review({"spec": {}}))
        assert code == 422 and "exactly one of nonResourceAttributes or resourceAttributes" in status["message"]
    assert raw_request(sim, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", [])[0] == 405
    assert sim.objects("selfsubjectaccessreviews") == []
