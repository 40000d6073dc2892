"""``yunikorn-scheduler``: the scheduler process (core + Kubernetes shim + REST).

Connects with ``--kubeconfig PATH``, else the in-cluster service account, else stops with a hint.
``--embedded`` starts an in-process kubesim with ``--nodes`` nodes and a sample multi-queue workload of
``--pods`` pods, shows a progress bar while they are scheduled and a summary table once they are all
bound, then keeps serving until Ctrl-C (or exits with ``--exit-when-done``). SIGTERM and SIGINT shut
down gracefully (informers stopped, binds drained, actors stopped) and exit 0.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from actors import embedded
from actors.base import Supervision
from actors.core.scheduler import Scheduler
from actors.heap import tune_collector
from actors.shim.client import KubeClient
from actors.shim.informer import WatchSettings
from actors.shim.lifecycle import SchedulerState, TaskState
from actors.shim.predicates import KubernetesPredicates
from actors.shim.service import SchedulerService, ServiceSettings
from actors.shim.state import ShimStateSnapshot

log = logging.getLogger("yunikorn.scheduler")
READER_SHARE = 0.1  # REST readers may take at most this share of the scheduler's time (see SchedulerView)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="yunikorn-scheduler", description=__doc__.split("\n\n")[0])
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: the in-cluster service account)")
    parser.add_argument("--namespace", default=os.environ.get("NAMESPACE", "default"),
                        help="namespace of the scheduler's configmaps (default: $NAMESPACE or 'default')")
    parser.add_argument("--rest-port", type=int, default=9080, help="REST API port (default 9080; 0 = any)")
    parser.add_argument("--rest-host", default="0.0.0.0",
                        help="address the REST API listens on (default 0.0.0.0; 127.0.0.1 for this host only)")
    parser.add_argument("--embedded", action="store_true", help="run against an in-process kubesim")
    parser.add_argument("--nodes", type=int, default=10, help="embedded: nodes to create (default 10)")
    parser.add_argument("--pods", type=int, default=200, help="embedded: sample pods to create (default 200)")
    parser.add_argument("--exit-when-done", action="store_true", help="embedded: exit once every pod is bound")
    parser.add_argument("--bind-workers", type=int, default=16, help="concurrent binds (default 16)")
    parser.add_argument("--plugin-mode", action="store_true",
                        help="do not bind: a kube-scheduler with this process as its extender binds YuniKorn's "
                             "decisions (POST /scheduler/extender/filter and /bind on the REST port)")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.pods < 0 or args.bind_workers < 1:
        parser.error("--nodes and --bind-workers must be at least 1, --pods at least 0")
    if args.plugin_mode and args.embedded:
        parser.error("--plugin-mode leaves binding to a kube-scheduler, which --embedded does not run")
    return args


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


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    configure_logging(args.log_level)
    tune_collector()
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    with tempfile.TemporaryDirectory(prefix="yunikorn-") as scratch:
        sim = None
        if args.embedded:
            sim = _start_embedded(args, Path(scratch) / "kubeconfig")
            args.kubeconfig = str(Path(scratch) / "kubeconfig")
        try:
            client = KubeClient.connect(args.kubeconfig, pool_size=args.bind_workers + 16)
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
    from kubesim import KubeSim

    sim = KubeSim(port=0, kubelet_delay=0.0).start()
    sim.write_kubeconfig(str(kubeconfig))
    sim.seed_nodes(args.nodes)
    log.info("embedded kubesim at %s with %d nodes", sim.url, args.nodes)
    print(f"embedded cluster at {sim.url}; for kubectl: export KUBECONFIG={kubeconfig}", flush=True)
    return sim


def start_core(supervision: Supervision | None = None) -> Scheduler:
    """The scheduler core, filtering nodes with the shim's Kubernetes predicates."""
    return Scheduler(predicates=KubernetesPredicates(), supervisor=supervision)


def _serve(args: argparse.Namespace, client: KubeClient, stop: threading.Event) -> int:
    if args.embedded:
        embedded.install_config(client, args.namespace)
    supervision = Supervision()
    core = start_core(supervision)
    settings = ServiceSettings(namespace=args.namespace, bind_workers=args.bind_workers, watch=WatchSettings(),
                               plugin_mode=args.plugin_mode)
    service = SchedulerService(client, core, settings, supervision).start()
    rest = None
    try:
        try:
            rest = _start_rest(core, service, args.rest_host, args.rest_port)
        except OSError as error:
            log.error("cannot serve the REST API on port %d: %s", args.rest_port, error)
            return 1
        if args.embedded:
            threading.Thread(target=embedded.create_pods, name="sample-workload", daemon=True,
                             args=(client, (embedded.sample_pod(i) for i in range(args.pods)))).start()
            if _show_progress(service, args.pods, stop):
                print(embedded.summary(client), flush=True)
                if args.exit_when_done:
                    return 0
        while not stop.wait(0.5):
            latest = service.latest_state()
            if latest is not None and latest.state == SchedulerState.FAILED:
                log.error("scheduler start-up failed; exiting")
                return 1
        return 0
    finally:
        log.info("shutting down")
        if rest is not None:
            rest.stop()
        service.stop()
        core.stop()


def _start_rest(core, service: SchedulerService, host: str, port: int):
    """Serve the REST API (core snapshots, plus the shim's state in the dump and readiness, and the
    actors' failures in health and both probes)."""
    from rest import server
    from rest.app import SchedulerView

    view = SchedulerView(core, shim_state=service.latest_state, extender=service.extender,
                         actor_failures=service.supervision.failures, reader_share=READER_SHARE)
    rest = server.start(view, host=host, port=port)
    log.info("REST API at %s", rest.url)
    return rest


def _show_progress(service: SchedulerService, total: int, stop: threading.Event) -> bool:
    """Draw a progress bar until ``total`` pods are bound; False when interrupted first."""
    started = time.monotonic()
    bound = 0
    while bound < total:
        if stop.wait(0.25):
            print(file=sys.stderr)
            return False
        snapshot = service.latest_state()
        bound = _bound(snapshot)
        elapsed = time.monotonic() - started
        filled = int(30 * bound / total) if total else 30
        state = snapshot.state if snapshot else SchedulerState.NEW
        print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {bound}/{total} pods bound "
              f"{bound / elapsed if elapsed else 0:7.1f}/s  {state:<10}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return True


def _bound(snapshot: ShimStateSnapshot | None) -> int:
    if snapshot is None:
        return 0
    return sum(1 for pod in snapshot.pods if pod.state == TaskState.BOUND)


if __name__ == "__main__":
    sys.exit(main())
