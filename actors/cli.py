"""``yunikorn-scheduler``: the scheduler process (core + Kubernetes shim + REST).

Connects with ``--kubeconfig PATH``, else the in-cluster service account, else stops with a hint.
``--embedded`` starts an in-process kubesim with ``--nodes`` nodes and a sample multi-queue workload of
``--pods`` pods, shows a progress bar while they are scheduled and a summary table once they are all
bound (then exits with ``--exit-when-done``), then the pods finishing and their applications completing,
and keeps serving until Ctrl-C. SIGTERM and SIGINT shut
down gracefully (informers stopped, binds drained, actors stopped) and exit 0.

``--leader-elect`` runs this process as one candidate of an active/standby pair (kube-scheduler's flags
and Lease, see ``actors.shim.election``): a standby lists and watches but neither registers with the core
nor writes to the cluster; the leader schedules. A leader that loses its Lease exits at once with
status 3 (its write fence is already closed; Kubernetes restarts it as a standby). SIGTERM releases the
Lease once the leader's last write has been answered, so the standby takes over without waiting for
the Lease to expire.

``--history-dsn`` names the history store, where finished applications, the history samples and the
event stream go (``sqlite:///path/file.db`` or ``postgresql://...``); by default a SQLite file in the
working directory; ``none`` keeps finished applications in memory for the retention, as upstream does.
With leader election only the leader writes it; the standby reads the same store.

``yunikorn-scheduler simulate ...`` replays a workload trace against a queue configuration on a virtual
clock instead (see ``simulate.cli``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import logging
import os
import signal
import socket
import ssl
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from actors.cpu import CHOICES, pin_to_current_cpu
from actors.heap import CollectorPause, tune_collector

# Importing makes some 55,000 objects the collector tracks, nearly all living as long as the process:
# collections while it does free next to nothing, and afterwards none need scan them (the pause ends frozen).
with CollectorPause():
    from actors.base import Supervision
    from actors.core.readbudget import DEFAULT_SHARE, ReadBudget, share_argument
    from actors.core.scheduler import Scheduler
    from actors.history.store import HistoryStore, Retention, describe
    from actors.history.writer import HistoryWriter
    from actors.shim.client import KubeClient
    from actors.shim.election import ElectionSettings, LeaderElector, Leadership
    from actors.shim.fence import OPEN, LeaderFence
    from actors.shim.informer import WatchSettings
    from actors.shim.lifecycle import SchedulerState, TaskState
    from actors.shim.predicates import KubernetesPredicates
    from actors.shim.service import SchedulerService, ServiceSettings
    from actors.shim.state import ShimStateSnapshot
    from si.goduration import parse_duration

log = logging.getLogger("yunikorn.scheduler")
LOST_LEASE_EXIT = 3
HISTORY_FILE = "yunikorn-history.db"


def duration(text: str) -> float:
    """Seconds from a Go duration (``15s``, ``1m30s``, ``500ms``) or a plain number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_duration(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 15s, 500ms, 1m30s)") from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"a duration must be positive: {text!r}")
    return seconds


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="yunikorn-scheduler", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the in-cluster service account)")
    parser.add_argument("--namespace", default=os.environ.get("NAMESPACE", "default"),
                        help="namespace of the scheduler's configmaps (default: $NAMESPACE or 'default')")
    parser.add_argument("--rest-port", type=int, default=9080, help="REST API port (default 9080; 0 = any)")
    parser.add_argument("--health-port", type=int, default=0,
                        help="port of the liveness and readiness probes alone, apart from the API's load "
                             "(default 0 = any free port, logged; the chart sets 9081)")
    parser.add_argument("--rest-host", default="0.0.0.0",
                        help="address the REST API listens on (default 0.0.0.0; 127.0.0.1 for this host only)")
    parser.add_argument("--rest-allowed-origins", default="*", metavar="ORIGINS",
                        help="web origins whose pages may read the REST API, comma-separated "
                             "(default '*': any may read, as upstream; only origins named may send "
                             "validate-conf's preflighted POST; '' for none)")
    parser.add_argument("--rest-read-share", type=share_argument, default=DEFAULT_SHARE, metavar="SHARE",
                        help="the share of the core's time its readers may take: while the core changes, a read "
                             "beyond it waits for the next snapshot, never served an older one "
                             f"(default {DEFAULT_SHARE}; 1: unbounded)")
    parser.add_argument("--embedded", action="store_true", help="run against an in-process kubesim")
    parser.add_argument("--nodes", type=int, default=10, help="embedded: nodes to create (default 10)")
    parser.add_argument("--pods", type=int, default=200, help="embedded: sample pods to create (default 200)")
    parser.add_argument("--exit-when-done", action="store_true", help="embedded: exit once every pod is bound")
    parser.add_argument("--bind-workers", type=int, default=16, help="concurrent binds (default 16)")
    parser.add_argument("--plugin-mode", action="store_true",
                        help="do not bind: a kube-scheduler with this process as its extender binds YuniKorn's "
                             "decisions (POST /scheduler/extender/filter and /bind on the REST port, or on "
                             "--extender-port with TLS)")
    extender = parser.add_argument_group("plugin mode: the extender over HTTPS with client certificates")
    extender.add_argument("--extender-port", type=int, default=9443,
                          help="the extender's HTTPS port once the three files below are given (default 9443); "
                               "the REST port then serves no extender call")
    extender.add_argument("--extender-tls-cert-file", metavar="FILE", help="the server's PEM certificate chain")
    extender.add_argument("--extender-tls-key-file", metavar="FILE", help="the server's PEM private key")
    extender.add_argument("--extender-client-ca-file", metavar="FILE",
                          help="PEM CA certificates; a client (kube-scheduler) must present a certificate they signed")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    parser.add_argument("--cpu-affinity", default=CHOICES[0], choices=CHOICES,
                        help="one: every thread on the CPU the command runs on when it starts, where they hand "
                             "the interpreter lock over in the same caches (default); all: on any CPU allowed")
    election = parser.add_argument_group("leader election (kube-scheduler's flags)")
    election.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=False,
                          help="run as one of an active/standby pair, the leader holding a Lease (default off)")
    election.add_argument("--leader-elect-lease-duration", type=duration, default=15.0, metavar="DURATION",
                          help="how long a standby waits after the leader's last renewal before taking over "
                               "(default 15s)")
    election.add_argument("--leader-elect-renew-deadline", type=duration, default=10.0, metavar="DURATION",
                          help="how long the leader keeps trying to renew before it stops writing and steps "
                               "down (default 10s)")
    election.add_argument("--leader-elect-retry-period", type=duration, default=2.0, metavar="DURATION",
                          help="how often candidates try to acquire, and the leader to renew (default 2s)")
    election.add_argument("--leader-elect-resource-name", default="yunikorn-scheduler", metavar="NAME",
                          help="the Lease's name (default yunikorn-scheduler)")
    election.add_argument("--leader-elect-resource-namespace", metavar="NAMESPACE",
                          help="the Lease's namespace (default: --namespace)")
    history = parser.add_argument_group("history store")
    history.add_argument("--history-dsn", metavar="URL",
                         default=os.environ.get("HISTORY_DSN") or f"sqlite:///{Path.cwd() / HISTORY_FILE}",
                         help="where finished applications, history samples and events are kept: "
                              "sqlite:///path/file.db or postgresql://user:password@host/db; none: in memory for "
                              f"the retention (default: $HISTORY_DSN, else sqlite:///./{HISTORY_FILE})")
    history.add_argument("--history-app-retention", type=duration, default=Retention.applications, metavar="DURATION",
                         help="how long finished applications are kept (default 720h)")
    history.add_argument("--history-sample-retention", type=duration, default=Retention.samples,
                         metavar="DURATION", help="how long history samples are kept (default 720h)")
    history.add_argument("--history-event-retention", type=duration, default=Retention.events, metavar="DURATION",
                         help="how long events are kept (default 168h)")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.pods < 0 or args.bind_workers < 1:
        parser.error("--nodes and --bind-workers must be at least 1, --pods at least 0")
    if args.plugin_mode and args.embedded:
        parser.error("--plugin-mode leaves binding to a kube-scheduler, which --embedded does not run")
    if args.leader_elect and args.embedded:
        parser.error("--leader-elect needs a shared cluster; --embedded runs a cluster of its own")
    tls_files = (args.extender_tls_cert_file, args.extender_tls_key_file, args.extender_client_ca_file)
    if any(tls_files) and not (all(tls_files) and args.plugin_mode):
        parser.error("--extender-tls-cert-file, --extender-tls-key-file and --extender-client-ca-file go together, "
                     "with --plugin-mode")
    args.extender_tls = None
    if all(tls_files):  # the extender's own server (and its web framework) is loaded only when it is served
        from rest.extender_server import ExtenderTls

        args.extender_tls = ExtenderTls(*tls_files)
    args.election = _election_settings(args) if args.leader_elect else None
    if args.election is not None and args.election.problems():
        parser.error("leader election: " + "; ".join(args.election.problems()))
    return args


def _election_settings(args: argparse.Namespace) -> ElectionSettings:
    """The identity is the pod's name (``$POD_NAME``, set by the chart; the pod, in ``--namespace``, is
    then labelled as leader or not), else the host's name with a unique suffix, as kube-scheduler names
    itself."""
    pod_name = os.environ.get("POD_NAME", "")
    identity = pod_name or f"{socket.gethostname()}_{uuid.uuid4()}"
    return ElectionSettings(identity, args.leader_elect_resource_namespace or args.namespace,
                            args.leader_elect_resource_name, args.leader_elect_lease_duration,
                            args.leader_elect_renew_deadline, args.leader_elect_retry_period,
                            (args.namespace, pod_name) if pod_name else None)


class LogfmtFormatter(logging.Formatter):
    """One ``key=value`` line per record: time, level, logger, message (quoted), exception."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage().replace('"', '\\"')
        line = (f'ts={self.formatTime(record, "%Y-%m-%dT%H:%M:%S")}.{int(record.msecs):03d} '
                f'level={record.levelname.lower()} logger={record.name} msg="{message}"')
        if record.exc_info:
            line += ' error="' + self.formatException(record.exc_info).replace("\n", "\\n").replace('"', '\\"') + '"'
        return line


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(LogfmtFormatter())
    logging.basicConfig(level=level, handlers=[handler], force=True)
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    if logging.getLogger().level > logging.DEBUG:  # the history store's migrations say each step at info
        logging.getLogger("alembic").setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["simulate"]:  # the what-if simulator: the core alone, no cluster
        from simulate.cli import main as simulate
        return simulate(argv[1:])
    args = parse_args(argv)
    configure_logging(args.log_level)
    if args.cpu_affinity == "one":  # before any thread starts: each starts with its parent's CPUs
        cpu = pin_to_current_cpu()
        if cpu is not None:
            log.info("threads kept on CPU %d (--cpu-affinity one)", cpu)
    tune_collector()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    # Only the embedded cluster's kubeconfig needs a folder (a killed process leaves it behind).
    with tempfile.TemporaryDirectory(prefix="yunikorn-") if args.embedded else contextlib.nullcontext() as scratch:
        sim = None
        if args.embedded:
            sim = _start_embedded(args, Path(scratch) / "kubeconfig")
            args.kubeconfig = str(Path(scratch) / "kubeconfig")
        try:
            client = KubeClient.connect(args.kubeconfig, pool_size=args.bind_workers + 16,
                                        fence=LeaderFence() if args.election else OPEN)
        except RuntimeError as error:
            print(f"yunikorn-scheduler: {error}", file=sys.stderr)
            return 2
        try:
            return _serve(args, client, stop)
        finally:
            client.close()
            if sim is not None:
                sim.stop()


def _start_embedded(args: argparse.Namespace, kubeconfig: Path):
    from actors import embedded  # only --embedded runs a cluster of its own

    sim = embedded.start_cluster(args.nodes)
    sim.write_kubeconfig(str(kubeconfig))
    log.info("embedded kubesim at %s with %d nodes", sim.url, args.nodes)
    print(f"embedded cluster at {sim.url}; for kubectl: export KUBECONFIG={kubeconfig}", flush=True)
    return sim


def start_core(supervision: Supervision | None = None, history: HistoryWriter | None = None,
               read_share: float = DEFAULT_SHARE) -> Scheduler:
    """The scheduler core, filtering nodes with the shim's Kubernetes predicates, its readers held to
    ``read_share`` of its time; finished applications and the history samples go to ``history`` when
    there is one."""
    return Scheduler(predicates=KubernetesPredicates(), supervisor=supervision,
                     history_store=history.publish if history is not None else None,
                     read_budget=ReadBudget(read_share))


def open_history(args: argparse.Namespace, fence, supervision: Supervision) -> HistoryWriter | None:
    """The history store's writer (not yet started), or None with ``--history-dsn none``."""
    if args.history_dsn.strip().lower() == "none":
        log.info("history store off: finished applications stay in memory for the retention")
        return None
    store = HistoryStore(args.history_dsn).migrate()
    log.info("history store at %s", describe(args.history_dsn))
    retention = Retention(args.history_app_retention, args.history_sample_retention, args.history_event_retention)
    return HistoryWriter(store, fence, retention=retention, supervisor=supervision)


def _serve(args: argparse.Namespace, client: KubeClient, stop: threading.Event) -> int:
    if args.embedded:
        from actors import embedded

        embedded.install_config(client, args.namespace)
    supervision = Supervision()
    try:
        history = open_history(args, client.fence, supervision)
    except Exception as error:
        log.error("cannot open the history store %s: %s", describe(args.history_dsn), error)
        return 1
    core = start_core(supervision, history, args.rest_read_share)
    if history is not None:
        history.start(events=core.events)
    settings = ServiceSettings(namespace=args.namespace, bind_workers=args.bind_workers, watch=WatchSettings(),
                               plugin_mode=args.plugin_mode, await_lead=args.election is not None)
    service = SchedulerService(client, core, settings, supervision).start()
    rest = elector = extender = None
    try:
        if args.election is not None:
            elector = _start_election(client, args.election, service)
        try:
            rest = _start_rest(core, service, args, elector, history)
        except OSError as error:
            log.error("cannot serve the REST API on ports %d and %d: %s", args.rest_port, args.health_port, error)
            return 1
        if args.extender_tls is not None:
            from rest.extender_server import ExtenderServer

            try:
                extender = ExtenderServer(service.extender, args.extender_tls, args.rest_host, args.extender_port)
            except (OSError, ssl.SSLError) as error:
                log.error("cannot serve the extender on port %d: %s", args.extender_port, error)
                return 1
            log.info("extender at %s (client certificates required)", extender.url)
        if args.embedded:
            threading.Thread(target=embedded.create_pods, name="sample-workload", daemon=True,
                             args=(client, (embedded.sample_pod(i) for i in range(args.pods)), stop)).start()
            if _show_progress(service, args.pods, stop):
                print(embedded.summary(client), flush=True)
                if args.exit_when_done:
                    return 0
                embedded.show_completion(core, lambda: _count(service.latest_state(), _FINISHED), args.pods, stop)
        while not stop.wait(0.5):
            if service.scheduler_state() == SchedulerState.FAILED:
                log.error("scheduler start-up failed; exiting")
                return 1
        return 0
    finally:
        log.info("shutting down")
        if elector is not None:
            elector.stop(release=True)
        if rest is not None:
            rest.stop()
        if extender is not None:
            extender.stop()
        service.stop()
        core.stop()
        if history is not None:
            history.stop()
            history.store.close()


def _start_election(client: KubeClient, settings: ElectionSettings, service: SchedulerService) -> LeaderElector:
    """The elector writes the Lease with a client of its own (own connections and rate limit, so binds
    never delay a renewal, and a request timeout within the renew deadline), outside the fence."""
    lease_client = KubeClient(client.api_client, request_timeout=settings.renew_deadline / 2)
    return LeaderElector(lease_client, settings, client.fence, on_lead=service.lead, on_lost=_step_down).start()


def _step_down() -> None:
    """Leadership lost: every write is already refused by the fence; exit at once, leaving nothing to
    drain (the next leader recovers from the cluster)."""
    log.error("leader election: lease lost; exiting so that this scheduler restarts as a standby")
    logging.shutdown()
    os._exit(LOST_LEASE_EXIT)


def _start_rest(core, service: SchedulerService, args: argparse.Namespace, elector: LeaderElector | None = None,
                history: HistoryWriter | None = None):
    """Serve the REST API (core snapshots, plus the shim's state in the dump and readiness, the actors'
    failures in health and both probes, with leader election who leads, and the history store)."""
    from rest import server
    from rest.app import SchedulerView
    from rest.cors import parse_origins
    from rest.history import History

    view = SchedulerView(core, shim_state=service.latest_state, extender=service.extender,
                         extender_on_rest_port=args.extender_tls is None,
                         actor_failures=service.supervision.failures, unenforced=service.board.unenforced,
                         leadership=_leadership(elector, service) if elector is not None else None,
                         allowed_origins=parse_origins(args.rest_allowed_origins),
                         history=History(history.store, history.status) if history is not None else None)
    rest = server.start(view, host=args.rest_host, port=args.rest_port, health_port=args.health_port)
    log.info("REST API at %s, health probes at %s", rest.url, rest.health.url)
    return rest


def _leadership(elector: LeaderElector, service: SchedulerService):
    """The elector's status, warm once the shim has recovered (a standby recovers ahead of leading)."""
    def read() -> Leadership:
        return dataclasses.replace(elector.status(), warm=service.recovered())
    return read


def _show_progress(service: SchedulerService, total: int, stop: threading.Event) -> bool:
    """Draw a progress bar until ``total`` pods are bound; False when interrupted first."""
    started = time.monotonic()
    bound = 0
    while bound < total:
        if stop.wait(0.25):
            print(file=sys.stderr)
            return False
        snapshot = service.latest_state()
        bound = _count(snapshot, _BOUND_ONCE)
        elapsed = time.monotonic() - started
        filled = int(30 * bound / total) if total else 30
        state = snapshot.state if snapshot else SchedulerState.NEW
        print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {bound}/{total} pods bound "
              f"{bound / elapsed if elapsed else 0:7.1f}/s  {state:<10}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return True


_FINISHED = frozenset({TaskState.COMPLETED, TaskState.FAILED})
_BOUND_ONCE = frozenset({TaskState.BOUND}) | _FINISHED  # a sample pod that ended was bound


def _count(snapshot: ShimStateSnapshot | None, states: frozenset[str]) -> int:
    if snapshot is None:
        return 0
    return sum(1 for pod in snapshot.pods if pod.state in states)


if __name__ == "__main__":
    sys.exit(main())
