"""The shim's Kubernetes API client: the official client's configuration, authentication and connection
pool, with plain JSON in and out.

The generated API methods validate every argument and build a model for every object; on the shim's
hot paths (a list of 50,000 pods, a watch, thousands of binds) that costs more than the scheduling.
``KubeClient`` therefore takes its configuration (kubeconfig, tokens, TLS) from the official
``ApiClient``, sends lists and watches through it, sends the many small requests on a leaner
transport (``transport``), and parses every response with ``orjson``. Writes that must survive a flaky API
server (binding) are retried with tenacity: 5xx, 429 (honouring ``Retry-After``) and connection errors,
exponential backoff with jitter, bounded in attempts and time. Every request, retries included, first
waits for a token of the client's rate limiter (``kubernetes.qps`` / ``kubernetes.burst``, see
``ratelimit``), as client-go's clients do. Every write (any method but GET), retries included, first
passes the client's write fence (``fence``): with leader election only the leader writes.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson
import tenacity
import urllib3

from actors.shim.fence import OPEN, Fence, Fenced
from actors.shim.ratelimit import TokenBucket
from actors.shim.transport import RECEIVE_SIZE, FastTransport, Pending, TransportError

log = logging.getLogger(__name__)

JSON = "application/json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})
TOKEN_REFRESH_PERIOD = 60.0
WATCH_CONNECT_TIMEOUT = 10.0  # seconds to open a watch's connection (its reads wait up to its read timeout)
DEFAULT_QPS, DEFAULT_BURST = 1000.0, 1000  # upstream's kubernetes.qps / kubernetes.burst


class _Throttled:
    """Runs a configuration's token-refresh hook at most once per ``period`` seconds. The official
    client calls it before every request, and it rebuilds part of the configuration each time (about
    0.4 ms, a third of a bind's CPU); tokens live far longer than the period."""

    def __init__(self, hook: Any, period: float) -> None:
        self._hook = hook
        self._period = period
        self._next = 0.0
        self._lock = threading.Lock()

    def __call__(self, configuration: Any) -> None:
        with self._lock:
            now = time.monotonic()
            if now < self._next:
                return
            self._next = now + self._period
        self._hook(configuration)
        replaced = configuration.refresh_api_key_hook
        if replaced is not self:  # the kubeconfig loader installs a fresh hook each time it runs
            self._hook = replaced
            configuration.refresh_api_key_hook = self


class ApiError(Exception):
    """A non-2xx answer; ``message`` and ``reason`` come from the Kubernetes ``Status`` when present."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message
        self.retry_after = retry_after


class WatchExpired(Exception):
    """The watch's resourceVersion is too old (410 Gone): the caller must list again."""


class BindError(Exception):
    """A binding that finally failed; ``gone`` when the pod no longer exists."""

    def __init__(self, message: str, gone: bool = False) -> None:
        super().__init__(message)
        self.gone = gone


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How hard a write is retried: up to ``attempts`` tries within ``deadline`` seconds, waiting a
    random time up to ``initial * 2**n`` (at most ``maximum``), or the server's ``Retry-After``."""

    attempts: int = 6
    deadline: float = 30.0
    initial: float = 0.05
    maximum: float = 2.0


CONNECTION_ERRORS = (urllib3.exceptions.HTTPError, TransportError)


def is_transient(error: BaseException) -> bool:
    """Worth retrying: the server was overloaded or failing, or the connection broke."""
    if isinstance(error, ApiError):
        return error.status in TRANSIENT_STATUS
    return isinstance(error, CONNECTION_ERRORS)


class _WaitRetryAfterOrBackoff(tenacity.wait.wait_base):
    def __init__(self, policy: RetryPolicy) -> None:
        self._backoff = tenacity.wait_random_exponential(multiplier=policy.initial, max=policy.maximum)
        self._maximum = policy.maximum

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        wait = self._backoff(retry_state)
        error = retry_state.outcome.exception() if retry_state.outcome else None
        if isinstance(error, ApiError) and error.retry_after is not None:
            wait = max(wait, min(error.retry_after, self._maximum))
        return wait


class KubeClient:
    """Plain-JSON access to the API server through an official ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client: Any, retry: RetryPolicy = RetryPolicy(),
                 request_timeout: float = 30.0, fence: Fence = OPEN) -> None:
        self.api_client = api_client
        self.fence = fence
        self.retry = retry
        self.request_timeout = request_timeout
        self.rate = TokenBucket(DEFAULT_QPS, DEFAULT_BURST)
        self._transport = FastTransport(api_client, request_timeout) if FastTransport.usable(api_client) else None
        # The policy without its stop: each retried request stops on what its first attempt left of the deadline.
        self._retrying = tenacity.Retrying(
            wait=_WaitRetryAfterOrBackoff(retry),
            retry=tenacity.retry_if_exception(is_transient),
            reraise=True,
            before_sleep=lambda state: log.debug("retrying after %s", state.outcome.exception()),
        )

    @classmethod
    def connect(cls, kubeconfig: str | None = None, pool_size: int = 32, **kwargs: Any) -> KubeClient:
        """A client from a kubeconfig file, else from the in-cluster service account.

        Raises ``RuntimeError`` with a hint when neither is available.
        """
        from kubernetes import client, config

        configuration = client.Configuration()
        try:
            if kubeconfig:
                config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
            else:
                config.load_incluster_config(client_configuration=configuration)
        except (config.ConfigException, OSError) as error:
            where = f"kubeconfig {kubeconfig}" if kubeconfig else "the in-cluster service account"
            raise RuntimeError(f"cannot configure the Kubernetes client from {where}: {error}. "
                               "Pass --kubeconfig PATH (or run inside a cluster, or use --embedded).") from None
        configuration.connection_pool_maxsize = pool_size
        if configuration.refresh_api_key_hook is not None:
            configuration.refresh_api_key_hook = _Throttled(configuration.refresh_api_key_hook, TOKEN_REFRESH_PERIOD)
        return cls(client.ApiClient(configuration), **kwargs)

    def close(self) -> None:
        self.api_client.close()

    # ---- plain requests ------------------------------------------------------------------------

    def _send(self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None,
              content_type: str = JSON, timeout: Any = None) -> Any:
        headers = {"Accept": JSON}
        if body is not None:
            headers["Content-Type"] = content_type
        request = self.api_client.param_serialize(method, path, query_params=query or [], header_params=headers,
                                                  body=body, auth_settings=["BearerToken"])
        return self.api_client.call_api(*request, _request_timeout=timeout or self.request_timeout)

    def request(self, method: str, path: str, query: list[tuple[str, str]] | None = None, body: Any = None,
                content_type: str = JSON, decode: Callable[[bytes], Any] = orjson.loads) -> dict:
        """One request; the JSON answer as ``decode`` makes it, or ``ApiError`` for a non-2xx status. A
        write the fence refuses raises ``Fenced`` (never retried)."""
        if method == "GET":
            return self._exchange(method, path, query, body, content_type, decode)
        with self.fence.admit(method, path):
            return self._exchange(method, path, query, body, content_type, decode)

    def _exchange(self, method: str, path: str, query: list[tuple[str, str]] | None, body: Any,
                  content_type: str, decode: Callable[[bytes], Any]) -> dict:
        self.rate.wait()
        if self._transport is not None:
            headers = {"Accept": JSON}
            payload = None
            if body is not None:
                headers["Content-Type"] = content_type
                payload = orjson.dumps(body)
            status, reason, retry_after, data = self._transport.exchange(method, path, query, payload, headers)
        else:
            response = self._send(method, path, query, body, content_type)
            status, reason, retry_after, data = (response.status, response.reason,
                                                 response.getheader("Retry-After"), response.read())
        return _decoded(status, reason, retry_after, data, decode)

    def request_retrying(self, method: str, path: str, **kwargs: Any) -> dict:
        """``request`` under the retry policy."""
        # The first attempt runs outside tenacity: its bookkeeping cost a third of a bind's CPU time,
        # and nearly every request succeeds at once. A transient failure enters the policy as its
        # first failed attempt, with the deadline less the time that attempt took, so the waits, the
        # attempt count and the deadline stay the same.
        began = time.monotonic()
        try:
            return self.request(method, path, **kwargs)
        except Exception as error:
            if not is_transient(error):
                raise
            first_failure: BaseException | None = error
        left = max(self.retry.deadline - (time.monotonic() - began), 0.0)
        retrying = self._retrying.copy(stop=tenacity.stop_after_attempt(self.retry.attempts)
                                       | tenacity.stop_after_delay(left))

        def attempt() -> dict:
            nonlocal first_failure
            if first_failure is not None:
                failure, first_failure = first_failure, None
                raise failure
            return self.request(method, path, **kwargs)

        return retrying(attempt)

    # ---- list and watch ------------------------------------------------------------------------

    def list(self, path: str, page_size: int = 5000) -> tuple[list[dict], str]:
        """Every object under ``path`` (following ``continue`` tokens) and the list's resourceVersion."""
        items: list[dict] = []
        resource_version = ""
        for page, version in self.pages(path, page_size):
            items.extend(page)
            resource_version = version
        return items, resource_version

    def pages(self, path: str, page_size: int = 5000, undecoded: bool = False) -> Iterator[tuple[list, str]]:
        """The objects under ``path`` one page at a time (following ``continue`` tokens), each with the
        list's resourceVersion once known (``""`` until the last page): a reader that keeps only what
        it makes of each page never holds the whole list at once. The next page is asked for before a
        page is handed over, so that the server prepares it while the reader reads this one.
        ``undecoded``: each object as its JSON text (``msgspec.Raw``), for a reader that decodes only
        what it reads (``undecoded_list``)."""
        decode = undecoded_list if undecoded else orjson.loads
        query = [("limit", str(page_size))]
        ahead: Pending | None = None
        try:
            while True:
                page = self._page(path, query, ahead, decode)
                metadata = page.get("metadata") or {}
                token = metadata.get("continue") or ""
                if token:
                    query = [("limit", str(page_size)), ("continue", token)]
                    ahead = self._ask_ahead(path, query)
                yield page.get("items") or [], "" if token else metadata.get("resourceVersion", "")
                if not token:
                    return
        finally:
            if ahead is not None:
                ahead.close()

    def _ask_ahead(self, path: str, query: list[tuple[str, str]]) -> Pending | None:
        """A GET sent now and read later; ``None`` without the lean transport, or when it cannot be sent
        (the page is then asked for as any request is)."""
        if self._transport is None:
            return None
        self.rate.wait()
        try:
            return self._transport.send_ahead(path, query, {"Accept": JSON})
        except TransportError as error:
            log.debug("asking ahead failed: %s", error)
            return None

    def _page(self, path: str, query: list[tuple[str, str]], ahead: Pending | None,
              decode: Callable[[bytes], Any]) -> dict:
        """The answer to the GET of ``query``, read from ``ahead`` when it was sent ahead; one that failed
        there in a way worth retrying is asked for again under the retry policy."""
        if ahead is not None:
            try:
                return _decoded(*ahead.answer(), decode)
            except Exception as error:
                if not is_transient(error):
                    raise
                log.debug("a page asked for ahead failed, asking again: %s", error)
        return self.request_retrying("GET", path, query=query, decode=decode)

    def watch(self, path: str, resource_version: str, timeout_seconds: int, read_timeout: float) -> WatchStream:
        """Open a watch from ``resource_version`` with bookmarks; the server ends it after
        ``timeout_seconds``, and a connection silent for ``read_timeout`` seconds fails."""
        query = [("watch", "true"), ("allowWatchBookmarks", "true"), ("resourceVersion", resource_version),
                 ("timeoutSeconds", str(timeout_seconds))]
        self.rate.wait()
        if self._transport is not None:
            status, reason, retry_after, body = self._transport.stream(path, query, {"Accept": JSON}, read_timeout,
                                                                       WATCH_CONNECT_TIMEOUT)
            if 200 <= status <= 299:
                return WatchStream(body.chunks(), body.close, drained_below=RECEIVE_SIZE // 2)
            data = body
        else:
            response = self._send("GET", path, query, timeout=(WATCH_CONNECT_TIMEOUT, read_timeout))
            status, reason, retry_after = response.status, response.reason, response.getheader("Retry-After")
            if 200 <= status <= 299:
                return WatchStream(_streamed(response.response), response.response.shutdown)
            data = response.read()
        if status == 410:
            raise WatchExpired(f"watch {path} from resourceVersion {resource_version}: 410 Gone")
        raise _error(status, reason, data, retry_after)

    # ---- writes --------------------------------------------------------------------------------

    def bind(self, namespace: str, name: str, node: str, uid: str = "") -> None:
        """Bind the pod to ``node`` (retrying transient failures). Already bound to that very node
        counts as success; anything else that finally fails raises ``BindError``."""
        body: dict = {"apiVersion": "v1", "kind": "Binding",
                      "metadata": {"name": name, "namespace": namespace},
                      "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        if uid:
            body["metadata"]["uid"] = uid
        try:
            self.request_retrying("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/binding", body=body)
        except ApiError as error:
            if error.status == 404:
                raise BindError(f"pod {namespace}/{name} no longer exists", gone=True) from None
            if error.status == 409:
                self._confirm_bound(namespace, name, node, uid, error)
                return
            raise BindError(f"binding {namespace}/{name} to {node} failed: {error}") from None
        except (*CONNECTION_ERRORS, Fenced) as error:
            raise BindError(f"binding {namespace}/{name} to {node} failed: {error}") from None

    def bind_all(self, binds: list[tuple[str, str, str, str]]) -> list[BindError | None]:
        """Bind each ``(namespace, name, node, uid)``, the requests pipelined on one connection (one
        write, the answers read in order): what ``bind`` does for each, at a fraction of the system
        calls. ``None`` for a pod bound, else its ``BindError``. A request the fence refuses fails
        alone; one answered with a transient failure, or cut off by a broken connection, goes through
        ``bind`` (its retry policy; a pod already bound there counts as bound)."""
        if self._transport is None or len(binds) < 2:
            return [self._bind_error(self.bind, *bind) for bind in binds]
        results: list[BindError | None] = [None] * len(binds)
        sent: list[int] = []
        requests = []
        with contextlib.ExitStack() as admitted:
            for index, (namespace, name, node, uid) in enumerate(binds):
                path = f"/api/v1/namespaces/{namespace}/pods/{name}/binding"
                try:
                    admitted.enter_context(self.fence.admit("POST", path))
                except Fenced as error:
                    results[index] = BindError(f"binding {namespace}/{name} to {node} failed: {error}")
                    continue
                body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace},
                        "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
                if uid:
                    body["metadata"]["uid"] = uid
                requests.append(("POST", path, None, orjson.dumps(body), {"Accept": JSON, "Content-Type": JSON}))
                sent.append(index)
            if requests:  # they go in one write: paced as one wait for them all, not one sleep each
                self.rate.wait(len(requests))
            answers, _ = self._transport.exchange_all(requests) if requests else ([], None)
        for position, index in enumerate(sent):
            namespace, name, node, uid = binds[index]
            if position >= len(answers):  # cut off by a broken connection
                results[index] = self._bind_error(self.bind, namespace, name, node, uid)
                continue
            status, reason, retry_after, data = answers[position]
            if 200 <= status <= 299:
                continue
            error = _error(status, reason, data, retry_after)
            if is_transient(error):
                results[index] = self._bind_error(self.bind, namespace, name, node, uid)
            elif status == 404:
                results[index] = BindError(f"pod {namespace}/{name} no longer exists", gone=True)
            elif status == 409:
                results[index] = self._bind_error(self._confirm_bound, namespace, name, node, uid, error)
            else:
                results[index] = BindError(f"binding {namespace}/{name} to {node} failed: {error}")
        return results

    @staticmethod
    def _bind_error(bind: Any, *args: Any) -> BindError | None:
        try:
            bind(*args)
        except BindError as error:
            return error
        return None

    def _confirm_bound(self, namespace: str, name: str, node: str, uid: str, conflict: ApiError) -> None:
        try:
            pod = self.request_retrying("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
        except ApiError as error:
            raise BindError(f"pod {namespace}/{name} no longer exists", gone=error.status == 404) from None
        except CONNECTION_ERRORS as error:
            raise BindError(f"binding {namespace}/{name}: conflict, and the pod cannot be read: {error}") from None
        if uid and (pod.get("metadata") or {}).get("uid") != uid:
            raise BindError(f"pod {namespace}/{name} was replaced by another pod of that name", gone=True)
        bound_to = (pod.get("spec") or {}).get("nodeName")
        if bound_to != node:
            raise BindError(f"binding {namespace}/{name} to {node} refused: {conflict.message}"
                            + (f" (bound to {bound_to})" if bound_to else ""))

    def annotate_pod(self, namespace: str, name: str, annotations: Mapping[str, str]) -> bool:
        """Merge ``annotations`` into the pod's (retrying transient failures); ``False`` when it is gone."""
        return self._merge_into_pod(f"/api/v1/namespaces/{namespace}/pods/{name}",
                                    {"metadata": {"annotations": dict(annotations)}})

    def fail_pod(self, namespace: str, name: str, reason: str, message: str) -> bool:
        """Set the pod's phase to ``Failed`` with ``reason`` (as the kubelet would); ``False`` when it is
        gone."""
        return self._merge_into_pod(f"/api/v1/namespaces/{namespace}/pods/{name}/status",
                                    {"status": {"phase": "Failed", "reason": reason, "message": message}})

    def _merge_into_pod(self, path: str, body: dict) -> bool:
        try:
            self.request_retrying("PATCH", path, body=body, content_type="application/merge-patch+json")
        except ApiError as error:
            if error.status == 404:
                return False
            raise
        return True

    def create_pod(self, namespace: str, manifest: Mapping) -> dict:
        """Create a pod (retrying transient failures); the created pod. A retry that finds the pod
        made by its lost first attempt takes that one."""
        path = f"/api/v1/namespaces/{namespace}/pods"
        try:
            return self.request_retrying("POST", path, body=manifest)
        except ApiError as error:
            if error.status != 409:
                raise
            return self.request_retrying("GET", f"{path}/{manifest['metadata']['name']}")

    def delete_pod(self, namespace: str, name: str, uid: str) -> bool:
        """Delete the pod if it is still the one with ``uid`` (checked before, and sent as a
        precondition); ``False`` when it is gone or was replaced by another pod of that name."""
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        body = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
        try:
            current = self.request_retrying("GET", path)
            if (current.get("metadata") or {}).get("uid") != uid:
                return False
            self.request_retrying("DELETE", path, body=body)
        except ApiError as error:
            if error.status in (404, 409):
                return False
            raise
        return True

    def evict_pod(self, namespace: str, name: str, uid: str) -> str | None:
        """Evict the pod through the Eviction API (policy/v1), which honours its disruption budgets:
        None when it is evicted or already gone, else why the API server refused (429: a budget)."""
        body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace},
                "deleteOptions": {"preconditions": {"uid": uid}}}
        try:
            self.request("POST", f"/api/v1/namespaces/{namespace}/pods/{name}/eviction", body=body)
        except ApiError as error:
            if error.status in (404, 409):
                return None
            if error.status == 429:
                return error.message or "the pod's disruption budget allows no eviction"
            raise
        return None


def _decoded(status: int, reason: str, retry_after: str | None, data: bytes,
             decode: Callable[[bytes], Any] = orjson.loads) -> dict:
    """A 2xx answer's JSON as ``decode`` makes it (``{}`` when empty), else the ``ApiError`` it is raised as."""
    if not 200 <= status <= 299:
        raise _error(status, reason, data, retry_after)
    return decode(data) if data else {}


_ABSENT = msgspec.Raw(b"")


class _UndecodedList(msgspec.Struct, gc=False):
    metadata: msgspec.Raw = _ABSENT
    items: list[msgspec.Raw] | None = None


_UNDECODED_LIST = msgspec.json.Decoder(_UndecodedList)
# A JSON string, or one of the characters that open, close or separate values.
_LIST_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[][{},]')


def undecoded_list(data: bytes) -> dict:
    """A list's JSON with its metadata decoded and its items left as JSON text, one ``msgspec.Raw``
    each. A list msgspec refuses (an item nested deeper than it recurses, a field of another type) is
    split by its brackets instead, so that one object no decoder reads costs only itself."""
    try:
        page = _UNDECODED_LIST.decode(data)
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        return _split_list(data)
    return {"metadata": orjson.loads(memoryview(page.metadata)) if page.metadata is not _ABSENT else {},
            "items": page.items or []}


def _split_list(data: bytes) -> dict:
    """``undecoded_list`` by a scan of the JSON's strings and brackets, which keeps no stack, so no
    nesting is too deep for it; the list without its items is decoded by orjson (``ValueError`` when
    it cannot be)."""
    depth, key, array, start = 0, b"", None, 0
    elements: list[msgspec.Raw] = []
    found = None  # the items array's span and its elements
    for match in _LIST_TOKENS.finditer(data):
        token = match.group()
        if token == b"{" or token == b"[":
            depth += 1
            if depth == 2 and token == b"[" and key == b'"items"':
                array, start, elements = match.start(), match.end(), []
        elif token == b"}" or token == b"]":
            if array is not None and depth == 2:  # the items array closes
                if data[start:match.start()].strip():
                    elements.append(msgspec.Raw(data[start:match.start()].strip()))
                found, array = (array, match.end(), elements), None
            depth -= 1
        elif token == b"," and array is not None and depth == 2:
            elements.append(msgspec.Raw(data[start:match.start()].strip()))
            start = match.end()
        key = token if depth == 1 else b""
    if found is None:
        page, elements = orjson.loads(data), []
    else:
        opened, closed, elements = found
        page = orjson.loads(data[:opened] + b"[]" + data[closed:])
    if not isinstance(page, dict):
        raise ValueError(f"a list's answer is no JSON object: {data[:100]!r}")
    return {"metadata": page.get("metadata") or {}, "items": elements}


def _error(status: int, reason: str, data: bytes, retry_after: str | None) -> ApiError:
    message = data.decode("utf-8", "replace")[:500]
    try:
        document = orjson.loads(data)
        if isinstance(document, dict):
            message = document.get("message", message)
            reason = document.get("reason") or reason
    except ValueError:
        pass
    try:
        seconds = float(retry_after) if retry_after else None
    except ValueError:
        seconds = None
    return ApiError(status, reason or "", message, seconds)


class WatchStream:
    """The events of one watch as ``(type, object)`` pairs: ``ADDED``, ``MODIFIED``, ``DELETED`` with the
    object's JSON, ``BOOKMARK`` with only its metadata, read from ``chunks`` of its body. An ``ERROR``
    event with status 410 raises ``WatchExpired``; a broken connection raises the transport's error.
    ``close`` may be called from another thread to end a blocked read (``shutdown`` is what does it).
    ``drained_below``: a chunk shorter than that many bytes came from a read that took all there was
    (``None``: the chunks do not tell, and the stream never lingers)."""

    def __init__(self, chunks: Iterator[bytes], shutdown: Callable[[], object],
                 drained_below: int | None = None) -> None:
        self._chunks = chunks
        self._shutdown = shutdown
        self._closed = threading.Event()
        self._drained_below = drained_below

    def __iter__(self) -> Iterator[tuple[str, dict]]:
        for batch in self.batches():
            yield from batch

    def batches(self, linger: float = 0.0) -> Iterator[list[tuple[str, dict]]]:
        """The events as they arrive: one list per chunk read from the connection. With ``linger``, a
        batch from a read that took all there was (the events trickle in) is followed by a pause of
        that many seconds before the next read, so what arrives meanwhile comes as one batch, not one
        each; after a larger read (more was waiting) the next read follows at once."""
        pending = b""
        lingers = linger > 0 and self._drained_below is not None
        try:
            for chunk in self._chunks:
                pending += chunk
                if b"\n" not in chunk:
                    continue
                *lines, pending = pending.split(b"\n")
                yield [_event(orjson.loads(line)) for line in lines if line.strip()]
                if lingers and len(chunk) < self._drained_below:
                    self._closed.wait(linger)  # close() ends it at once
            if pending.strip():
                yield [_event(orjson.loads(pending))]
        except Exception:
            if self._closed.is_set():
                return
            raise

    def close(self) -> None:
        self._closed.set()
        try:
            self._shutdown()
        except Exception:  # the stream may already be gone: closing is best effort
            log.debug("closing a watch stream", exc_info=True)


def _streamed(response: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    """A watch's body through urllib3 (no lean transport): one HTTP chunk at a time."""
    try:
        yield from response.stream(65536, decode_content=True)
    finally:
        response.release_conn()


def _event(document: Mapping) -> tuple[str, dict]:
    kind = document.get("type", "")
    obj = document.get("object") or {}
    if kind == "ERROR":
        code = obj.get("code")
        if code == 410:
            raise WatchExpired(f"410 Gone: {obj.get('message', 'resource version expired')}")
        raise ApiError(code or 500, obj.get("reason", ""), obj.get("message", "watch error"))
    return kind, obj
