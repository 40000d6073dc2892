"""The binder: carries out the core's decisions on pods through the API, concurrently.

Binding is the throughput limit of the whole scheduler, so binds run on a pool of worker threads
sharing the client's connection pool; binds waiting for a worker go together, many in one exchange
(see ``BIND_MERGE``). Each bind is retried by the client (5xx, 429, connection errors)
and ends in one ``BindOutcome`` told to the listener: bound (including "already bound to that node"),
gone (the pod was deleted), or failed. The binder keeps the set of pods being bound and drops a second
request for a pod already in flight, so a pod is never bound twice. It also deletes pods the core
preempted, fails pods whose application was rejected, and creates a gang's placeholder pods
(``CreatePlaceholders``, answered with ``PlaceholdersCreated``), one at a time, until the application
stops or says its originating pod is gone (``StopPlaceholders``). A ``BindRequest`` may name the actor its
outcome goes to (``reply_to``, the pod's application actor); else it goes to the listener. ``Drain`` (an ask) waits until every accepted bind has finished; later requests are
answered as failed. ``BinderStatsRequest`` (an ask) answers counts and the time of the last bind.
"""

from __future__ import annotations

import logging
import queue
import threading
import time

import pykka

from actors.base import Actor, Supervisor, message, record, tell_if_alive
from actors.shim.client import BindError, KubeClient
from actors.shim.fence import Fenced
from actors.shim.messages import (
    BinderStatsRequest,
    BindOutcome,
    BindOutcomes,
    BindRequest,
    Binds,
    CreatePlaceholders,
    DeletePod,
    Drain,
    EvictionRefused,
    EvictPod,
    FailPod,
    PlaceholdersCreated,
    StopPlaceholders,
    VolumeBindTimeout,
)
from actors.shim.placeholders import placeholder_pod
from actors.shim.predicates import volume_allows
from actors.shim.ticker import Alarms
from actors.shim.volumes import DEFAULT_BIND_TIMEOUT, bind_claims, unbound_claims

log = logging.getLogger(__name__)


@record
class BinderStats:
    """``last_bound_at``: ``time.monotonic()`` when the latest bind finished (0.0 before any)."""

    bound: int
    failed: int
    in_flight: int
    last_bound_at: float


@message
class _Finished:
    """A worker's doorbell: outcomes wait in the binder's ``_outcomes`` (told once per batch, not per bind)."""


@message
class _PlaceholdersDone:
    app: pykka.ActorRef
    stop: threading.Event


@message
class _ClaimsWait:
    """A bind waits for the provisioner of ``claims``: check them again after a moment (or give up)."""

    request: BindRequest
    claims: tuple[str, ...]
    deadline: float


@message
class _ClaimsDue:
    wait: _ClaimsWait


CLAIM_CHECK_INTERVAL = 0.2
BIND_BATCH = 16  # binds handed to a worker together
# Binds a worker sends together at most when more groups wait behind its own: a backlog (binds paced by
# the rate limit, or a slow API server) goes in a few large exchanges, each one wait for tokens and one
# wake-up of one worker, instead of many small ones that cost as much CPU each.
BIND_MERGE = 64


class Binder(Actor):
    """See the module docstring."""

    kind = "binder"
    use_daemon_thread = False

    def __init__(self, client: KubeClient, listener: pykka.ActorRef, workers: int = 16,
                 supervisor: Supervisor | None = None) -> None:
        super().__init__(supervisor)
        self._client = client
        self._listener = listener
        self._workers = workers
        self._work: queue.SimpleQueue = queue.SimpleQueue()  # (function, message); None stops a worker
        self._threads: list[threading.Thread] = []
        self._in_flight: dict[str, pykka.ActorRef] = {}
        self._draining = False
        self._bound = 0
        self._failed = 0
        self._last_bound_at = 0.0
        self._volume_bind_timeout = DEFAULT_BIND_TIMEOUT
        self._alarms: Alarms | None = None  # claims waiting for their provisioner are checked again
        self._claim_waits: dict[str, _ClaimsWait] = {}  # pod uid -> its wait, between two checks
        self._placeholder_stops: dict[str, threading.Event] = {}  # application actor urn -> set to stop making
        # Outcomes the workers finished, with when, for the actor to take: one doorbell per batch, so a
        # busy binder is told once per batch instead of once per bind.
        self._outcomes: list[tuple[BindOutcome, float]] = []
        self._outcomes_lock = threading.Lock()

    def on_VolumeBindTimeout(self, message: VolumeBindTimeout) -> None:
        self._volume_bind_timeout = message.seconds

    def on_start(self) -> None:
        # Long-lived workers on a SimpleQueue: a Future per bind (ThreadPoolExecutor) cost as much
        # interpreter time as the bind's own request.
        self._threads = [threading.Thread(target=self._serve, name=f"binder-{i}", daemon=True)
                         for i in range(self._workers)]
        for thread in self._threads:
            thread.start()

    def on_stop(self) -> None:
        self._stop_workers()
        if self._alarms is not None:
            self._alarms.stop()

    def on_failure(self, *exc_info) -> None:
        for _ in self._threads:  # the workers end after the work already given (see ``_report``)
            self._work.put(None)
        super().on_failure(*exc_info)

    def on_Binds(self, message: Binds) -> None:
        self._accept_all(message.requests)

    def on_BindRequest(self, message: BindRequest) -> None:
        self._accept_all((message,))

    def on__Finished(self, message: _Finished) -> None:
        with self._outcomes_lock:
            outcomes, self._outcomes = self._outcomes, []
        told: dict[str, tuple[pykka.ActorRef, list[BindOutcome]]] = {}
        for outcome, at in outcomes:
            receiver = self._finished(outcome, at)
            told.setdefault(receiver.actor_urn, (receiver, []))[1].append(outcome)
        for receiver, theirs in told.values():  # one message per receiver: an application binds many pods
            # a stopped application has lost interest in its pods
            tell_if_alive(receiver, theirs[0] if len(theirs) == 1 else BindOutcomes(tuple(theirs)))

    def on_DeletePod(self, message: DeletePod) -> None:
        if not self._draining:
            self._work.put((self._delete, message))

    def on_EvictPod(self, message: EvictPod) -> None:
        if self._draining:
            tell_if_alive(message.reply_to, EvictionRefused(message.uid, "scheduler is shutting down"))
        else:
            self._work.put((self._evict, message))

    def on_FailPod(self, message: FailPod) -> None:
        if not self._draining:
            self._work.put((self._fail, message))

    def on_CreatePlaceholders(self, message: CreatePlaceholders) -> None:
        if self._draining:
            tell_if_alive(message.reply_to, PlaceholdersCreated((), "scheduler is shutting down"))
        else:
            stop = self._placeholder_stops[message.reply_to.actor_urn] = threading.Event()
            self._work.put((self._create_placeholders, (message, stop)))

    def on_StopPlaceholders(self, message: StopPlaceholders) -> None:
        stop = self._placeholder_stops.pop(message.app.actor_urn, None)
        if stop is not None:
            stop.set()

    def on__PlaceholdersDone(self, message: _PlaceholdersDone) -> None:
        if self._placeholder_stops.get(message.app.actor_urn) is message.stop:
            del self._placeholder_stops[message.app.actor_urn]

    def on_Drain(self, message: Drain) -> None:
        self._draining = True
        self._stop_workers()
        for wait in list(self._claim_waits.values()):
            self._give_up(wait, "scheduler is shutting down")

    def on__ClaimsWait(self, wait: _ClaimsWait) -> None:
        if self._draining:
            self._give_up(wait, "scheduler is shutting down")
            return
        if self._alarms is None:
            self._alarms = Alarms("binder-claims")
        self._claim_waits[wait.request.uid] = wait
        self._alarms.after(CLAIM_CHECK_INTERVAL, self.actor_ref, _ClaimsDue(wait))

    def on__ClaimsDue(self, message: _ClaimsDue) -> None:
        wait = message.wait
        if self._claim_waits.pop(wait.request.uid, None) is None:
            return  # given up already
        if self._draining:
            self._give_up(wait, "scheduler is shutting down")
        else:
            self._work.put((self._check_claims, wait))

    def _give_up(self, wait: _ClaimsWait, reason: str) -> None:
        self._claim_waits.pop(wait.request.uid, None)
        request = wait.request
        outcome = BindOutcome(request.uid, request.node, False, reason=reason, volumes=True)
        tell_if_alive(self._finished(outcome, time.monotonic()), outcome)

    def on_BinderStatsRequest(self, message: BinderStatsRequest) -> BinderStats:
        return BinderStats(self._bound, self._failed, len(self._in_flight), self._last_bound_at)

    def _finished(self, outcome: BindOutcome, at: float) -> pykka.ActorRef:
        """Count ``outcome``; the actor it is for."""
        reply_to = self._in_flight.pop(outcome.uid, None) or self._listener
        if outcome.bound:
            self._bound += 1
            self._last_bound_at = at
        else:
            self._failed += 1
        return reply_to

    def _accept_all(self, requests: tuple[BindRequest, ...]) -> None:
        """Hand the binds to the workers: one with claims alone, the others in groups of ``BIND_BATCH``
        that a worker sends together (one group wakes one worker, where one bind each woke many)."""
        group: list[BindRequest] = []
        for request in requests:
            if not self._accept(request):
                continue
            if request.claims:
                self._work.put((self._bind, request))
                continue
            group.append(request)
            if len(group) == BIND_BATCH:
                self._work.put((self._bind_all, group))
                group = []
        if group:
            self._work.put((self._bind_all, group))

    def _accept(self, request: BindRequest) -> bool:
        """Whether the bind is to be made: not while draining (it fails at once), nor a second time."""
        if self._draining:
            tell_if_alive(request.reply_to or self._listener,
                          BindOutcome(request.uid, request.node, False, reason="scheduler is shutting down"))
            return False
        if request.uid in self._in_flight:
            log.warning("pod %s/%s is already being bound; duplicate request dropped", request.namespace,
                        request.name)
            return False
        self._in_flight[request.uid] = request.reply_to or self._listener
        return True

    def _bind(self, request: BindRequest) -> None:
        if request.claims:
            try:
                waiting = bind_claims(self._client, request.namespace, request.claims, request.node, volume_allows)
            except Exception as error:  # API errors too: the pod goes back to the core either way
                self._volumes_failed(request, f"binding volumes: {error}")
                return
            if waiting:
                tell_if_alive(self.actor_ref, _ClaimsWait(request, waiting,
                                                          time.monotonic() + self._volume_bind_timeout))
                return
        self._bind_pod(request)

    def _check_claims(self, wait: _ClaimsWait) -> None:
        request = wait.request
        try:
            waiting = unbound_claims(self._client, request.namespace, wait.claims)
        except Exception as error:
            self._volumes_failed(request, f"binding volumes: {error}")
            return
        if not waiting:
            self._bind_pod(request)
        elif time.monotonic() >= wait.deadline:
            self._volumes_failed(request, f'binding volumes: timed out waiting for claim "{waiting[0]}" to be '
                                          f"provisioned on node {request.node}")
        else:
            tell_if_alive(self.actor_ref, _ClaimsWait(request, waiting, wait.deadline))

    def _volumes_failed(self, request: BindRequest, reason: str) -> None:
        log.warning("pod %s/%s not bound to %s: %s", request.namespace, request.name, request.node, reason)
        self._report(BindOutcome(request.uid, request.node, False, reason=reason, volumes=True))

    def _bind_pod(self, request: BindRequest) -> None:
        try:
            self._client.bind(request.namespace, request.name, request.node, request.uid)
            outcome = BindOutcome(request.uid, request.node, True)
        except BindError as error:
            outcome = BindOutcome(request.uid, request.node, False, gone=error.gone, reason=str(error))
        except Exception as error:  # the outcome must reach the listener whatever went wrong
            log.exception("binding %s/%s failed unexpectedly", request.namespace, request.name)
            outcome = BindOutcome(request.uid, request.node, False, reason=f"unexpected error: {error}")
        self._report(outcome)

    def _report(self, *outcomes: BindOutcome) -> None:
        at = time.monotonic()
        with self._outcomes_lock:
            first = not self._outcomes
            self._outcomes.extend((outcome, at) for outcome in outcomes)
        if not first:
            return  # the doorbell for the batch is already on its way
        try:
            self.actor_ref.tell(_Finished())
        except pykka.ActorDeadError:  # draining: the binder thread is gone, report directly
            with self._outcomes_lock:
                outcomes, self._outcomes = self._outcomes, []
            for finished, _ in outcomes:
                self._listener.tell(finished)

    def _delete(self, request: DeletePod) -> None:
        try:
            if self._client.delete_pod(request.namespace, request.name, request.uid):
                log.info("deleted pod %s/%s: %s", request.namespace, request.name, request.reason)
        except Exception:  # logged; the next informer event shows whether the pod is still there
            log.exception("deleting pod %s/%s failed", request.namespace, request.name)

    def _evict(self, request: EvictPod) -> None:
        try:
            refused = self._client.evict_pod(request.namespace, request.name, request.uid)
        except Exception as error:  # the victim stays: the core looks for room elsewhere
            log.warning("evicting pod %s/%s failed: %s", request.namespace, request.name, error)
            refused = str(error) or type(error).__name__
        if refused is None:
            log.info("evicted pod %s/%s: %s", request.namespace, request.name, request.reason)
        else:
            tell_if_alive(request.reply_to, EvictionRefused(request.uid, refused))

    def _fail(self, request: FailPod) -> None:
        try:
            if self._client.fail_pod(request.namespace, request.name, request.reason, request.message):
                log.info("pod %s/%s failed: %s", request.namespace, request.name, request.message)
        except Exception:  # logged; the pod stays pending with its event
            log.exception("failing pod %s/%s failed", request.namespace, request.name)

    def _create_placeholders(self, work: tuple[CreatePlaceholders, threading.Event]) -> None:
        request, stop = work
        created, error = [], ""
        namespace = request.originator.namespace
        try:
            for group, count in request.groups:
                for _ in range(count):
                    if stop.is_set() or not request.reply_to.is_alive():
                        log.info("placeholders of %s: %d made, the rest not: the application is gone",
                                 request.originator.app_id, len(created))
                        return
                    manifest = placeholder_pod(request.originator, request.queue, group, request.settings)
                    metadata = self._client.create_pod(namespace, manifest).get("metadata") or {}
                    created.append((metadata.get("uid", ""), namespace, metadata.get("name", "")))
        except Fenced as refused:
            tell_if_alive(request.reply_to, PlaceholdersCreated(tuple(created), str(refused), fenced=True))
            return
        except Exception as failure:  # the application hears of it whatever went wrong
            error = str(failure) or type(failure).__name__
            log.warning("creating placeholders for %s failed: %s", request.originator.app_id, error)
        finally:
            tell_if_alive(self.actor_ref, _PlaceholdersDone(request.reply_to, stop))
        tell_if_alive(request.reply_to, PlaceholdersCreated(tuple(created), error))

    def _serve(self) -> None:
        stopping = False
        while not stopping and (item := self._work.get()) is not None:
            work, stopping = self._with_waiting_binds(item)
            for function, argument in work:
                function(argument)

    def _with_waiting_binds(self, item: tuple) -> tuple[list[tuple], bool]:
        """The work to do for ``item``: a group of binds takes the groups of binds waiting behind it (up
        to ``BIND_MERGE`` binds), until other work comes out of the queue: that follows the binds (the
        other workers go on with the rest, so deletions and evictions still run side by side); a stop
        (``None``) ends the worker after the binds. Whether the worker is to stop."""
        function, message = item
        if function != self._bind_all:
            return [item], False
        binds: list[BindRequest] = list(message)
        while len(binds) < BIND_MERGE:
            try:
                waiting = self._work.get_nowait()
            except queue.Empty:
                break
            if waiting is None:
                return [(function, binds)], True
            if waiting[0] != self._bind_all:
                return [(function, binds), waiting], False
            binds.extend(waiting[1])
        return [(function, binds)], False

    def _bind_all(self, requests: list[BindRequest]) -> None:
        """Bind pods without claims together (see ``KubeClient.bind_all``); each outcome as ``_bind_pod``'s."""
        try:
            errors = self._client.bind_all([(r.namespace, r.name, r.node, r.uid) for r in requests])
        except Exception:  # whatever went wrong, each pod gets its own outcome
            log.exception("binding %d pods together failed unexpectedly; binding them one by one", len(requests))
            for request in requests:
                self._bind_pod(request)
            return
        self._report(*(BindOutcome(request.uid, request.node, True) if error is None else
                       BindOutcome(request.uid, request.node, False, gone=error.gone, reason=str(error))
                       for request, error in zip(requests, errors, strict=True)))

    def _stop_workers(self) -> None:
        """Let the workers finish what was accepted, then end them."""
        for _ in self._threads:
            self._work.put(None)
        for thread in self._threads:
            thread.join()
        self._threads = []
