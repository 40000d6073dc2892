import json
import urllib.error
import urllib.request

import pytest

from rest.app import SchedulerView
from rest.server import RestServer


class Client:
    def __init__(self, url: str) -> None:
        self.url = url

    def request(self, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.headers, error.read()

    def get(self, path: str, **headers):
        status, _, body = self.request("GET", path, headers=headers)
        return status, json.loads(body) if body else None


@pytest.fixture
def rest(core_factory):
    """A running core, and its REST API on a free port."""
    core = core_factory()
    server = RestServer(SchedulerView(core.scheduler), host="127.0.0.1", port=0)
    yield core, Client(server.url)
    server.stop()
