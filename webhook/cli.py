"""``yunikorn-admission-controller``: start one replica of the admission controller, or uninstall it.

Start-up (once per replica, in the parent process, before any worker exists): read the configuration
maps, load or create the CA pair, register both webhook configurations and write the server
certificate; then serve HTTPS with gunicorn workers while a background thread renews certificates.
SIGTERM stops the workers gracefully and exits 0. ``--remove-webhooks`` deletes the two webhook
configurations and exits, for a clean uninstall.

``--clock-offset-file`` is a testing aid: the controller's clock reads the real time plus the number
of seconds written in that file, so a test can move time forward without waiting.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from si.kubernetes import CONFIGMAP_CONFIGS, CONFIGMAP_DEFAULTS

log = logging.getLogger(__name__)


def _positive(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="yunikorn-admission-controller",
                                     description="YuniKorn admission controller (mutation and validation webhooks)")
    parser.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster configuration)")
    parser.add_argument("--namespace", default=os.environ.get("NAMESPACE", "default"),
                        help="the scheduler's namespace (default: $NAMESPACE or 'default')")
    parser.add_argument("--scheduler-service-account", default="yunikorn-admin", metavar="NAME",
                        help="the scheduler's service account in --namespace, the only user that may create "
                             "placeholder pods (default yunikorn-admin)")
    parser.add_argument("--listen", default="0.0.0.0:9089", help="HTTPS address (default 0.0.0.0:9089)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    parser.add_argument("--threads", type=int, default=16, help="threads per worker (default 16)")
    parser.add_argument("--request-timeout", type=_positive, default=10.0,
                        help="seconds a request may take to arrive (from the connection, or from its first byte "
                             "on a kept-alive one) and again to be answered; slower connections are cut (default 10)")
    parser.add_argument("--max-buffered-mib", type=_positive, default=64,
                        help="MiB of requests still arriving a worker may hold; beyond it, 503 (default 64)")
    parser.add_argument("--remove-webhooks", action="store_true",
                        help="delete both webhook configurations and exit (uninstall)")
    parser.add_argument("--server-key", choices=("ecdsa", "rsa"), default="ecdsa",
                        help="server certificate key type (default ecdsa P-256)")
    parser.add_argument("--ca-key-bits", type=int, default=4096, help="RSA size of new CA keys (default 4096)")
    parser.add_argument("--rotation-check-interval", type=float, default=3600.0,
                        help="seconds between certificate expiry checks (default 3600)")
    parser.add_argument("--clock-offset-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return parser


def _offset_clock(path: Path):
    def now() -> dt.datetime:
        try:
            offset = float(path.read_text().strip() or 0)
        except (OSError, ValueError):
            offset = 0.0
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=offset)
    return now


def _api_client(kubeconfig: str | None):
    from kubernetes import client, config

    if kubeconfig:
        return config.new_client_from_config(config_file=kubeconfig)
    config.load_incluster_config()
    return client.ApiClient()


def _initial_conf(api_client, namespace: str):
    from kubernetes import client

    from webhook import kube
    from webhook.conf import ConfigMapError, flatten, parse

    core = client.CoreV1Api(api_client)
    defaults, configs = (kube.read_raw(core.read_namespaced_config_map, name, namespace)
                         for name in (CONFIGMAP_DEFAULTS, CONFIGMAP_CONFIGS))
    try:
        return parse(flatten(defaults, configs))
    except ConfigMapError as error:
        log.warning("configmaps unreadable (%s); starting with the default configuration", error)
        return parse({})


def scheduler_user(args) -> str:
    return f"system:serviceaccount:{args.namespace}:{args.scheduler_service_account}"


def _worker_app_factory(args):
    """What each worker runs after the fork: its own client, informers, view and Falcon app."""
    def make_app():
        from webhook.app import create_app
        from webhook.informers import start_informers
        from webhook.view import ClusterView

        view = ClusterView()
        informers = start_informers(_api_client(args.kubeconfig), view, args.namespace)
        started = time.monotonic()
        for informer in informers:
            while not informer.synced.wait(10):
                log.warning("waiting for the initial lists (%.0f s so far)", time.monotonic() - started)
        view.mark_configured()
        return create_app(view, args.namespace, scheduler_user=scheduler_user(args))
    return make_app


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from kubernetes.client.exceptions import ApiException

    from webhook import registration

    api_client = _api_client(args.kubeconfig)
    if args.remove_webhooks:
        from kubernetes import client

        removed = registration.remove(client.AdmissionregistrationV1Api(api_client))
        print(f"removed: {', '.join(removed) or 'nothing (no webhook configuration found)'}")
        return 0

    from webhook.castore import Validity, system_clock
    from webhook.certificates import CertificateManager, Rotator
    from webhook.server import ServerSettings, WebhookServer

    workdir = _scratch_folder()
    cert_file = workdir / "server.pem"
    try:
        conf = _initial_conf(api_client, args.namespace)
        clock = _offset_clock(args.clock_offset_file) if args.clock_offset_file else system_clock
        manager = CertificateManager(api_client, args.namespace, conf.am_service_name, cert_file, clock,
                                     Validity(ca_key_bits=args.ca_key_bits), args.server_key)
        manager.refresh()
    except (ApiException, OSError, RuntimeError) as error:
        shutil.rmtree(workdir, ignore_errors=True)
        log.error("start-up failed: %s", error)
        return 1
    rotator = Rotator(manager, args.rotation_check_interval).start()

    def on_exit() -> None:
        rotator.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        log.info("admission controller stopped")

    settings = ServerSettings(bind=args.listen, cert_file=cert_file, workers=args.workers, threads=args.threads,
                              request_timeout=args.request_timeout,
                              max_buffered=int(args.max_buffered_mib * 2**20), log_level=args.log_level)
    WebhookServer(settings, _worker_app_factory(args), on_exit).run()
    return 0


SCRATCH_PREFIX = "yunikorn-admission-"
SCRATCH_OWNER = "owner.pid"


def _scratch_folder() -> Path:
    """A private folder for the serving certificate and its key, marked with this process's id. Folders of
    controllers killed before their exit could remove them (a key in each) go first: the chart's /tmp is an
    emptyDir, which a restarted container finds as it was left."""
    for folder in Path(tempfile.gettempdir()).glob(SCRATCH_PREFIX + "*"):
        if _abandoned(folder):
            shutil.rmtree(folder, ignore_errors=True)
            log.info("removed %s, left by a controller that is gone", folder)
    workdir = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    (workdir / SCRATCH_OWNER).write_text(str(os.getpid()))
    return workdir


def _abandoned(folder: Path) -> bool:
    """Whether ``folder``'s owner is gone: its process does not exist, or is this one (a restarted container
    numbers its process as the one before). A folder without a readable owner (being made, or another
    user's) is left alone."""
    try:
        owner = int((folder / SCRATCH_OWNER).read_text())
    except (OSError, ValueError):
        return False
    if owner == os.getpid():
        return True
    try:
        os.kill(owner, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


if __name__ == "__main__":
    sys.exit(main())
