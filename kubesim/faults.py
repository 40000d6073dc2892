"""Fault injection: failed requests, latency, dropped watches, expired resource versions."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from kubesim.errors import ApiError

_REASONS = {400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
            410: "Expired", 422: "Invalid", 429: "TooManyRequests", 500: "InternalError",
            503: "ServiceUnavailable", 504: "Timeout"}


@dataclass
class _Rule:
    verb: str
    resource: str
    namespace: str | None
    remaining: int | None  # None: every matching request

    def matches(self, verb: str, resource: str, namespace: str | None, renewal: bool = False) -> bool:
        verbs = {verb, "bind"} if resource == "pods/binding" else {verb}
        if renewal:
            verbs.add("renew")
        return ((self.verb == "*" or self.verb in verbs) and self.resource in ("*", resource)
                and (self.namespace is None or self.namespace == namespace))


@dataclass
class _FailRule(_Rule):
    status: int = 500
    retry_after: int = 1
    apply_after: float | None = None  # None: refused; else carried out that many seconds after the answer


@dataclass
class _LatencyRule(_Rule):
    seconds: float = 0.0


class Faults:
    """The fault plan of one kubesim; thread-safe, driven from tests or ``POST /kubesim/faults``."""

    def __init__(self, sim) -> None:
        self._sim = sim
        self._lock = threading.Lock()
        self._failures: list[_FailRule] = []
        self._latencies: list[_LatencyRule] = []
        self._gone: dict[str, int] = {}

    def fail(self, verb: str = "*", resource: str = "*", status: int = 500, count: int | None = 1,
             namespace: str | None = None, retry_after: int = 1, apply_after: float | None = None) -> None:
        """Fail the next ``count`` requests matching verb and resource (count None: until cleared).
        Besides the request verbs, ``bind`` matches creates of ``pods/binding`` and ``renew`` the updates
        of a Lease by the holder it names (a leader renewing; a candidate taking it over is not one).
        ``apply_after``: each failed write is still carried out, that many seconds after its error
        answer (0: at once): a write the server applied after the client gave up on it."""
        with self._lock:
            self._failures.append(_FailRule(verb, resource, namespace, count, status, retry_after, apply_after))

    def latency(self, verb: str = "*", resource: str = "*", seconds: float = 0.05,
                namespace: str | None = None) -> None:
        with self._lock:
            self._latencies.append(_LatencyRule(verb, resource, namespace, None, seconds))

    def gone_next_watches(self, count: int = 1, resource: str = "*") -> None:
        """The next ``count`` watches of ``resource`` get a 410 Expired error event."""
        with self._lock:
            self._gone[resource] = self._gone.get(resource, 0) + count

    def drop_watches(self) -> int:
        """Cut every open watch stream now, mid-stream; returns how many were cut."""
        return self._sim.drop_watches()

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._latencies.clear()
            self._gone.clear()

    # Used by the server, on every request: an empty plan answers without taking the lock.
    def delay_for(self, verb: str, resource: str, namespace: str | None) -> float:
        if not self._latencies:
            return 0.0
        with self._lock:
            return sum(r.seconds for r in self._latencies if r.matches(verb, resource, namespace))

    def has_renewal_rules(self) -> bool:
        return any(rule.verb == "renew" for rule in list(self._failures))

    def failure_for(self, verb: str, resource: str, namespace: str | None,
                    renewal: bool = False) -> tuple[ApiError, float | None] | None:
        """The injected error for a request, and when the request is carried out all the same (None:
        never). ``renewal``: the request renews a Lease (see ``fail``)."""
        if not self._failures:
            return None
        with self._lock:
            for rule in self._failures:
                if rule.matches(verb, resource, namespace, renewal):
                    if rule.remaining is not None:
                        rule.remaining -= 1
                        if rule.remaining <= 0:
                            self._failures.remove(rule)
                    headers = {"Retry-After": str(rule.retry_after)} if rule.status == 429 else {}
                    reason = _REASONS.get(rule.status, "InternalError")
                    return ApiError(rule.status, reason, f"injected fault: {verb} {resource} -> {rule.status}",
                                    headers=headers), rule.apply_after
        return None

    def take_gone(self, resource: str) -> bool:
        if not self._gone:
            return False
        with self._lock:
            for key in (resource, "*"):
                if self._gone.get(key, 0) > 0:
                    self._gone[key] -= 1
                    if not self._gone[key]:
                        del self._gone[key]
                    return True
        return False

    def apply(self, spec: dict) -> None:
        """The HTTP admin form: ``{"action": "fail"|"latency"|"gone"|"drop_watches"|"clear", ...}``."""
        action = spec.get("action")
        args = {k: v for k, v in spec.items() if k != "action"}
        if action == "fail":
            self.fail(**args)
        elif action == "latency":
            self.latency(**args)
        elif action == "gone":
            self.gone_next_watches(**args)
        elif action == "drop_watches":
            self.drop_watches()
        elif action == "clear":
            self.clear()
        else:
            raise ValueError(f"unknown fault action {action!r}")
