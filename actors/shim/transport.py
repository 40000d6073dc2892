"""A lean HTTP transport for the shim's many small requests (binds, events, patches).

Measured on the 2-core machine against kubesim: a bind through the official client's urllib3 stack
costs about 450 us of CPU, the same request on a kept-alive ``http.client`` connection about 150 us, and
binding is the scheduler's throughput limit. ``FastTransport`` therefore sends plain requests on one
keep-alive connection per thread, taking everything else from the official client's configuration:
server URL, TLS (CA, client certificate, verification) and the authentication headers the official
``ApiClient`` computes (token refresh included). Watches and lists keep using the official client.
A cluster reached through a proxy or with a TLS server name override uses the official client for
everything (``FastTransport.usable``).
"""

from __future__ import annotations

import http.client
import ssl
import threading
from typing import Any
from urllib.parse import urlencode, urlsplit


class TransportError(Exception):
    """The connection failed before an answer arrived (refused, reset, timed out, closed)."""


class FastTransport:
    """Keep-alive connections to the API server, one per calling thread."""

    def __init__(self, api_client: Any, timeout: float) -> None:
        configuration = api_client.configuration
        url = urlsplit(configuration.host)
        self._api_client = api_client
        self._https = url.scheme == "https"
        self._host = url.hostname or "localhost"
        self._port = url.port or (443 if self._https else 80)
        self._prefix = url.path.rstrip("/")
        self._timeout = timeout
        self._ssl = _ssl_context(configuration) if self._https else None
        self._local = threading.local()

    @staticmethod
    def usable(api_client: Any) -> bool:
        configuration = api_client.configuration
        return not configuration.proxy and not configuration.tls_server_name

    def exchange(self, method: str, path: str, query: list[tuple[str, str]] | None, body: bytes | None,
                 headers: dict[str, str]) -> tuple[int, str, str | None, bytes]:
        """Send one request; ``(status, reason, Retry-After header, body)``."""
        headers = {**self._api_client.default_headers, **headers}
        self._api_client.update_params_for_auth(headers, [], ["BearerToken"], path, method, body)
        target = self._prefix + path + ("?" + urlencode(query) if query else "")
        connection = self._connection()
        try:
            connection.request(method, target, body, headers)
            response = connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException) as error:
            connection.close()
            self._local.connection = None
            raise TransportError(f"{method} {path}: {type(error).__name__}: {error}") from None
        if response.will_close:
            connection.close()
            self._local.connection = None
        return response.status, response.reason, response.getheader("Retry-After"), data

    def close(self) -> None:
        """Close the calling thread's connection (others close when their threads end)."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None

    def _connection(self) -> http.client.HTTPConnection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            if self._https:
                connection = http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout,
                                                         context=self._ssl)
            else:
                connection = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
            self._local.connection = connection
        return connection


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context
