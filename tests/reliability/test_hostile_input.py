"""Hostile input: each is answered with a clear error (the documented exception, a 4xx, a denial) of a
bounded size; never a 500, never a crash, never an allocation the input sizes itself."""

import base64
import gzip
import json
import tracemalloc

import falcon.testing
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.core import config as cfg
from rest.app import SchedulerView
from rest.server import RestServer
from si.kubernetes import ANNOTATION_USER_INFO
from si.quantity import QuantityError, to_si_value
from tests.reliability.hostile import ALIAS_BOMB, HOSTILE_CONFIGS
from tests.webhook.harness import pod, review
from webhook import constants as c
from webhook.app import create_app
from webhook.validation import post_validate_conf
from webhook.view import ClusterView

NAMESPACE = "yunikorn"
MAX_ANSWER = 4096  # bytes: a refusal names what is wrong, it does not echo the input


# Queue configurations.
@pytest.mark.parametrize("text", HOSTILE_CONFIGS.values(), ids=HOSTILE_CONFIGS.keys())
def test_hostile_queue_configurations_are_config_errors_of_bounded_length(text):
    with pytest.raises(cfg.ConfigError) as error:
        cfg.parse(text)
    assert 0 < len(str(error.value)) < 1200


@pytest.fixture(scope="module")
def scheduler_url():
    from tests.coreharness import Core

    core = Core(cfg.DEFAULT_QUEUES_YAML)
    server = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0)
    yield f"127.0.0.1:{server.port}"
    server.stop()
    core.scheduler.stop()


@pytest.mark.parametrize("text", HOSTILE_CONFIGS.values(), ids=HOSTILE_CONFIGS.keys())
def test_validate_conf_refuses_hostile_configurations_in_a_short_answer(scheduler_url, text):
    answer = post_validate_conf(scheduler_url, text)
    assert answer["allowed"] is False and answer["reason"]
    assert len(json.dumps(answer)) < MAX_ANSWER


_yaml_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20)
_partition_like = st.fixed_dictionaries({"partitions": st.lists(st.fixed_dictionaries(
    {"name": st.text(max_size=8) | _yaml_values, "queues": st.lists(_yaml_values, max_size=3)}), max_size=2)})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300), _yaml_values.map(yaml.safe_dump), _partition_like.map(yaml.safe_dump)))
def test_fuzzed_configurations_parse_or_are_config_errors(text):
    try:
        cfg.parse(text)
    except cfg.ConfigError as error:
        assert len(str(error)) < 1200


@given(st.one_of(st.text(max_size=200), st.from_regex(r"[+-]?[0-9]{0,400}(\.[0-9]{0,400})?([eE][+-]?[0-9]{1,400}"
                                                      r"|[numkMGTPE]|[KMGTPE]i)?", fullmatch=True),
                 st.integers(), st.floats()))
def test_fuzzed_quantities_are_values_or_quantity_errors(text):
    try:
        assert 0 <= to_si_value("vcore", text) < 2**63
    except QuantityError as error:
        assert len(str(error)) < 600


# Admission reviews.
@pytest.fixture(scope="module")
def webhook():
    def refuse_everything(address, queues_yaml):
        return {"allowed": False, "reason": "refused"}
    return falcon.testing.TestClient(create_app(ClusterView(), NAMESPACE, refuse_everything))


def _configmap(**fields) -> dict:
    return {"metadata": {"name": c.CONFIGMAP_CONFIGS, "namespace": NAMESPACE}, **fields}


def _named(body: dict, name: str = c.CONFIGMAP_CONFIGS) -> dict:
    body["request"]["name"] = name
    return body


def _post(app, path: str, body) -> falcon.testing.Result:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return app.simulate_post(path, body=data, headers={"Content-Type": "application/json"})


MALFORMED_REVIEWS = {
    "priority-class-list": (c.MUTATE_PATH, review({**pod(), "spec": {**pod()["spec"], "priorityClassName": ["a"]}})),
    "configmap-data-list": (c.VALIDATE_PATH, review(_configmap(data=["queues.yaml"]), kind="ConfigMap",
                                                    namespace=NAMESPACE)),
    "queues-yaml-integer": (c.VALIDATE_PATH, review(_configmap(data={"queues.yaml": 5}), kind="ConfigMap",
                                                    namespace=NAMESPACE)),
    "invalid-base64": (c.VALIDATE_PATH, review(_configmap(binaryData={"queues.yaml": "!!!"}), kind="ConfigMap",
                                               namespace=NAMESPACE)),
    "binary-data-number": (c.VALIDATE_PATH, review(_configmap(binaryData={"k": 200_000_000}), kind="ConfigMap",
                                                   namespace=NAMESPACE)),
    "binary-data-list": (c.VALIDATE_PATH, review(_configmap(binaryData=[1, 2]), kind="ConfigMap", namespace=NAMESPACE)),
    "metadata-list": (c.VALIDATE_PATH, _named(review({"metadata": [], "data": {"queues.yaml": 5}}, kind="ConfigMap",
                                                     namespace=NAMESPACE))),
    "gzip-bomb": (c.VALIDATE_PATH, review(_configmap(binaryData={"queues.yaml.gz": base64.b64encode(
        gzip.compress(b"#" * 50_000_000)).decode()}), kind="ConfigMap", namespace=NAMESPACE)),
}


# Shapes the mutation rules read as absent (an ordinary answer), rather than deny.
TOLERATED_REVIEWS = {
    "labels-list": (c.MUTATE_PATH, review({**pod(), "metadata": {"name": "p", "labels": ["a"]}})),
    "annotations-number": (c.MUTATE_PATH, review({**pod(), "metadata": {"name": "p", "annotations": 7}})),
    "spec-list": (c.MUTATE_PATH, review({**pod(), "spec": []})),
}


@pytest.mark.parametrize(("path", "body"), MALFORMED_REVIEWS.values(), ids=MALFORMED_REVIEWS.keys())
def test_malformed_reviews_are_denied_with_a_message_not_a_500(webhook, path, body):
    result = _post(webhook, path, body)
    assert result.status_code == 200, result.text
    answer = result.json["response"]
    assert answer["allowed"] is False and answer["status"]["message"]
    assert len(result.content) < MAX_ANSWER


@pytest.mark.parametrize(("path", "body"), TOLERATED_REVIEWS.values(), ids=TOLERATED_REVIEWS.keys())
def test_oddly_shaped_pods_get_an_ordinary_answer(webhook, path, body):
    result = _post(webhook, path, body)
    assert result.status_code == 200 and isinstance(result.json["response"]["allowed"], bool)


def test_a_size_taken_from_the_body_is_never_allocated(webhook):
    path, body = MALFORMED_REVIEWS["binary-data-number"]
    tracemalloc.start()
    try:
        _post(webhook, path, body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20


def test_a_content_length_over_the_limit_is_413_before_the_body_is_read(webhook):
    result = webhook.simulate_post(c.MUTATE_PATH, body=b"{}", headers={
        "Content-Type": "application/json", "Content-Length": str(10**12)})
    assert result.status_code == 413


def test_the_schedulers_refusal_is_relayed_bounded(scheduler_url):
    from tests.webhook.harness import review as make_review

    view = ClusterView()
    view.conf = view.conf.__class__(scheduler_service_address=scheduler_url)
    app = falcon.testing.TestClient(create_app(view, NAMESPACE))
    body = make_review(_configmap(data={"queues.yaml": ALIAS_BOMB}), kind="ConfigMap", namespace=NAMESPACE)
    result = _post(app, c.VALIDATE_PATH, body)
    assert result.status_code == 200 and result.json["response"]["allowed"] is False
    assert "aliases expand" in result.json["response"]["status"]["message"]
    assert len(result.content) < MAX_ANSWER


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
                     lambda children: st.lists(children, max_size=3)
                     | st.dictionaries(st.text(max_size=8), children, max_size=3), max_leaves=10)
_POD_FIELDS = ("metadata", "spec", "labels", "annotations", "priorityClassName", "user.info")


@st.composite
def _hostile_reviews(draw):
    kind = draw(st.sampled_from(["Pod", "ConfigMap", "Deployment", "CronJob"]))
    if kind == "ConfigMap":
        obj = _configmap(**draw(st.dictionaries(st.sampled_from(["data", "binaryData", "metadata"]), _json)))
    else:
        obj = pod()
        field = draw(st.sampled_from(_POD_FIELDS))
        value = draw(_json)
        if field in ("metadata", "spec"):
            obj[field] = value
        elif field == "priorityClassName":
            obj["spec"]["priorityClassName"] = value
        elif field == "user.info":
            obj["metadata"]["annotations"] = {ANNOTATION_USER_INFO: json.dumps(value)}
        else:
            obj["metadata"][field] = value
    body = review(None, kind=kind, namespace=NAMESPACE if kind == "ConfigMap" else "default",
                  operation=draw(st.sampled_from(["CREATE", "UPDATE"])))
    body["request"].update(name=c.CONFIGMAP_CONFIGS, object=obj, oldObject=draw(st.none() | st.just(obj)))
    request_field = draw(st.sampled_from(["uid", "kind", "namespace", "userInfo", "operation", None]))
    if request_field:
        body["request"][request_field] = draw(_json)
    return draw(st.sampled_from([c.MUTATE_PATH, c.VALIDATE_PATH])), body


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(_hostile_reviews())
def test_fuzzed_reviews_are_answered_never_with_a_500(webhook, case):
    path, body = case
    result = _post(webhook, path, body)
    assert result.status_code in (200, 400), result.text
    if result.status_code == 200:
        assert isinstance(result.json["response"]["allowed"], bool)
