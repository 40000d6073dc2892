"""Protobuf request bodies, built here byte by byte from upstream's field numbers: kubesim stores the
object a JSON client would have sent, and answers a malformed body with 400 and an unreadable one with
415, at once, changing nothing."""

from __future__ import annotations

import http.client
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from kubesim import protobuf, protoschema
from kubesim.errors import ApiError

PROTOBUF = "application/vnd.kubernetes.protobuf"


# Encoding, independent of kubesim's decoder.
def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # a negative int32 or int64 is written as ten bytes
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: int | bool | str | bytes) -> bytes:
    if isinstance(value, (bool, int)):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(number: int, key: str, value: str | bytes) -> bytes:
    return field(number, field(1, key) + field(2, value))


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + field(1, field(1, api_version) + field(2, kind)) + field(2, raw) + field(3, "") + field(4, "")


def meta(name: str, **labels: str) -> bytes:
    """An ObjectMeta as gogo writes it: every non-pointer field present, empty or not."""
    return (field(1, name) + field(2, "") + field(3, "") + field(4, "") + field(5, "") + field(6, "") + field(7, 0)
            + field(8, b"") + b"".join(entry(11, key, value) for key, value in labels.items()))


RENEWED = field(1, 1764050000) + field(2, 123456789)  # a MicroTime: 2025-11-25T05:53:20.123456Z


def lease(name: str, holder: str) -> bytes:
    spec = field(1, holder) + field(2, 0) + field(4, RENEWED) + field(5, 3)
    return envelope("coordination.k8s.io/v1", "Lease", field(1, meta(name, app="web")) + field(2, spec))


# Over HTTP.
@pytest.fixture
def connection(kubesim):
    conn = http.client.HTTPConnection(kubesim.host, kubesim.port, timeout=10)
    yield conn
    conn.close()


def send(conn, method: str, path: str, body: bytes) -> tuple[int, dict]:
    conn.request(method, path, body=body, headers={"Content-Type": PROTOBUF, "Accept": "application/json"})
    response = conn.getresponse()
    return response.status, json.loads(response.read())


def without_server_fields(obj: dict) -> dict:
    obj["metadata"] = {k: v for k, v in obj["metadata"].items()
                       if k not in ("name", "uid", "creationTimestamp", "resourceVersion")}
    return obj


def test_a_lease_in_protobuf_is_stored_as_the_same_lease_sent_as_json(connection, kube_api):
    """A zero pointer (``leaseDurationSeconds: 0``) is kept, a MicroTime keeps its microseconds, and an
    update (PUT, as client-go's leader election renews) is read the same way."""
    leases = client.CoordinationV1Api(kube_api)
    status, created = send(connection, "POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases",
                           lease("from-protobuf", "me"))
    assert status == 201, created
    as_json = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "from-json", "labels": {"app": "web"}},
               "spec": {"holderIdentity": "me", "leaseDurationSeconds": 0, "renewTime": "2025-11-25T05:53:20.123456Z",
                        "leaseTransitions": 3}}  # as Go writes it (the Python client would write +00:00)
    connection.request("POST", "/apis/coordination.k8s.io/v1/namespaces/default/leases", body=json.dumps(as_json),
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    assert (response.status, json.loads(response.read())["metadata"]["name"]) == (201, "from-json")
    read = {name: json.loads(leases.read_namespaced_lease(name, "default", _preload_content=False).data)
            for name in ("from-protobuf", "from-json")}
    assert without_server_fields(read["from-protobuf"]) == without_server_fields(read["from-json"])
    assert read["from-protobuf"]["spec"]["leaseDurationSeconds"] == 0

    renewal = lease("from-protobuf", "you")
    status, updated = send(connection, "PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/from-protobuf",
                           renewal)
    assert status == 200 and updated["spec"]["holderIdentity"] == "you"
    assert leases.read_namespaced_lease("from-protobuf", "default").spec.holder_identity == "you"


def test_secret_bytes_are_base64_and_negative_numbers_keep_their_sign(connection, kubesim):
    secret = (field(1, meta("s")) + field(5, False) + entry(2, "blob", b"\xff\x00\x01") + entry(2, "empty", b"")
              + field(3, "Opaque"))
    status, _ = send(connection, "POST", "/api/v1/namespaces/default/secrets", envelope("v1", "Secret", secret))
    assert status == 201
    [stored] = kubesim.objects("secrets", "default")
    assert without_server_fields(stored) == {
        "kind": "Secret", "apiVersion": "v1", "metadata": {"namespace": "default"}, "immutable": False,
        "data": {"blob": "/wAB", "empty": ""}, "type": "Opaque"}

    priority = field(1, meta("low")) + field(2, -5) + field(3, False) + field(4, "")
    status, created = send(connection, "POST", "/apis/scheduling.k8s.io/v1/priorityclasses",
                           envelope("scheduling.k8s.io/v1", "PriorityClass", priority))
    assert status == 201
    assert without_server_fields(created) == {"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
                                              "metadata": {}, "value": -5,
                                              "preemptionPolicy": "PreemptLowerPriority"}


def test_times_int_or_strings_and_nested_messages_decode_as_go_writes_them():
    condition = (field(1, "DisruptionAllowed") + field(2, "True") + field(3, 2) + field(4, b"") + field(5, "")
                 + field(6, ""))
    status = (field(1, 0) + field(2, field(1, "pod-a") + field(2, field(1, 1764050000) + field(2, 999)))
              + field(3, 1) + field(4, 2) + field(5, 1) + field(6, 3) + field(7, condition))
    selector = field(2, field(1, "tier") + field(2, "In") + field(3, "a") + field(3, "b"))
    spec = field(1, field(1, 1) + field(2, 0) + field(3, "50%")) + field(2, selector) + field(4, "AlwaysAllow")
    budget = protobuf.decode(envelope("policy/v1", "PodDisruptionBudget", field(1, meta("web")) + field(2, spec)
                                      + field(3, status)))
    assert budget == {
        "kind": "PodDisruptionBudget", "apiVersion": "policy/v1", "metadata": {"name": "web"},
        "spec": {"minAvailable": "50%",
                 "selector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
                 "unhealthyPodEvictionPolicy": "AlwaysAllow"},
        "status": {"disruptedPods": {"pod-a": "2025-11-25T05:53:20Z"}, "disruptionsAllowed": 1, "currentHealthy": 2,
                   "desiredHealthy": 1, "expectedPods": 3,
                   "conditions": [{"type": "DisruptionAllowed", "status": "True", "observedGeneration": 2,
                                   "lastTransitionTime": None, "reason": "", "message": ""}]}}
    port = field(1, "") + field(2, "TCP") + field(3, 80) + field(4, field(1, 0) + field(2, 8080) + field(3, "")) \
        + field(5, 0)
    owner = field(5, "v1") + field(1, "Pod") + field(3, "p") + field(4, "u-1") + field(6, True)
    service = protobuf.decode(envelope("v1", "Service", field(1, meta("svc") + field(13, owner)) + field(2, field(1, port))))
    assert service == {
        "kind": "Service", "apiVersion": "v1",
        "metadata": {"name": "svc", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u-1",
                                                         "controller": True}]},
        "spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 8080}]}, "status": {"loadBalancer": {}}}


def test_an_eviction_carries_its_delete_options():
    options = field(1, 0) + field(2, field(1, "u-1")) + field(5, "All")
    eviction = protobuf.decode(envelope("policy/v1", "Eviction", field(1, meta("p")) + field(2, options)))
    assert eviction["deleteOptions"] == {"gracePeriodSeconds": 0, "preconditions": {"uid": "u-1"}, "dryRun": ["All"]}


NAMESPACE = field(1, meta("team-a")) + field(2, b"") + field(3, field(1, ""))
GOOD = envelope("v1", "Namespace", NAMESPACE)


@pytest.mark.parametrize("body, code, says", [
    (b"\x0a\x03abc", 400, "magic bytes"),
    (GOOD[:-12], 400, "claims"),
    (b"k8s\x00" + b"\xff" * 11, 400, "longer than ten bytes"),
    (b"k8s\x00\x0a\x05\x0a\x02v1", 400, "claims"),
    (b"k8s\x00\x08\x01", 400, "wire type"),
    (b"k8s\x00\x0b", 400, "wire type 3"),
    (b"k8s\x00", 400, "names no apiVersion and kind"),
    (envelope("v1", "Namespace", field(1, b"\x38\x80")), 400, "ends inside a varint"),
    (envelope("v1", "Namespace", field(1, field(1, 7))), 400, "field 1 of ObjectMeta has wire type 0"),
    (envelope("v1", "Namespace", field(1, field(8, field(1, 1 << 62)))), 400, "out of range"),
    (envelope("v1", "Pod", b""), 415, "not v1 Pod"),
    (envelope("apps/v1", "Deployment", b""), 415, "not apps/v1 Deployment"),
    (envelope("v1", "Namespace", NAMESPACE + field(99, "x")), 415, "does not know field 99 of Namespace"),
    (envelope("v1", "Namespace", field(1, meta("a") + field(15, "old"))), 415, "field 15 of ObjectMeta"),
    (b"k8s\x00" + field(1, field(1, "v1") + field(2, "Namespace")) + field(2, NAMESPACE) + field(3, "gzip"), 415,
     "content encoding 'gzip'"),
], ids=["no magic", "truncated", "endless varint", "short raw", "envelope varint", "group", "empty envelope",
        "cut varint", "name as varint", "time out of range", "pod", "deployment", "unknown field", "unknown meta field",
        "gzip"])
def test_a_bad_body_gets_a_clear_error_and_changes_nothing(connection, kubesim, body, code, says):
    before = kubesim.store.rv
    status, answer = send(connection, "POST", "/api/v1/namespaces", body)
    assert (status, answer["code"]) == (code, code)
    assert answer["reason"] == ("BadRequest" if code == 400 else "UnsupportedMediaType")
    assert says in answer["message"], answer["message"]
    assert kubesim.store.rv == before
    status, created = send(connection, "POST", "/api/v1/namespaces", GOOD)  # the connection is still in step
    assert status == 201 and created["metadata"]["name"] == "team-a"


def test_every_cut_of_a_body_decodes_or_gets_400_or_415():
    body = envelope("v1", "ConfigMap", field(1, meta("c", app="web")) + field(4, True) + entry(2, "a", "b")
                    + entry(3, "bin", b"\x00\xff"))
    assert protobuf.decode(body)["binaryData"] == {"bin": "AP8="}
    for end in range(len(body)):
        try:
            decoded = protobuf.decode(body[:end])
        except ApiError as error:
            assert error.code in (400, 415)
        else:
            assert decoded["kind"] == "ConfigMap"


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=200), st.sampled_from(sorted(protoschema.KINDS)))
def test_garbage_in_any_kind_is_a_400_or_415_never_a_crash(raw, kind):
    try:
        decoded = protobuf.decode(envelope(*kind, raw))
    except ApiError as error:
        assert error.code in (400, 415)
    else:
        assert (decoded["apiVersion"], decoded["kind"]) == kind and isinstance(decoded.get("metadata", {}), dict)


def test_the_schema_names_only_known_types_and_shapes():
    known = protoschema.SCALARS | {protoschema.TIME, protoschema.MICRO_TIME, protoschema.INT_OR_STRING,
                                   protoschema.FIELDS_V1} | set(protoschema.MESSAGES)
    shapes = {protoschema.OMIT, protoschema.KEEP, protoschema.PTR, protoschema.LIST, protoschema.MAP}
    for name, message in protoschema.MESSAGES.items():
        for number, spec in message.items():
            assert spec.type in known and spec.shape in shapes, (name, number, spec)
    assert {kind for _, kind in protoschema.KINDS} <= set(protoschema.MESSAGES)
