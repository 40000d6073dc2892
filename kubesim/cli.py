"""The ``kubesim`` command: an API emulator with seeded nodes, serving until interrupted."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from kubesim.cluster import KubeSim


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubesim", description="A Kubernetes API emulator on loopback.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--kubeconfig-out", metavar="FILE", help="write a kubeconfig for this emulator")
    parser.add_argument("--nodes", type=int, default=0, help="ready nodes to create")
    parser.add_argument("--node-cpu", default="8")
    parser.add_argument("--node-memory", default="32Gi")
    parser.add_argument("--zones", type=int, default=0, help="label the nodes with this many zones, in turn")
    parser.add_argument("--kubelet-delay", type=float, default=None,
                        help="seconds after binding until a pod runs (default: no kubelets)")
    parser.add_argument("--time-factor", type=float, default=1.0,
                        help="multiplies the kubelets' run times (sleep N), grace periods and a CronJob schedule's minute")
    for component in ("priority-admission", "job-controller", "garbage-collector", "deployment-controller",
                      "replicaset-controller", "statefulset-controller", "daemonset-controller",
                      "cronjob-controller", "volume-controller", "serviceaccount-controller", "admission-webhooks",
                      "kubelet-resize"):
        parser.add_argument(f"--{component}", action=argparse.BooleanOptionalAction, default=True,
                            help=f"play the {component.replace('-', ' ')} (default: on)")
    parser.add_argument("--rbac", action=argparse.BooleanOptionalAction, default=True,
                        help="authorise requests by the stored RBAC roles and bindings (default: on; with "
                             "--no-rbac every authenticated user may do anything)")
    parser.add_argument("--log-level", default="WARNING")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")

    # Handlers first: whoever reads the line below may signal at once.
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    if args.time_factor < 0:
        parser.error("--time-factor must not be negative")
    sim = KubeSim(host=args.host, port=args.port, kubelet_delay=args.kubelet_delay, time_factor=args.time_factor,
                  priority_admission=args.priority_admission, job_controller=args.job_controller,
                  garbage_collector=args.garbage_collector, deployment_controller=args.deployment_controller,
                  replicaset_controller=args.replicaset_controller, statefulset_controller=args.statefulset_controller,
                  daemonset_controller=args.daemonset_controller, cronjob_controller=args.cronjob_controller,
                  volume_controller=args.volume_controller,
                  serviceaccount_controller=args.serviceaccount_controller,
                  admission_webhooks=args.admission_webhooks, rbac=args.rbac,
                  kubelet_resize=args.kubelet_resize).start()
    if args.nodes:
        sim.seed_nodes(args.nodes, cpu=args.node_cpu, memory=args.node_memory, zones=args.zones)
    if args.kubeconfig_out:
        sim.write_kubeconfig(args.kubeconfig_out)
    print(f"kubesim serving at {sim.url} with {args.nodes} nodes", flush=True)
    stop.wait()
    sim.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
