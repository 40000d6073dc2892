"""Which web pages elsewhere may read the REST API: CORS headers over real HTTP, by the allowed-origins
setting (``--rest-allowed-origins``; default ``*`` as upstream's web service)."""

from __future__ import annotations

import pytest

from rest.app import SchedulerView
from rest.cors import parse_origins
from rest.server import RestServer
from tests.rest.conftest import Client

UI = "https://yunikorn-ui.example.com"
ELSEWHERE = "https://evil.example.net"
UPSTREAM_HEADERS = "X-Requested-With,Content-Type,Accept,Origin"
QUEUES = b"partitions:\n  - name: default\n    queues:\n      - name: root\n"


@pytest.fixture
def serve(core_factory):
    core, servers = core_factory(), []

    def start(origins: str) -> Client:
        view = SchedulerView(core.scheduler, allowed_origins=parse_origins(origins))
        servers.append(RestServer(view, host="127.0.0.1", port=0))
        return Client(servers[-1].url)

    yield start
    for server in servers:
        server.stop()


def cors(headers) -> dict:
    return {name: value for name, value in headers.items() if name.lower().startswith("access-control-")}


def preflight(client: Client, origin: str):
    return client.request("OPTIONS", "/ws/v1/validate-conf", headers={
        "Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})


def test_by_default_any_page_may_read_as_upstream(serve):
    client = serve("*")
    status, headers, _ = client.request("GET", "/ws/v1/partitions", headers={"Origin": ELSEWHERE})
    assert status == 200
    assert cors(headers) == {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, OPTIONS",
                             "Access-Control-Allow-Headers": UPSTREAM_HEADERS}
    status, headers, _ = client.request("POST", "/ws/v1/validate-conf", QUEUES, {"Content-Type": "text/plain"})
    assert status == 200 and headers["Access-Control-Allow-Methods"] == "OPTIONS, POST"


def test_by_default_no_page_elsewhere_may_send_validate_conf_a_json_post(serve):
    """The preflight is answered as upstream's router answers it: the methods, no CORS grant (before, every
    origin was granted, with whatever headers it asked for)."""
    status, headers, _ = preflight(serve("*"), ELSEWHERE)
    assert status == 200 and headers["Allow"] == "OPTIONS, POST"
    assert cors(headers) == {}


def test_named_origins_may_read_and_send_preflighted_requests(serve):
    client = serve(f"{UI}/, https://other.example.com")
    status, headers, _ = client.request("GET", "/ws/v1/partitions", headers={"Origin": UI})
    assert status == 200 and headers["Access-Control-Allow-Origin"] == UI and "Origin" in headers["Vary"]
    status, headers, _ = preflight(client, UI)
    assert status == 200
    assert cors(headers) == {"Access-Control-Allow-Origin": UI, "Access-Control-Allow-Methods": "OPTIONS, POST",
                             "Access-Control-Allow-Headers": UPSTREAM_HEADERS}
    for request in (lambda: client.request("GET", "/ws/v1/partitions", headers={"Origin": ELSEWHERE}),
                    lambda: preflight(client, ELSEWHERE)):
        status, headers, _ = request()
        assert status == 200 and cors(headers) == {}


def test_no_origin_at_all(serve):
    client = serve("")
    status, headers, _ = client.request("GET", "/ws/v1/partitions", headers={"Origin": UI})
    assert status == 200 and cors(headers) == {}
    assert cors(preflight(client, UI)[1]) == {}
