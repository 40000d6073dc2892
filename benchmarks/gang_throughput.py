"""Gang scheduling throughput beside ordinary pods, in one run.

kubesim runs as a subprocess with ``--nodes`` nodes; the scheduler (core + shim) runs in this process.
A creator process then creates, interleaved, ``--gangs`` gangs of ``--members`` pods (one task group,
``minMember`` = ``--members``: each gang reserves its room with placeholder pods, which its real pods
then replace) and ``--plain`` ordinary pods. A poller lists the pods every ``--poll`` seconds and notes
when each was first seen bound. Printed: gang pods/s (first create to the last real gang pod bound),
ordinary pods/s (first create to the last ordinary pod bound), their ratio, and the scheduler's CPU
seconds. A gang pod costs about four API calls
(placeholder create, bind and delete, real bind) against one bind for an ordinary pod.

    python benchmarks/gang_throughput.py                         # 2,000 nodes; 500 gangs of 10; 5,000 pods
    python benchmarks/gang_throughput.py --nodes 500 --gangs 100 --plain 1000
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPAWN = multiprocessing.get_context("spawn")
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from benchmarks_common import create_pods, load_client  # noqa: E402
from e2e_throughput import start_kubesim  # noqa: E402

from actors.heap import tune_collector  # noqa: E402
from actors.shim.client import KubeClient  # noqa: E402

QUEUES = ("partitions:\n  - name: default\n    placementrules:\n      - name: provided\n        create: false\n"
          "    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n          - name: gangs\n"
          "          - name: plain\n")
REQUESTS = {"cpu": "100m", "memory": "128Mi"}


def gang_pod(gang: int, member: int, members: int) -> dict:
    groups = [{"name": "workers", "minMember": members, "minResource": REQUESTS}]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"gang-{gang:04d}-{member:02d}", "namespace": "default",
                         "labels": {"queue": "root.gangs", "applicationId": f"gang-{gang:04d}"},
                         "annotations": {"yunikorn.apache.org/task-groups": json.dumps(groups),
                                         "yunikorn.apache.org/task-group-name": "workers"}},
            "spec": {"schedulerName": "yunikorn",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": REQUESTS}}]}}


def plain_pod(index: int) -> dict:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"plain-{index:06d}", "namespace": "default",
                         "labels": {"queue": "root.plain", "applicationId": f"plain-{index // 500}"}},
            "spec": {"schedulerName": "yunikorn",
                     "containers": [{"name": "main", "image": "busybox", "resources": {"requests": REQUESTS}}]}}


def manifests(gangs: int, members: int, plain: int) -> list[dict]:
    """Gangs and ordinary pods interleaved: each gang's members together, as a job creates them."""
    per_gang = plain // gangs if gangs else plain
    result, next_plain = [], 0
    for gang in range(gangs):
        result.extend(gang_pod(gang, m, members) for m in range(members))
        result.extend(plain_pod(i) for i in range(next_plain, min(plain, next_plain + per_gang)))
        next_plain += per_gang
    result.extend(plain_pod(i) for i in range(next_plain, plain))
    return result


def create(kubeconfig: str, gangs: int, members: int, plain: int, threads: int, times) -> None:
    client = load_client(kubeconfig, pool_size=threads)
    bodies = manifests(gangs, members, plain)
    times.put(time.time())
    create_pods(client, bodies, threads)
    times.put(time.time())
    client.close()


def run(args: argparse.Namespace) -> dict:
    from actors.core.scheduler import Scheduler
    from actors.shim.predicates import KubernetesPredicates
    from actors.shim.service import SchedulerService, ServiceSettings

    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = str(Path(scratch) / "kubeconfig")
        sim = start_kubesim(args.nodes, kubeconfig)
        try:
            client = KubeClient.connect(kubeconfig, pool_size=args.bind_workers + 16)
            client.request("POST", "/api/v1/namespaces/default/configmaps", body={
                "metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": QUEUES}})
            core = Scheduler(predicates=KubernetesPredicates())
            service = SchedulerService(client, core, ServiceSettings(bind_workers=args.bind_workers)).start()
            if not service.wait_until("Running", 120):
                raise SystemExit(f"scheduler did not reach Running: {service.latest_state()}")
            cpu_before = resource.getrusage(resource.RUSAGE_SELF)
            times = SPAWN.Queue()
            creator = SPAWN.Process(target=create, args=(kubeconfig, args.gangs, args.members, args.plain,
                                                         args.create_threads, times))
            creator.start()
            first_create = times.get(timeout=60)
            bound_at: dict[str, float] = {}
            expected = args.gangs * args.members + args.plain
            deadline = time.monotonic() + args.timeout
            while len(bound_at) < expected and time.monotonic() < deadline:
                pods, _ = client.list("/api/v1/pods")
                now = time.time()
                for pod in pods:
                    name = pod["metadata"]["name"]
                    if pod["spec"].get("nodeName") and not name.startswith("tg-") and name not in bound_at:
                        bound_at[name] = now
                print(f"\r{len(bound_at)}/{expected} pods bound", end="", file=sys.stderr, flush=True)
                time.sleep(args.poll)
            print(file=sys.stderr)
            cpu_after = resource.getrusage(resource.RUSAGE_SELF)
            creator.join()
            service.stop()
            core.stop()
            client.close()
        finally:
            sim.terminate()
            sim.wait()
    gang_times = [t for name, t in bound_at.items() if name.startswith("gang-")]
    plain_times = [t for name, t in bound_at.items() if name.startswith("plain-")]
    gang_pods, plain_pods = args.gangs * args.members, args.plain
    gang_rate = len(gang_times) / (max(gang_times) - first_create) if gang_times else 0.0
    plain_rate = len(plain_times) / (max(plain_times) - first_create) if plain_times else 0.0
    return {"gang_rate": gang_rate, "plain_rate": plain_rate, "gang_bound": len(gang_times), "gang_pods": gang_pods,
            "plain_bound": len(plain_times), "plain_pods": plain_pods,
            "cpu": (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=2000)
    parser.add_argument("--gangs", type=int, default=500)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--plain", type=int, default=5000)
    parser.add_argument("--bind-workers", type=int, default=16)
    parser.add_argument("--create-threads", type=int, default=8)
    parser.add_argument("--poll", type=float, default=0.2, help="seconds between listings of the pods")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    tune_collector()
    r = run(args)
    ratio = r["gang_rate"] / r["plain_rate"] if r["plain_rate"] else 0.0
    print(f"nodes {args.nodes}: {r['gang_bound']}/{r['gang_pods']} gang pods bound, {r['gang_rate']:.0f} pods/s; "
          f"{r['plain_bound']}/{r['plain_pods']} ordinary pods bound, {r['plain_rate']:.0f} pods/s; "
          f"ratio {ratio:.2f} (goal >= 0.4); scheduler CPU {r['cpu']:.1f} s")


if __name__ == "__main__":
    main()
