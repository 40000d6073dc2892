"""Content negotiation over raw HTTP: bodies kubesim cannot read get 415 at once and leave the connection
usable; Accept lists get JSON when JSON is in them, 406 when nothing kubesim produces is."""

import http.client
import json

import pytest

from kubesim.errors import ApiError
from kubesim.negotiation import PLAIN, Answer, answer

PROTOBUF = "application/vnd.kubernetes.protobuf"
NAMESPACE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}


@pytest.fixture
def connection(kubesim):
    conn = http.client.HTTPConnection(kubesim.host, kubesim.port, timeout=10)
    yield conn
    conn.close()


def call(conn, method, path, body=b"", headers=None):
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    return response.status, response.getheader("Content-Type"), json.loads(response.read() or b"null")


def test_a_protobuf_body_of_a_kind_kubesim_cannot_read_gets_415_and_the_json_retry_works(connection, kubesim):
    type_meta = b"\x0a\x02v1" + b"\x12\x03Pod"  # {1: "v1", 2: "Pod"}: a Pod, which kubesim reads as JSON only
    envelope = b"k8s\x00" + b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12\x02\x0a\x00"
    status, content_type, body = call(connection, "POST", "/api/v1/namespaces/default/pods", envelope,
                                      {"Content-Type": PROTOBUF, "Accept": f"{PROTOBUF},application/json"})
    assert status == 415 and content_type == "application/json"
    assert body["kind"] == "Status" and body["reason"] == "UnsupportedMediaType" and body["code"] == 415
    assert "not v1 Pod" in body["message"] and "application/json" in body["message"]
    assert kubesim.objects("pods") == []
    status, _, created = call(connection, "POST", "/api/v1/namespaces", json.dumps(NAMESPACE).encode(),
                              {"Content-Type": "application/json", "Accept": f"{PROTOBUF},application/json"})
    assert status == 201 and created["metadata"]["name"] == "team-a"


@pytest.mark.parametrize("method, path, content_type", [
    ("PUT", "/api/v1/namespaces/default", "application/cbor"),
    ("PATCH", "/api/v1/namespaces/default", "application/apply-patch+yaml"),
    ("PATCH", "/api/v1/namespaces/default", "application/json"),
    ("POST", "/api/v1/namespaces/default/configmaps", "application/cbor"),
])
def test_every_write_refuses_a_body_type_it_cannot_read(connection, kubesim, method, path, content_type):
    before = kubesim.store.rv
    status, _, body = call(connection, method, path, b"\x0a\x03abc", {"Content-Type": content_type})
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
    assert kubesim.store.rv == before
    assert call(connection, "GET", "/api/v1/namespaces/default")[0] == 200  # the connection is still in step


def test_a_bad_json_body_gets_400_without_waiting_for_more_bytes(connection):
    status, _, body = call(connection, "POST", "/api/v1/namespaces", b"{not json",
                           {"Content-Type": "application/json"})
    assert (status, body["reason"]) == (400, "BadRequest")
    assert call(connection, "GET", "/api/v1/namespaces/default")[0] == 200


def test_a_chunked_body_is_read_to_its_end(connection):
    payload = json.dumps(NAMESPACE).encode()
    connection.putrequest("POST", "/api/v1/namespaces")
    connection.putheader("Content-Type", "application/json")
    connection.putheader("Transfer-Encoding", "chunked")
    connection.endheaders()
    for part in (payload[:10], payload[10:]):
        connection.send(b"%x\r\n%s\r\n" % (len(part), part))
    connection.send(b"0\r\n\r\n")
    response = connection.getresponse()
    assert response.status == 201 and json.loads(response.read())["metadata"]["name"] == "team-a"
    assert call(connection, "GET", "/api/v1/namespaces/team-a")[0] == 200


def test_protobuf_first_in_accept_gets_json_and_protobuf_alone_gets_406(connection):
    status, content_type, body = call(connection, "GET", "/api/v1/namespaces/default",
                                      headers={"Accept": f"{PROTOBUF},application/json"})
    assert (status, content_type, body["kind"]) == (200, "application/json", "Namespace")
    status, _, body = call(connection, "GET", "/api/v1/namespaces/default", headers={"Accept": PROTOBUF})
    assert (status, body["reason"]) == (406, "NotAcceptable")
    status, _, body = call(connection, "GET", "/openapi/v2",
                           headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert status == 406


@pytest.mark.parametrize("accept, expected", [
    (None, PLAIN),
    ("", PLAIN),
    ("*/*", PLAIN),
    ("application/json, */*", PLAIN),
    ("application/json;stream=watch", PLAIN),
    (f"{PROTOBUF};q=1, application/json;q=0.5", PLAIN),
    ("application/json;as=Table;v=v1;g=meta.k8s.io,application/json", Answer("v1")),
    ("application/json;as=Table;v=v1beta1;g=meta.k8s.io", Answer("v1beta1")),
    ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", PLAIN),
])
def test_accept_lists(accept, expected):
    assert answer(accept, table_allowed=True) == expected


@pytest.mark.parametrize("accept", [PROTOBUF, "application/yaml", "application/json;q=0",
                                    "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"])
def test_accept_lists_without_anything_kubesim_produces(accept):
    with pytest.raises(ApiError) as refused:
        answer(accept, table_allowed=True)
    assert refused.value.code == 406


def test_a_table_is_not_offered_where_there_is_none():
    with pytest.raises(ApiError):
        answer("application/json;as=Table;v=v1;g=meta.k8s.io", table_allowed=False)


def test_a_server_side_dry_run_is_refused_and_writes_nothing(connection, kubesim):
    before = kubesim.store.rv
    status, _, body = call(connection, "POST", "/api/v1/namespaces?dryRun=All", json.dumps(NAMESPACE).encode(),
                           {"Content-Type": "application/json"})
    assert (status, body["reason"]) == (400, "BadRequest") and "--dry-run=client" in body["message"]
    assert kubesim.store.rv == before
    assert call(connection, "GET", "/api/v1/namespaces/default")[0] == 200  # the connection is still in step
