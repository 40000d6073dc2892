"""Leader election on a ``coordination.k8s.io/v1`` Lease, as client-go's ``leaderelection`` does it.

Every candidate runs a ``LeaderElector`` thread. It reads the Lease every ``retry_period`` seconds; the
Lease is free when it names no holder (released), or was not renewed for its ``leaseDurationSeconds`` as
measured on this candidate's own clock since it last saw the record change (clocks of different machines
are never compared). A missing Lease is free to a candidate that never saw one held; one that did waits
that same full duration since the last change it saw, as the Lease might have been removed under a
leader still writing. A Lease that names this candidate while it does not lead (rewritten by someone
else, or left by its previous run) is held like any other. A free Lease is taken by an update that
carries the resourceVersion read, so of two candidates only one can win (the other gets 409 Conflict).
The Lease records ``holderIdentity``, ``acquireTime``, ``renewTime``, ``leaseDurationSeconds`` and
``leaseTransitions`` (counted up at each change of holder).

A standby waits between tries on a watch of the Lease, so a change (a release) wakes it at once. The
leader renews every ``retry_period`` seconds and watches the Lease in between. Each success opens the
write fence (``fence``) until ``renew_deadline`` seconds after the renewal began. Leadership is lost,
the fence closed and ``on_lost`` run (the scheduler then exits, and starts again as a candidate), on
first sight of a Lease this candidate does not hold or of no Lease at all, whether a watch event or a
read shows it, and when no renewal has succeeded for ``renew_deadline`` seconds. ``release`` (on
SIGTERM) closes the fence, waits for the writes under way, and writes the Lease with no holder, so a
standby takes over at its next look instead of after expiry.

In a pod (``pod`` set), the elector also labels its own pod ``yunikorn.apache.org/leader``: ``"false"``
as it starts (a restarted deposed leader included) and when it releases, ``"true"`` once it leads. The
chart's Service selects the label, so REST clients and the admission controller reach the leader while
both pods are Ready (a warm standby is, to the kubelet; see ``rest.leadership``). The Lease and this one
label are the only writes outside the fence: the elector writes them with its own client.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from actors.base import record
from actors.shim.client import CONNECTION_ERRORS, MERGE_PATCH, ApiError, KubeClient, WatchExpired, WatchStream
from actors.shim.fence import LeaderFence

log = logging.getLogger(__name__)
LEADER_LABEL = "yunikorn.apache.org/leader"


@record
class ElectionSettings:
    """kube-scheduler's ``--leader-elect-*`` settings, in seconds; ``identity`` names this candidate."""

    identity: str
    namespace: str = "default"
    name: str = "yunikorn-scheduler"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    pod: tuple[str, str] | None = None  # (namespace, name) of this candidate's pod, to label

    def problems(self) -> list[str]:
        """What client-go would refuse in these settings (empty when they are sound)."""
        found = []
        if not self.identity:
            found.append("the identity must not be empty")
        if self.retry_period <= 0:
            found.append("the retry period must be positive")
        if self.renew_deadline <= 1.2 * self.retry_period:  # client-go's JitterFactor
            found.append("the renew deadline must be longer than 1.2 times the retry period")
        if self.lease_duration <= self.renew_deadline:
            found.append("the lease duration must be longer than the renew deadline")
        return found


@record
class Leadership:
    """What a reader (REST) shows: who this candidate is, whether it leads, who leads (``""``: nobody
    known), and whether it is warm (recovered ahead of leading; the process fills it in)."""

    identity: str
    leading: bool
    leader: str
    warm: bool = False


def micro_time(at: datetime | None = None) -> str:
    """A Kubernetes ``MicroTime``: RFC 3339 with microseconds."""
    return (at or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """See the module docstring. ``on_lead`` and ``on_lost`` run on the elector's thread."""

    def __init__(self, client: KubeClient, settings: ElectionSettings, fence: LeaderFence,
                 on_lead: Callable[[], None], on_lost: Callable[[], None], clock=time.monotonic) -> None:
        self._client = client
        self._settings = settings
        self._fence = fence
        self._on_lead = on_lead
        self._on_lost = on_lost
        self._clock = clock
        self._collection = f"/apis/coordination.k8s.io/v1/namespaces/{settings.namespace}/leases"
        self._path = f"{self._collection}/{settings.name}"
        self._stream: WatchStream | None = None  # the watch a standby waits on
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._observed: dict = {}  # the Lease's spec as last read or written
        self._observed_at = 0.0  # when the spec last changed, on this candidate's clock
        self._resource_version = ""
        self._leading = False
        self._thread = threading.Thread(target=self._run, name="leader-elector", daemon=True)

    def start(self) -> LeaderElector:
        log.info("leader election: candidate %s for lease %s/%s", self._settings.identity,
                 self._settings.namespace, self._settings.name)
        self._thread.start()
        return self

    def status(self) -> Leadership:
        with self._lock:
            return Leadership(self._settings.identity, self._leading, self._observed.get("holderIdentity") or "")

    def stop(self, release: bool = True, wait_for_writes: float = 5.0) -> None:
        """End the election; a leader closes its fence, waits up to ``wait_for_writes`` seconds for the
        writes under way, and (``release``) gives the Lease up."""
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
        self._thread.join(timeout=self._settings.renew_deadline + 5)
        if not self._leading:
            return
        self._fence.close(wait=wait_for_writes)
        with self._lock:
            self._leading = False
        if release:
            self._label(False)
            self._release()

    def _label(self, leading: bool) -> None:
        """Label this candidate's pod (when it runs in one) as the leader or not; a failure is logged:
        the label only routes REST clients."""
        if self._settings.pod is None:
            return
        namespace, name = self._settings.pod
        try:
            self._client.request("PATCH", f"/api/v1/namespaces/{namespace}/pods/{name}",
                                 body={"metadata": {"labels": {LEADER_LABEL: "true" if leading else "false"}}},
                                 content_type=MERGE_PATCH)
        except (ApiError, *CONNECTION_ERRORS) as error:
            log.warning("leader election: cannot label pod %s/%s: %s", namespace, name, error)

    # ---- the loop ------------------------------------------------------------------------------

    def _run(self) -> None:
        s = self._settings
        self._label(False)
        while not self._stopping.is_set():
            began = self._clock()
            if self._try_acquire_or_renew(began):
                self._fence.open_until(began + s.renew_deadline)
                with self._lock:
                    self._leading = True
                log.warning("leader election: %s now leads", s.identity)
                self._label(True)
                self._on_lead()
                self._renew_until_lost()
                return
            self._await_change(s.retry_period)

    def _await_change(self, timeout: float, leading: bool = False) -> None:
        """Wait up to ``timeout`` seconds on a watch from the version last read or written: a standby
        wakes at any change of the Lease (a release is taken at once rather than at the next try), a
        leader only at a change that takes the Lease from it, which it records as observed."""
        with self._lock:
            version = self._resource_version
        stream = None
        if version:
            try:
                stream = self._client.watch(self._collection, version, timeout_seconds=max(1, math.ceil(timeout)),
                                            read_timeout=timeout + 5)
            except (ApiError, WatchExpired, *CONNECTION_ERRORS) as error:
                log.debug("leader election: cannot watch the lease: %s", error)
        if stream is None:
            self._stopping.wait(timeout)
            return
        with self._lock:
            if self._stopping.is_set():  # ``stop`` came before there was a stream to close
                stream.close()
                return
            self._stream = stream
        closer = threading.Timer(timeout, stream.close)
        closer.start()
        try:
            for kind, lease in stream:
                if kind == "BOOKMARK" or (lease.get("metadata") or {}).get("name") != self._settings.name:
                    continue
                if not leading:
                    break
                spec = {} if kind == "DELETED" else lease.get("spec") or {}
                if spec.get("holderIdentity") != self._settings.identity:
                    self._observe(spec, (lease.get("metadata") or {}).get("resourceVersion", ""), self._clock())
                    break
        except (ApiError, WatchExpired, *CONNECTION_ERRORS, ValueError) as error:
            log.debug("leader election: watching the lease failed: %s", error)
        finally:
            closer.cancel()
            stream.close()
            with self._lock:
                self._stream = None

    def _renew_until_lost(self) -> None:
        s = self._settings
        renewed = self._clock()
        while True:
            self._await_change(s.retry_period, leading=True)
            if self._stopping.is_set():
                return  # ``stop`` closes the fence and releases
            if not self._still_holder():
                break
            began = self._clock()
            if self._try_acquire_or_renew(began, leading=True):
                self._fence.open_until(began + s.renew_deadline)
                renewed = began
            elif not self._still_holder() or self._clock() - renewed >= s.renew_deadline:
                break
        self._fence.close()
        with self._lock:
            self._leading = False
        log.error("leader election: %s lost the lease (last renewed %.1f s ago); no more writes",
                  s.identity, self._clock() - renewed)
        self._on_lost()

    def _still_holder(self) -> bool:
        with self._lock:
            return self._observed.get("holderIdentity") == self._settings.identity

    # ---- one attempt (client-go's tryAcquireOrRenew) --------------------------------------------

    def _try_acquire_or_renew(self, now: float, leading: bool = False) -> bool:
        s = self._settings
        stamp = micro_time()
        wanted = {"holderIdentity": s.identity, "leaseDurationSeconds": _seconds(s.lease_duration),
                  "acquireTime": stamp, "renewTime": stamp, "leaseTransitions": 0}
        try:
            current = self._client.request("GET", self._path)
        except ApiError as error:
            if error.status != 404:
                log.info("leader election: reading the lease failed: %s", error)
                return False
            if leading:
                self._observe({}, "", now)  # removed under its leader: lost, not to be created again
                return False
            with self._lock:
                last_seen = self._observed
                expires = self._observed_at + (last_seen.get("leaseDurationSeconds") or 0)
            if last_seen.get("holderIdentity") and expires > now:
                return False
            return bool(self._write("POST", wanted, ""))
        except CONNECTION_ERRORS as error:
            log.info("leader election: reading the lease failed: %s", error)
            return False
        spec = current.get("spec") or {}
        self._observe(spec, (current.get("metadata") or {}).get("resourceVersion", ""), now)
        holder = spec.get("holderIdentity") or ""
        mine = leading and holder == s.identity
        if leading and not mine:
            return False  # taken or released by someone else: lost at once
        if holder and not mine and self._observed_at + (spec.get("leaseDurationSeconds") or 0) > now:
            return False  # held, and renewed within its duration as far as we have seen
        transitions = spec.get("leaseTransitions") or 0
        if mine:
            wanted["acquireTime"] = spec.get("acquireTime") or stamp
            wanted["leaseTransitions"] = transitions
        else:
            wanted["leaseTransitions"] = transitions + 1
        written = self._write("PUT", wanted, self._resource_version)
        if written is None and leading:
            self._observe({}, "", now)  # someone else changed or removed it since the read: lost
        return bool(written)

    def _observe(self, spec: dict, resource_version: str, now: float) -> None:
        with self._lock:
            if spec != self._observed:
                self._observed, self._observed_at = dict(spec), now
            self._resource_version = resource_version

    def _write(self, method: str, spec: dict, resource_version: str) -> bool | None:
        """Create (POST) or replace (PUT) the Lease; on success remember what was written. ``None`` when the
        API refused because the Lease is not as last read (409 Conflict, 404: changed or removed since)."""
        s = self._settings
        metadata = {"name": s.name, "namespace": s.namespace}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}
        path = self._path if method == "PUT" else self._path.rsplit("/", 1)[0]
        try:
            written = self._client.request(method, path, body=body)
        except (ApiError, *CONNECTION_ERRORS) as error:
            log.info("leader election: writing the lease failed: %s", error)
            return None if isinstance(error, ApiError) and error.status in (404, 409) else False
        with self._lock:
            self._observed, self._observed_at = dict(written.get("spec") or spec), self._clock()
            self._resource_version = (written.get("metadata") or {}).get("resourceVersion", "")
        return True

    def _release(self) -> None:
        """client-go's ``release``: no holder, a one-second duration, the transitions kept."""
        stamp = micro_time()
        with self._lock:
            transitions = self._observed.get("leaseTransitions") or 0
            resource_version = self._resource_version
        spec = {"holderIdentity": "", "leaseDurationSeconds": 1, "acquireTime": stamp, "renewTime": stamp,
                "leaseTransitions": transitions}
        if self._write("PUT", spec, resource_version):
            log.warning("leader election: %s released the lease", self._settings.identity)


def _seconds(value: float) -> int:
    return max(1, round(value))
