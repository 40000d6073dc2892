"""The Falcon application: routes of YuniKorn's ``/ws/v1`` API over core snapshots.

Every read comes from a snapshot the core builds between scheduling batches, so REST load never
stalls a scheduling decision; readers share one until the core changes, and a read that follows a
change sees it. Each route names the optional parts of the snapshot it reads (nodes, applications,
health), and only those are taken.
"""

from __future__ import annotations

import json
import logging
import pathlib
import queue as queue_module
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from itertools import chain

import falcon
import orjson
import pykka
import yaml

from actors.core import yamlsafe
from actors.core.scheduler import Scheduler
from actors.core.snapshot import ALL_AREAS, APPLICATIONS, HEALTH, METRICS, NODES, NODES_JSON, SUMMARY
from rest import actor_metrics, configdao, cors, daos, leadership, liveness, metrics
from rest import history as history_rest
from rest.fragments import Fragments, Pieces, array, array_pieces

log = logging.getLogger(__name__)
OPENAPI = pathlib.Path(__file__).with_name("openapi.json")
APP_STATES = ("new", "accepted", "starting", "running", "completing", "failing", "resuming")
MAX_BODY = 4 * 2**20


@dataclass
class SchedulerView:
    """What the REST API reads: the core (its snapshots, shared while it does not change), and
    optionally the shim's state."""

    scheduler: Scheduler
    shim_state: Callable[[], object | None] | None = None
    actor_failures: liveness.ActorFailures | None = None  # the stopped actors: health and both probes fail
    extender: object | None = None  # plugin mode: serves kube-scheduler's extender calls (rest.extender)
    extender_on_rest_port: bool = True  # False: the extender has an HTTPS port of its own (rest.extender_server)
    leadership: leadership.LeadershipSource | None = None  # leader election: who leads (a standby is not ready)
    unenforced: actor_metrics.Unenforced | None = None  # the shim's counts of constraints it does not enforce
    allowed_origins: tuple[str, ...] = (cors.ANY,)  # who may read cross-origin (rest.cors), upstream's default
    history: history_rest.History | None = None  # the history store: finished applications and samples
    started: int = field(default_factory=time.time_ns)
    fragments: Fragments = field(default_factory=Fragments, init=False, repr=False)

    def snapshot(self, areas: frozenset[str] = ALL_AREAS):
        return self.scheduler.snapshot(areas)

    def dump_inputs(self) -> tuple:
        """What the full state dump shows besides its snapshot, each as the object last published."""
        history = self.scheduler.history.records()
        return (self.shim_state() if self.shim_state else None, history[-1] if history else None,
                self.scheduler.last_health, *liveness.failures(self.actor_failures))


def _json(resp: falcon.Response, body: bytes) -> None:
    """An answer serialized already (rest.fragments)."""
    resp.content_type = falcon.MEDIA_JSON
    resp.data = body


def _pieces(resp: falcon.Response, body: Pieces) -> None:
    """An answer serialized already, in pieces the server sends without joining them."""
    resp.content_type = falcon.MEDIA_JSON
    resp.stream, resp.content_length = body, body.length


def _fail(status, message: str, description: str = ""):
    raise falcon.HTTPError(status, title=message, description=description or message)


def _snapshot(req: falcon.Request):
    """The snapshot the middleware took for this request's route."""
    return req.context.snapshot


def _partition(req: falcon.Request, name: str):
    partition = _snapshot(req).partition(name)
    if partition is None:
        _fail(falcon.HTTP_404, "Partition not found", f"partition {name} not found")
    return partition


def _queue(partition, path: str):
    found = partition.root_queue.find(path)
    if found is None:
        _fail(falcon.HTTP_404, "Queue not found", f"queue {path} not found in partition {partition.name}")
    return found


def _application(partition, app_id: str, queue_path: str | None = None, history=None):
    for app in partition.applications + partition.terminated_applications:
        if app.application_id == app_id and (queue_path is None or app.queue_name == queue_path):
            return app
    found = history_rest.stored_one(history, partition.name, app_id) if history is not None else None
    if found is not None and (queue_path is None or found.queue_name == queue_path):
        return found
    _fail(falcon.HTTP_404, "Application not found", f"application {app_id} not found")


def _status_filter(req: falcon.Request):
    status = req.get_param("status")
    if status is None:
        return None
    if status.lower() not in APP_STATES:
        _fail(falcon.HTTP_400, "Invalid status", f"status {status!r} is not one of {', '.join(APP_STATES)}")
    return status.lower()


def _int_param(req: falcon.Request, name: str, default: int, low: int, high: int) -> int:
    raw = req.get_param(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        _fail(falcon.HTTP_400, "Invalid parameter", f"{name} must be a whole number, got {raw!r}")
    if not low <= value <= high:
        _fail(falcon.HTTP_400, "Invalid parameter", f"{name} must be between {low} and {high}, got {value}")
    return value


class Cluster:
    def __init__(self, view: SchedulerView) -> None:
        self.view = view

    def on_get_clusters(self, req, resp):
        snapshot = _snapshot(req)
        build = {**snapshot.build_info, "isPluginVersion": str(self.view.extender is not None).lower(),
                 "rmId": snapshot.rm_id}
        resp.media = [{"startTime": self.view.started, "rmBuildInformation": [build],
                       "partition": p.name, "clusterName": "kubernetes"} for p in snapshot.partitions]

    def on_get_partitions(self, req, resp):
        resp.media = [daos.partition(p) for p in _snapshot(req).partitions]

    def on_get_health(self, req, resp):
        resp.media = self._health()

    def _health(self) -> dict:
        """The latest periodic report; with periodic checks off (or before the first), one taken now
        through a snapshot, shared with other readers like every snapshot. A dead actor fails it."""
        scheduler = self.view.scheduler
        report = scheduler.last_health if scheduler.health_interval > 0 else None
        report = report or self.view.snapshot(frozenset({HEALTH})).health
        report = history_rest.with_store(liveness.with_actors(report, self.view.actor_failures), self.view.history)
        return daos.health(report)

    def _samples(self):
        """The front page's samples: the store's (they survive a restart), else the core's ring."""
        if self.view.history is not None:
            return history_rest.cluster_samples(self.view.history)
        return self.view.scheduler.history.records()

    def on_get_app_history(self, req, resp):
        resp.media = [daos.app_history(s) for s in self._samples()]

    def on_get_container_history(self, req, resp):
        resp.media = [daos.container_history(s) for s in self._samples()]

    def on_get_utilizations(self, req, resp):
        resp.media = [daos.utilizations(p) for p in _snapshot(req).partitions]

    def on_get_config(self, req, resp):
        """upstream's ConfigDAOInfo (rest.configdao): JSON with ``Accept: application/json``, else YAML; plus
        the keys of the extra configuration the scheduler does not support (``Unsupported``)."""
        snapshot = _snapshot(req)
        document = yamlsafe.load(snapshot.config_yaml) if snapshot.config_yaml.strip() else {}
        as_json = req.get_header("Accept") == "application/json"
        dao = configdao.config_dao(document, snapshot.checksum, dict(snapshot.extra_config), yaml=not as_json)
        unsupported = list(snapshot.unsupported)
        if as_json:
            resp.media = {**dao, "Unsupported": unsupported}
        else:
            resp.content_type = "application/x-yaml"
            resp.text = yaml.safe_dump({**dao, "unsupported": unsupported}, sort_keys=False)

    def on_post_validate(self, req, resp):
        if (req.content_length or 0) > MAX_BODY:
            _fail(falcon.HTTP_413, "Request body too large", f"at most {MAX_BODY} bytes")
        text = req.bounded_stream.read().decode("utf-8", errors="replace")
        reason = self.view.scheduler.validate(text) if text.strip() else "empty configuration"
        resp.media = {"allowed": reason is None, "reason": reason or ""}

    def on_get_live(self, req, resp):
        failed = liveness.failed_actors(self.view.actor_failures)
        resp.status = falcon.HTTP_503 if failed else falcon.HTTP_200
        resp.media = {"alive": not failed, **failed}

    def on_get_ready(self, req, resp):
        state = _shim_state_name(self.view)
        failed = liveness.failed_actors(self.view.actor_failures)
        election = leadership.readiness(self.view.leadership)
        if election.get("standby"):
            # a standby serves no scheduling, but is ready to take over: asked by the kubelet's probe
            ready = req.get_param("standby") == "ready" and election["warm"] and not failed
        else:
            ready = state in (None, "Running") and not failed
        resp.status = falcon.HTTP_200 if ready else falcon.HTTP_503
        resp.media = {"ready": ready, "shimState": state, **election, **failed}

    def on_get_metrics(self, req, resp):
        ring = self.view.scheduler.events
        resp.content_type = "text/plain; version=0.0.4; charset=utf-8"
        providers = [*metrics.PROVIDERS, actor_metrics.families(self.view.unenforced)]
        if self.view.leadership is not None:
            providers.append(leadership.families(self.view.leadership))
        if self.view.history is not None:
            providers.append(history_rest.families(self.view.history))
        resp.data = metrics.render(metrics.MetricsInput(_snapshot(req), metrics.EventCounts(
            ring.created, ring.dropped, ring.not_channeled, ring.stored, ring.not_stored)),
                                   providers)

    def on_get_openapi(self, req, resp):
        resp.content_type = falcon.MEDIA_JSON
        resp.data = OPENAPI.read_bytes()

    def on_get_dump(self, req, resp):
        snapshot = _snapshot(req)
        shim = self.view.shim_state() if self.view.shim_state else None
        fragments = self.view.fragments
        # Allocations serialized under their nodes, by identity, spliced under their applications: the
        # snapshot keeps them alive while this dict lives.
        cut: dict[int, bytes] = {}
        nodes = [fragments.parts(("nodes", p.name), p.nodes, partial(fragments.nodes, cut=cut))
                 for p in snapshot.partitions]
        apps = [fragments.parts(("dump applications", p.name), p.applications + p.terminated_applications,
                                partial(fragments.applications, cut=cut)) for p in snapshot.partitions]
        resp.media = {
            "timestamp": snapshot.taken_at,
            "partitions": [daos.partition(p) for p in snapshot.partitions],
            "applications": list(map(orjson.Fragment, chain.from_iterable(apps))),
            "nodes": list(map(orjson.Fragment, chain.from_iterable(nodes))),
            "queues": [daos.queue(p.root_queue) for p in snapshot.partitions],
            "placementRules": [{"partition": p.name, "rules": list(p.placement_rules)} for p in snapshot.partitions],
            "clusterInfo": {"rmId": snapshot.rm_id},
            "appHistory": [daos.app_history(s) for s in self.view.scheduler.history.records()],
            "containerHistory": [daos.container_history(s) for s in self.view.scheduler.history.records()],
            "config": snapshot.config_yaml,
            "health": self._health(),
            "rmDiagnostics": _jsonable(shim),
        }


def _shim_state_name(view: SchedulerView) -> str | None:
    if view.shim_state is None:
        return None
    state = view.shim_state()
    return getattr(state, "state", None) if state is not None else "New"


def _jsonable(value):
    """A dataclass tree (the shim's state) as JSON-ready data."""
    import dataclasses
    import enum

    if dataclasses.is_dataclass(value):
        return {f.name: _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "as_dict"):
        return value.as_dict()
    return str(value)


class Partitions:
    def __init__(self, view: SchedulerView) -> None:
        self.view = view

    def on_get_queues(self, req, resp, partition):
        resp.media = daos.queue(_partition(req, partition).root_queue)

    def on_get_queue(self, req, resp, partition, queue):
        resp.media = daos.queue(_queue(_partition(req, partition), queue), subtree=req.has_param("subtree"))

    def on_get_apps(self, req, resp, partition, state):
        snapshot = _partition(req, partition)
        status = _status_filter(req)
        if state == "active":
            apps = [a for a in snapshot.applications if status is None or a.state.lower() == status]
        elif state in ("rejected", "completed"):
            states = history_rest.REJECTED_STATES if state == "rejected" else history_rest.COMPLETED_STATES
            query = history_rest.application_query(req, partition, states)
            if self.view.history is not None:
                resp.media = [daos.application(a) for a in history_rest.stored(self.view.history, query)]
                return
            apps = history_rest.select_snapshots(snapshot.terminated_applications, query)
        else:
            _fail(falcon.HTTP_400, "Invalid application state",
                  f"state {state!r} is not one of active, rejected, completed")
        _json(resp, array(self.view.fragments.applications(apps)))

    def on_get_queue_apps(self, req, resp, partition, queue, state=None):
        snapshot = _partition(req, partition)
        _queue(snapshot, queue)
        if state not in (None, "active"):
            _fail(falcon.HTTP_400, "Invalid application state", f"only active is allowed here, got {state!r}")
        status = _status_filter(req)
        _json(resp, array(self.view.fragments.applications(
            [a for a in snapshot.applications if a.queue_name == queue and (status is None or a.state.lower() == status)])))

    def on_get_app(self, req, resp, partition, app):
        _json(resp, self.view.fragments.application(_application(_partition(req, partition), app,
                                                                 history=self.view.history)))

    def on_get_queue_app(self, req, resp, partition, queue, app):
        snapshot = _partition(req, partition)
        _queue(snapshot, queue)
        _json(resp, self.view.fragments.application(_application(snapshot, app, queue, self.view.history)))

    def on_get_nodes(self, req, resp, partition):
        _pieces(resp, array_pieces(_partition(req, partition).nodes_json))

    def on_get_node(self, req, resp, partition, node):
        for candidate in _partition(req, partition).nodes:
            if candidate.node_id == node:
                _json(resp, self.view.fragments.node(candidate))
                return
        _fail(falcon.HTTP_404, "Node not found", f"node {node} not found")

    def on_get_rules(self, req, resp, partition):
        resp.media = list(_partition(req, partition).placement_rules)

    def on_get_users(self, req, resp, partition):
        resp.media = list(_partition(req, partition).user_usage)

    def on_get_user(self, req, resp, partition, user):
        found = [u for u in _partition(req, partition).user_usage if u["userName"] == user]
        if not found:
            _fail(falcon.HTTP_404, "User not found", f"user {user} not found")
        resp.media = found[0]

    def on_get_groups(self, req, resp, partition):
        resp.media = list(_partition(req, partition).group_usage)

    def on_get_group(self, req, resp, partition, group):
        found = [g for g in _partition(req, partition).group_usage if g["groupName"] == group]
        if not found:
            _fail(falcon.HTTP_404, "Group not found", f"group {group} not found")
        resp.media = found[0]


class Events:
    def __init__(self, view: SchedulerView, max_streams: int) -> None:
        self.view = view
        self.ring = view.scheduler.events
        self.max_streams = max_streams  # what the server has threads for, whatever event.maxStreams says

    def _tracking(self) -> None:
        if not self.ring.tracking:
            _fail(falcon.HTTP_500, "Event tracking is disabled", "event.trackingEnabled is false")

    def on_get_batch(self, req, resp):
        self._tracking()
        size = self.ring.rest_response_size
        count = _int_param(req, "count", size, 1, size)
        start = _int_param(req, "start", 0, 0, 2**62)
        lowest, highest, events = self.ring.batch(start, count)
        resp.media = {"InstanceUUID": self.ring.instance_uuid, "LowestID": lowest, "HighestID": highest,
                      "EventRecords": [daos.event(i, e) for i, e in events]}

    def on_get_stream(self, req, resp):
        self._tracking()
        limit = _int_param(req, "count", 0, 0, 10**9)
        stream = self.ring.subscribe(req.remote_addr or "", self.max_streams)
        if stream is None:
            _fail(falcon.HTTP_503, "Too many streaming connections", "the event stream limit is reached")
        resp.content_type = "application/x-ndjson"
        resp.stream = self._lines(stream, limit)

    def _lines(self, stream, limit: int):
        try:
            yield json.dumps({"InstanceUUID": self.ring.instance_uuid}).encode() + b"\n"
            sent = 0
            while not limit or sent < limit:
                try:
                    event_id, event = stream.get(timeout=5)
                except queue_module.Empty:
                    yield b"\n"  # a keep-alive line lets a dead reader be noticed
                    continue
                yield json.dumps(daos.event(event_id, event)).encode() + b"\n"
                sent += 1
        finally:
            self.ring.unsubscribe(stream)


def _serialize_error(req, resp, error: falcon.HTTPError) -> None:
    resp.content_type = falcon.MEDIA_JSON
    resp.data = json.dumps({"status_code": int(error.status_code), "message": error.title or "",
                            "description": error.description or error.title or ""}).encode()


def _unexpected(req, resp, error, params) -> None:
    if isinstance(error, falcon.HTTPError):
        raise error
    if isinstance(error, pykka.ActorDeadError):
        raise falcon.HTTPError(falcon.HTTP_503, title="Scheduler not running",
                               description="the scheduler core has stopped")
    log.exception("REST handler failed on %s %s", req.method, req.path)
    raise falcon.HTTPError(falcon.HTTP_500, title="Internal error", description=type(error).__name__)


class _Flights:
    """One lock per key while anyone holds or waits for it: concurrent builds of one answer become one."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[tuple, tuple[threading.Lock, int]] = {}

    def enter(self, key: tuple) -> None:
        with self._guard:
            lock, users = self._locks.get(key, (None, 0))
            lock = lock or threading.Lock()
            self._locks[key] = (lock, users + 1)
        lock.acquire()

    def leave(self, key: tuple) -> None:
        with self._guard:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)
        lock.release()


class _Same:
    """A cache key's part that equals another holding the very same objects (it keeps them alive, so
    their identities cannot be reused while the entry lives)."""

    __slots__ = ("objects",)

    def __init__(self, objects: tuple) -> None:
        self.objects = objects

    def __eq__(self, other) -> bool:
        return (isinstance(other, _Same) and len(self.objects) == len(other.objects)
                and all(a is b for a, b in zip(self.objects, other.objects, strict=True)))

    def __hash__(self) -> int:
        return hash(tuple(map(id, self.objects)))


class EscapedNames:
    """Queue, user and group names in the path as upstream's router and handlers read them.

    A queue, user or group name may hold a '/', sent escaped (``%2F``). The WSGI server decodes the
    path before routing, which would split that name; the request URI as sent (waitress:
    ``REQUEST_URI``, others ``RAW_URI``) keeps the escape, and is routed instead, its parameters decoded
    after. Upstream's handlers then query-unescape those names once more (its own test client sends
    them escaped twice), and so does this.
    """

    UNESCAPED = ("queue", "user", "group")

    def process_request(self, req, resp) -> None:
        raw = req.env.get("REQUEST_URI") or req.env.get("RAW_URI") or ""
        path = raw.partition("?")[0] if raw.startswith("/") else urllib.parse.urlsplit(raw).path
        if "%2f" not in path.lower():
            return
        req.path = path.rstrip("/") or "/"
        req.context.escaped_path = True

    def process_resource(self, req, resp, resource, params) -> None:
        if "escaped_path" in req.context:
            for name, value in params.items():
                params[name] = urllib.parse.unquote(value)
        for name in self.UNESCAPED:
            if name in params:
                params[name] = urllib.parse.unquote_plus(params[name])


class SnapshotCache:
    """Takes the snapshot a route reads, and serves a GET again from the bytes it produced for the
    same snapshot.

    Serializing thousands of nodes takes the interpreter's lock away from the scheduler; with this,
    each snapshot is serialized at most once per path, however many clients poll it. Requests that
    arrive while the answer is being built wait for it rather than build it again, so a thousand
    clients asking for the full state dump at once hold one copy of it, not a thousand.
    """

    UNCACHED = ("/ws/v1/events/", "/ws/v1/health/", "/ws/v1/openapi.json", "/ws/v1/metrics")
    # The dumps also show what no snapshot holds (the shim's state, the history, the actors' failures):
    # their key holds those too, so a dump is served again only while all it shows is current.
    DUMPS = ("/ws/v1/fullstatedump", "/debug/fullstatedump")

    def __init__(self, view: SchedulerView, areas: dict[str, frozenset[str]], size: int = 64) -> None:
        self.view = view
        self.areas = areas  # route template -> the optional areas it reads; absent: reads no snapshot
        self.size = size
        self.entries: dict[tuple, tuple[object, bytes | Pieces, str]] = {}  # key -> (the snapshot it shows, ...)
        self._flights = _Flights()

    def _key(self, req: falcon.Request) -> tuple | None:
        if req.method != "GET" or req.path.startswith(self.UNCACHED) or "snapshot" not in req.context:
            return None
        key = (req.path, req.query_string, req.get_header("Accept") or "")
        return key + (_Same(self.view.dump_inputs()),) if req.path in self.DUMPS else key

    def process_resource(self, req, resp, resource, params) -> None:
        areas = self.areas.get(req.uri_template)
        if areas is None:
            return
        req.context.snapshot = self.view.snapshot(areas)
        key = req.context.cache_key = self._key(req)  # taken once: what the answer is built from
        if key is None:
            return
        if self._serve_cached(key, req, resp):
            return
        self._flights.enter(key)
        req.context.building = key
        self._serve_cached(key, req, resp)  # unless built while this request waited

    def _serve_cached(self, key: tuple, req, resp) -> bool:
        entry = self.entries.get(key)
        # The same snapshot object, not the same time: snapshots on a virtual clock share their time.
        if entry is None or entry[0] is not _snapshot(req):
            return False
        resp.content_type = entry[2]
        if type(entry[1]) is Pieces:
            resp.stream, resp.content_length = entry[1], entry[1].length
        else:
            resp.data = entry[1]
        resp.complete = True
        return True

    def process_response(self, req, resp, resource, succeeded) -> None:
        building = req.context.get("building")
        try:
            self._keep(req, resp, succeeded)
        finally:
            if building is not None:
                self._flights.leave(building)

    def _keep(self, req, resp, succeeded) -> None:
        key = req.context.get("cache_key")
        if key is None or not succeeded or resp.status_code != 200:
            return
        if key in self.entries and self.entries[key][0] is _snapshot(req):
            return
        body = resp.render_body() if type(resp.stream) is not Pieces else resp.stream
        if body is None:
            return
        if len(self.entries) >= self.size:
            self.entries.pop(next(iter(self.entries)))
        self.entries[key] = (_snapshot(req), body, resp.content_type)


def create_app(view: SchedulerView, max_streams: int = 100) -> falcon.App:
    cluster, partitions, events = Cluster(view), Partitions(view), Events(view, max_streams)
    none, nodes, apps, summary = frozenset(), frozenset({NODES}), frozenset({APPLICATIONS}), frozenset({SUMMARY})
    dump = summary | nodes | apps  # its health is the health check's: the latest periodic report
    # (path, resource, responder suffix, the optional snapshot areas it reads or None for no snapshot)
    routes = [
        ("/ws/v1/clusters", cluster, "clusters", none), ("/ws/v1/partitions", cluster, "partitions", summary),
        ("/ws/v1/scheduler/healthcheck", cluster, "health", None),
        ("/ws/v1/scheduler/node-utilizations", cluster, "utilizations", nodes),
        ("/ws/v1/config", cluster, "config", none), ("/ws/v1/validate-conf", cluster, "validate", None),
        ("/ws/v1/metrics", cluster, "metrics", summary | {METRICS}),
        ("/ws/v1/openapi.json", cluster, "openapi", None),
        ("/ws/v1/history/apps", cluster, "app_history", None),
        ("/ws/v1/history/containers", cluster, "container_history", None),
        ("/ws/v1/history/usage", history_rest.Usage(view.history), "usage", None),
        ("/ws/v1/health/live", cluster, "live", None), ("/ws/v1/health/ready", cluster, "ready", None),
        ("/ws/v1/fullstatedump", cluster, "dump", dump), ("/debug/fullstatedump", cluster, "dump", dump),
        ("/ws/v1/partition/{partition}/queues", partitions, "queues", none),
        ("/ws/v1/partition/{partition}/queue/{queue}", partitions, "queue", none),
        ("/ws/v1/partition/{partition}/applications/{state}", partitions, "apps", apps),
        ("/ws/v1/partition/{partition}/queue/{queue}/applications", partitions, "queue_apps", apps),
        ("/ws/v1/partition/{partition}/queue/{queue}/applications/{state}", partitions, "queue_apps", apps),
        ("/ws/v1/partition/{partition}/application/{app}", partitions, "app", apps),
        ("/ws/v1/partition/{partition}/queue/{queue}/application/{app}", partitions, "queue_app", apps),
        ("/ws/v1/partition/{partition}/nodes", partitions, "nodes", frozenset({NODES_JSON})),
        ("/ws/v1/partition/{partition}/node/{node}", partitions, "node", nodes),
        ("/ws/v1/partition/{partition}/placementrules", partitions, "rules", none),
        ("/ws/v1/partition/{partition}/usage/users", partitions, "users", none),
        ("/ws/v1/partition/{partition}/usage/user/{user}", partitions, "user", none),
        ("/ws/v1/partition/{partition}/usage/groups", partitions, "groups", none),
        ("/ws/v1/partition/{partition}/usage/group/{group}", partitions, "group", none),
        ("/ws/v1/events/batch", events, "batch", None), ("/ws/v1/events/stream", events, "stream", None),
    ]
    snapshots = SnapshotCache(view, {path: areas for path, *_, areas in routes if areas is not None})
    app = falcon.App(middleware=[EscapedNames(), cors.CrossOrigin(view.allowed_origins), snapshots])
    json_handler = falcon.media.JSONHandler(dumps=orjson.dumps, loads=orjson.loads)
    app.req_options.media_handlers[falcon.MEDIA_JSON] = json_handler
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = json_handler
    app.req_options.strip_url_path_trailing_slash = True
    app.set_error_serializer(_serialize_error)
    app.add_error_handler(Exception, _unexpected)
    for path, resource, suffix, _ in routes:
        app.add_route(path, resource, suffix=suffix)
    if view.extender is not None and view.extender_on_rest_port:
        from rest import extender

        extender.add_routes(app, view.extender)
    return app


def routes(app: falcon.App) -> list[tuple[str, str]]:
    """(method, path template) of every route: the OpenAPI test holds the document to this list."""
    from falcon import inspect

    found = []
    for route in inspect.inspect_routes(app):
        for method in route.methods:
            if method.method in ("GET", "POST") and "on_options" not in method.function_name:
                if method.function_name.startswith(f"on_{method.method.lower()}"):
                    found.append((method.method, route.path))
    return sorted(set(found))

