"""Pure parts in process: configuration parsing, the cluster view, the app's transport checks, the CA store."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import json
import logging

import falcon.testing
import pytest
from kubernetes import client

from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS
from tests.webhook.harness import pod, review
from webhook.app import MAX_BODY, create_app
from webhook.castore import Validity, load_or_create_cas
from webhook.conf import AdmissionConf, flatten, parse
from webhook.framing import Refusal, request_length
from webhook.pki import generate_ca, load_ca
from webhook.view import ClusterView

DAY = dt.timedelta(days=1)


# Configuration.
def test_defaults():
    conf = parse({})
    assert conf == AdmissionConf()
    assert conf.scheduler_service_address == "yunikorn-service:9080" and conf.default_queue == "root.default"
    assert [p.pattern for p in conf.bypass_namespaces] == ["^kube-system$"]


def test_bad_regex_keeps_the_default_and_names_the_key(caplog):
    with caplog.at_level(logging.WARNING):
        conf = parse({"admissionController.filtering.bypassNamespaces": "ok,([bad",
                      "admissionController.filtering.processNamespaces": "^a-, ^b- ,"})
    assert [p.pattern for p in conf.bypass_namespaces] == ["^kube-system$"]
    assert [p.pattern for p in conf.process_namespaces] == ["^a-", "^b-"]
    assert "admissionController.filtering.bypassNamespaces" in caplog.text


def test_bad_boolean_keeps_the_default(caplog):
    with caplog.at_level(logging.WARNING):
        conf = parse({"admissionController.accessControl.bypassAuth": "yes",
                      "admissionController.filtering.generateUniqueAppId": "T"})
    assert conf.bypass_auth is False and conf.generate_unique_app_id is True
    assert "admissionController.accessControl.bypassAuth" in caplog.text


def test_configs_override_defaults_and_gzipped_entries_unpack():
    defaults = {"data": {"a": "1", "b": "1"}}
    configs = {"data": {"b": "2"},
               "binaryData": {"queues.yaml.gz": base64.b64encode(gzip.compress(b"partitions: []")).decode()}}
    assert flatten(defaults, configs) == {"a": "1", "b": "2", "queues.yaml": "partitions: []"}


def test_hot_refresh_disabled_freezes_the_loaded_configuration():
    view = ClusterView()
    view.set_configmap(CONFIGMAP_CONFIGS, {"data": {"service.enableConfigHotRefresh": "false",
                                                      "admissionController.filtering.defaultQueue": "root.a"}})
    view.mark_configured()
    view.set_configmap(CONFIGMAP_CONFIGS, {"data": {"admissionController.filtering.defaultQueue": "root.b"}})
    assert view.conf.default_queue == "root.a"
    assert view.configmaps()[CONFIGMAP_CONFIGS]["data"]["admissionController.filtering.defaultQueue"] == "root.b"


def test_hot_refresh_applies_changes_and_deletions():
    view = ClusterView()
    view.mark_configured()
    view.set_configmap(CONFIGMAP_DEFAULTS, {"data": {"admissionController.filtering.defaultQueue": "root.a"}})
    assert view.conf.default_queue == "root.a"
    view.set_configmap(CONFIGMAP_DEFAULTS, None)
    assert view.conf.default_queue == "root.default"


# The app's transport checks (chunked bodies have no Content-Length to refuse early).
def test_chunked_body_over_the_limit_is_413():
    app = falcon.testing.TestClient(create_app(ClusterView(), "default"))
    result = app.simulate_post("/mutate", body=b"x" * (MAX_BODY + 1),
                               headers={"Content-Type": "application/json", "Transfer-Encoding": "chunked"})
    assert result.status_code == 413


def test_unknown_path_is_404_and_reviews_answer_json():
    app = falcon.testing.TestClient(create_app(ClusterView(), "default"))
    assert app.simulate_get("/nothing").status_code == 404
    result = app.simulate_post("/mutate", body=json.dumps(review(pod())),
                               headers={"Content-Type": "application/json; charset=utf-8"})
    assert result.status_code == 200 and result.json["response"]["allowed"] is True


# Framing: where a request ends, from its head alone.
def test_a_request_ends_after_its_head_and_declared_body():
    head = b"POST /mutate HTTP/1.1\r\nHost: x\r\ncontent-LENGTH: 0005\r\n\r\n"
    assert request_length(head[:-1], 1000, 10) is None, "the head is not complete yet"
    assert request_length(head, 1000, 10) == len(head) + 5
    assert request_length(head + b"12", 1000, 10) == len(head) + 5, "the length is known before the body"
    assert request_length(b"\r\n\r\n" + head + b"12345GET", 1000, 10) == 4 + len(head) + 5
    assert request_length(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", 1000, 10) == 27, "no Content-Length, no body"


@pytest.mark.parametrize(("received", "status"), [
    (b"GET / HTTP/1.1\r\nX: " + b"a" * 200, 431),
    (b"GET / HTTP/1.1\r\nX: " + b"a" * 200 + b"\r\n\r\n", 431),
    (b"POST / HTTP/1.1\r\nContent-Length: 11\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 413),
    (b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 0x1\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411),
    (b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 400),
    (b"POST / HTTP/1.1\r\nContent-Length: 3\r\ntransfer-encoding: identity\r\n\r\n", 400),
])
def test_a_head_is_refused_before_any_body_is_kept(received, status):
    with pytest.raises(Refusal) as refused:
        request_length(received, 100 if len(received) < 1000 else 10_000, 10)
    assert refused.value.status == status
    assert refused.value.response().startswith(b"HTTP/1.1 %d " % status)


# PKI and the CA store, with an injected clock.
def test_pkcs8_key_counts_as_missing():
    from cryptography.hazmat.primitives import serialization

    ca = generate_ca(dt.datetime.now(dt.UTC), 10 * DAY, 2048)
    pkcs8 = ca.private_key().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption())
    assert load_ca(ca.cert_pem, ca.key_pem) is not None
    assert load_ca(ca.cert_pem, pkcs8) is None
    assert load_ca(ca.cert_pem, b"garbage") is None


def test_ca_store_follows_the_injected_clock(kube_api, kubesim):
    core = client.CoreV1Api(kube_api)
    start = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    validity = Validity(ca_key_bits=2048)
    first, second = load_or_create_cas(core, "default", lambda: start, validity)
    assert first.not_after == start + validity.ca_lifetime
    assert second.not_after == start + validity.staggered_ca_lifetime
    # 80 days later both are still 90+ days from expiry: reused unchanged.
    assert load_or_create_cas(core, "default", lambda: start + 80 * DAY, validity) == (first, second)
    # 100 days on, the second is within 90 days of expiry: only it is replaced, for a full year.
    later = start + 100 * DAY
    kept, renewed = load_or_create_cas(core, "default", lambda: later, validity)
    assert kept == first and renewed != second and renewed.not_after == later + validity.ca_lifetime
    updates = [r for r in kubesim.request_log if r.resource == "secrets" and r.verb in ("create", "update")]
    assert [r.verb for r in updates] == ["create", "update"]
