"""End-to-end scheduling throughput: pods bound per second, from the first create to the last bind.

For each node count: kubesim runs as a subprocess (so it has a core of its own) with that many nodes;
first a plain official client binds ``--raw-binds`` pods (of another scheduler) to measure kubesim's
raw bind rate (after a creator process made those pods: kubesim's raw create rate); then the
scheduler (core + shim, in this process) starts and ``--pods`` pending pods in ``--queues`` queues are
created through the API by the same kind of creator process. Printed per size: pods bound/s from the
first create to the last bind, kubesim's raw create and bind rates, the ratio to the raw bind rate, the
raw create+bind rate (a plain client creating then binding each pod, ``1/(1/creates + 1/binds)``: what
kubesim can sustain when it must also absorb the creates, as it does here) and the ratio to it, the
CPU seconds of the scheduler process (and its CPU per pod) and of kubesim during the run. With
``--profile PATH``, py-spy samples the scheduler's thread holding the GIL during each run into
``PATH.<nodes>`` (collapsed stacks, each thread's name first).

With ``--constrained F`` the nodes are labelled in 10 zones and each size runs twice: unconstrained,
then with a fraction F of the pods carrying a required pod anti-affinity on the zone (groups of 10 pods
with a label of their own: one per zone) or, every other one, a DoNotSchedule topology spread over the
zones (groups of 100); the constrained run's pods/s is printed beside the unconstrained one's.

With ``--history off,sqlite`` each size runs once per history store setting (none; a SQLite file, the
embedded default, written with the events of every allocation) and the rates are printed side by side.

The scheduler's threads run as ``yunikorn-scheduler`` keeps them: on one CPU (``--cpu-affinity one``,
its default); ``--cpu-affinity all`` lets them run on any, for comparison. kubesim and the creators use
every CPU either way.

    python benchmarks/e2e_throughput.py                      # 500, 2,000, 5,000 nodes; 50,000 pods
    python benchmarks/e2e_throughput.py --nodes 500 --pods 5000
    python benchmarks/e2e_throughput.py --nodes 5000 --constrained 0.2
    python benchmarks/e2e_throughput.py --nodes 500 --pods 10000 --history off,sqlite,off,sqlite
    python benchmarks/e2e_throughput.py --nodes 5000 --profile e2e.stacks
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPAWN = multiprocessing.get_context("spawn")  # the scheduler's threads are running: never fork them
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from benchmarks_common import add_cpu_affinity, cpus_described, load_client, on_every_cpu, scheduler_cpus  # noqa: E402

from actors.heap import tune_collector  # noqa: E402
from actors.shim.client import KubeClient  # noqa: E402
from actors.shim.messages import BinderStatsRequest  # noqa: E402
from actors.shim.service import ServiceSettings  # noqa: E402

SCHEDULER_NAME = "yunikorn"


def queues_yaml(queues: int) -> str:
    children = "".join(f"          - name: q{i}\n" for i in range(queues))
    return ("partitions:\n  - name: default\n    placementrules:\n      - name: provided\n        create: false\n"
            "    queues:\n      - name: root\n        submitacl: '*'\n        queues:\n" + children)


ZONES = 10
ZONE_KEY = "topology.kubernetes.io/zone"


def pod(index: int, queues: int, scheduler: str = SCHEDULER_NAME, constrained: float = 0.0) -> dict:
    queue = index % queues
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{scheduler}-{index:06d}", "namespace": "default",
                         "labels": {"queue": f"root.q{queue}", "applicationId": f"app-{queue}-{index // 5000}"}},
            "spec": {"schedulerName": scheduler,
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}
    every = round(1 / constrained) if constrained else 0
    if every and index % every == 0:
        nth = index // every
        if nth % 2 == 0:  # anti-affinity: groups of ZONES pods, one per zone
            group = {"anti": f"a{nth // 2 // ZONES}"}
            body["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": group}, "topologyKey": ZONE_KEY}]}}
        else:
            group = {"spread": f"s{nth // 2 // 100}"}
            body["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": ZONE_KEY,
                                                          "whenUnsatisfiable": "DoNotSchedule",
                                                          "labelSelector": {"matchLabels": group}}]
        body["metadata"]["labels"].update(group)
    return body


def start_kubesim(nodes: int, kubeconfig: str, zones: int = 0) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-m", "kubesim", "--port", "0", "--kubeconfig-out", kubeconfig,
                                "--nodes", str(nodes), "--node-cpu", "64", "--node-memory", "256Gi",
                                "--zones", str(zones)],
                               cwd=REPO, stdout=subprocess.PIPE, text=True)
    process.stdout.readline()  # "kubesim serving at ...": the kubeconfig is written
    return process


def cpu_seconds(pid: int | str) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_cpu() -> dict[str, float]:
    """CPU seconds of this process's threads by name, numbered threads (``binder-3``) summed by prefix."""
    by_name: dict[str, float] = {}
    for thread in threading.enumerate():
        try:
            seconds = cpu_seconds(f"{os.getpid()}/task/{thread.native_id}")
        except OSError:
            continue
        name = thread.name.rstrip("0123456789").rstrip("-_") or thread.name
        by_name[name] = by_name.get(name, 0.0) + seconds
    return by_name


class Trace:
    """``--trace``: each second, the pods created, bound and in the binder's hands, and which threads
    (and kubesim) took CPU in that second, printed after the run."""

    def __init__(self, sim_pid: int) -> None:
        self._sim_pid = sim_pid
        self._began = self._last = time.monotonic()
        self._cpu = thread_cpu()
        self._sim = cpu_seconds(sim_pid)
        self._rows: list[str] = []
        self._collecting = 0.0
        self._collected = [0.0, 0.0, 0.0]  # seconds in the collector this second, by generation
        gc.callbacks.append(self._collector)

    def _collector(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._collecting = time.perf_counter()
        else:
            self._collected[info["generation"]] += time.perf_counter() - self._collecting

    def sample(self, created: int, stats) -> None:
        now = time.monotonic()
        if now - self._last < 1.0:
            return
        cpu, sim = thread_cpu(), cpu_seconds(self._sim_pid)
        spent = sorted(((cpu[n] - self._cpu.get(n, 0.0), n) for n in cpu), reverse=True)[:5]
        self._rows.append(f"{now - self._began:6.1f} {created:7d} {stats.bound:7d} {stats.in_flight:6d} "
                          f"{created - stats.bound - stats.in_flight:7d} {(sim - self._sim) / (now - self._last):5.2f} "
                          + f"gc={'/'.join(f'{g:.2f}' for g in self._collected)} "
                          + " ".join(f"{n}={s / (now - self._last):.2f}" for s, n in spent if s > 0.005))
        self._last, self._cpu, self._sim, self._collected = now, cpu, sim, [0.0, 0.0, 0.0]

    def print(self) -> None:
        gc.callbacks.remove(self._collector)
        print("     t created   bound  inflt  before kubesim threads' CPU share (the busiest)", flush=True)
        print("\n".join(self._rows), flush=True)


def start_profiler(path: str) -> subprocess.Popen:
    """py-spy sampling this process's thread that holds the GIL (so, what costs CPU in Python) into
    ``path`` as collapsed stacks, one line per stack with its sample count, each thread's name first."""
    return subprocess.Popen([py_spy(), "record", "--pid", str(os.getpid()), "--gil", "--threads", "--nonblocking",
                             "--rate", "250", "--format", "raw", "--output", path],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def py_spy() -> str:
    return shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))


def create_pods(kubeconfig: str, count: int, queues: int, threads: int, scheduler: str, times,
                constrained: float = 0.0, created=None) -> None:
    """The creator process: ``count`` pending pods through the API; reports its start and end times (and
    counts the pods made in ``created``, a shared integer, when given)."""
    client = load_client(kubeconfig, pool_size=threads)
    times.put(time.time())

    def create(i: int) -> None:
        client.request_retrying("POST", "/api/v1/namespaces/default/pods", body=pod(i, queues, scheduler, constrained))
        if created is not None:
            with created.get_lock():
                created.value += 1

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(count)))
    times.put(time.time())
    client.close()


def start_creator(kubeconfig: str, count: int, queues: int, threads: int, scheduler: str, constrained: float = 0.0,
                  created=None):
    times = SPAWN.Queue()
    process = SPAWN.Process(target=create_pods, args=(kubeconfig, count, queues, threads, scheduler, times,
                                                      constrained, created))
    process.start()
    return process, times


def raw_rates(kubeconfig: str, count: int, nodes: int, args: argparse.Namespace) -> tuple[float, float]:
    """Creates per second of the creator process, then binds per second of a plain official client
    (``create_namespaced_pod_binding`` from ``--bind-workers`` threads), on pods of another scheduler."""
    from kubernetes import client as k8s
    from kubernetes import config

    creator, times = start_creator(kubeconfig, count, 1, args.create_threads, "raw-bench")
    began, ended = times.get(timeout=60), times.get(timeout=600)
    creator.join()
    configuration = k8s.Configuration()
    config.load_kube_config(kubeconfig, client_configuration=configuration)
    configuration.connection_pool_maxsize = args.bind_workers
    with k8s.ApiClient(configuration) as api_client:
        core = k8s.CoreV1Api(api_client)

        def bind(i: int) -> None:
            body = k8s.V1Binding(metadata=k8s.V1ObjectMeta(name=f"raw-bench-{i:06d}"),
                                 target=k8s.V1ObjectReference(api_version="v1", kind="Node",
                                                              name=f"node-{i % nodes:05d}"))
            response = core.create_namespaced_pod_binding(f"raw-bench-{i:06d}", "default", body,
                                                          _preload_content=False)
            response.read()
            response.release_conn()

        bind_began = time.perf_counter()
        with ThreadPoolExecutor(args.bind_workers) as pool:
            list(pool.map(bind, range(count)))
        return count / (ended - began), count / (time.perf_counter() - bind_began)


def run(nodes: int, args: argparse.Namespace, constrained: float = 0.0, history: str = "off") -> dict:
    from actors.core.scheduler import Scheduler
    from actors.history.store import HistoryStore
    from actors.history.writer import HistoryWriter
    from actors.shim.predicates import KubernetesPredicates
    from actors.shim.service import SchedulerService

    gc.collect()  # the previous size's scheduler is garbage: do not let this run pay for collecting it
    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = str(Path(scratch) / "kubeconfig")
        sim = start_kubesim(nodes, kubeconfig, ZONES if args.constrained else 0)
        try:
            raw_creates, raw = raw_rates(kubeconfig, args.raw_binds, nodes, args)
            with scheduler_cpus(args.cpu_affinity):  # as the scheduler command keeps its threads
                client = KubeClient.connect(kubeconfig, pool_size=args.bind_workers + 16)
                client.request("POST", "/api/v1/namespaces/default/configmaps", body={
                    "metadata": {"name": "yunikorn-configs"}, "data": {
                        "queues.yaml": queues_yaml(args.queues),
                        "kubernetes.qps": str(args.kube_qps), "kubernetes.burst": str(round(args.kube_qps))}})
                writer = None
                if history != "off":
                    writer = HistoryWriter(HistoryStore(f"sqlite:///{scratch}/history.db").migrate())
                core = Scheduler(predicates=KubernetesPredicates(),
                                 history_store=writer.publish if writer is not None else None)
                if writer is not None:
                    writer.start(events=core.events)
                service = SchedulerService(client, core, ServiceSettings(bind_workers=args.bind_workers)).start()
                if not service.wait_until("Running", 120):
                    raise SystemExit(f"scheduler did not reach Running: {service.latest_state()}")
                profiler = start_profiler(f"{args.profile}.{nodes}") if args.profile else None
                if profiler is not None:
                    on_every_cpu(profiler.pid)
                cpu_before, sim_before = resource.getrusage(resource.RUSAGE_SELF), cpu_seconds(sim.pid)
                created = SPAWN.Value("q", 0) if args.trace else None
                creator, times = start_creator(kubeconfig, args.pods, args.queues, args.create_threads,
                                               SCHEDULER_NAME, constrained, created)
                on_every_cpu(creator.pid)
                first_create = times.get(timeout=60)
                trace = Trace(sim.pid) if args.trace else None
                while True:
                    stats = service.binder.ask(BinderStatsRequest())
                    if stats.bound >= args.pods:
                        break
                    if trace is not None:
                        trace.sample(created.value, stats)
                    time.sleep(0.05)
                if trace is not None:
                    trace.print()
                last_bind = time.time() - (time.monotonic() - stats.last_bound_at)
                threads = threading.active_count()
                cpu_after, sim_after = resource.getrusage(resource.RUSAGE_SELF), cpu_seconds(sim.pid)
                if profiler is not None:
                    profiler.send_signal(signal.SIGINT)
                    profiler.wait()
                creator.join()
                created = times.get(timeout=60) - first_create
                # Only the pods left unbound: listing every pod would add the list's size to the peak RSS.
                unbound = len(client.request("GET", "/api/v1/pods", query=[
                    ("fieldSelector", f"spec.nodeName=,spec.schedulerName={SCHEDULER_NAME}")]).get("items") or ())
                service.stop()
                core.stop()
                client.close()
                if writer is not None:
                    writer.stop()
                    writer.store.close()
        finally:
            sim.terminate()
            sim.wait()
    elapsed = last_bind - first_create
    pipeline = 1 / (1 / raw_creates + 1 / raw)  # a plain client creating, then binding, each pod
    return {"pipeline": pipeline, "pipeline_ratio": args.pods / elapsed / pipeline,
        "nodes": nodes, "pods": args.pods, "seconds": elapsed, "create_rate": args.pods / created, "rate": args.pods / elapsed, "raw": raw,
        "ratio": args.pods / elapsed / raw, "failed": stats.failed, "unbound": unbound,
        "scheduler_cpu": (cpu_after.ru_utime + cpu_after.ru_stime) - (cpu_before.ru_utime + cpu_before.ru_stime),
        "kubesim_cpu": sim_after - sim_before, "threads": threads,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", default="500,2000,5000", help="comma-separated node counts")
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--queues", type=int, default=10)
    add_cpu_affinity(parser)
    parser.add_argument("--raw-binds", type=int, default=2000)
    parser.add_argument("--bind-workers", type=int, default=16)
    parser.add_argument("--create-threads", type=int, default=8)
    parser.add_argument("--kube-qps", type=float, default=1000,
                        help="the scheduler's kubernetes.qps and kubernetes.burst (its default: 1000)")
    parser.add_argument("--constrained", type=float, default=0.0,
                        help="fraction of pods with zone anti-affinity or zone spread (runs each size twice)")
    parser.add_argument("--history", default="off",
                        help="comma-separated history store settings to run each size with: off, sqlite")
    parser.add_argument("--trace", action="store_true",
                        help="each second: pods created, bound, at the binder, not yet at it; CPU by thread")
    parser.add_argument("--profile", metavar="PATH",
                        help="sample the scheduler with py-spy during each run into PATH.<nodes> (collapsed stacks)")
    args = parser.parse_args()
    if args.profile and not Path(py_spy()).is_file():
        parser.error("--profile needs py-spy: pip install py-spy")
    tune_collector()  # as the scheduler command does
    header = ("nodes", "pods", "seconds", "pods/s", "creates/s", "raw binds/s", "ratio", "raw c+b/s", "ratio",
              "sched cpu s", "us/pod", "kubesim cpu s", "failed", "unbound", "threads")
    print(f"the scheduler's client-side rate limit: {args.kube_qps:g} requests/s; {cpus_described(args.cpu_affinity)}",
          flush=True)
    print(" ".join(f"{h:>{max(len(h), 7)}}" for h in header), flush=True)
    for nodes in (int(n) for n in args.nodes.split(",")):
        rates = []
        by_history: dict[str, list[float]] = {}
        for constrained, history in ((c, h) for c in ((0.0, args.constrained) if args.constrained else (0.0,))
                                     for h in args.history.split(",")):
            r = run(nodes, args, constrained, history)
            rates.append(r["rate"])
            by_history.setdefault(history, []).append(r["rate"])
            row = (r["nodes"], r["pods"], f"{r['seconds']:.1f}", f"{r['rate']:.0f}", f"{r['create_rate']:.0f}",
                   f"{r['raw']:.0f}", f"{r['ratio']:.2f}", f"{r['pipeline']:.0f}", f"{r['pipeline_ratio']:.2f}",
                   f"{r['scheduler_cpu']:.1f}",
                   f"{r['scheduler_cpu'] / r['pods'] * 1e6:.0f}", f"{r['kubesim_cpu']:.1f}", r["failed"], r["unbound"], r["threads"])
            print(" ".join(f"{v!s:>{max(len(h), 7)}}" for h, v in zip(header, row, strict=True)), flush=True)
        if len(by_history) > 1:
            means = {h: sum(r) / len(r) for h, r in by_history.items()}
            print(f"{nodes} nodes, pods/s by history store (mean of runs): "
                  + ", ".join(f"{h} {m:.0f}" for h, m in means.items())
                  + (f"; sqlite/off {means['sqlite'] / means['off']:.2f}" if {"sqlite", "off"} <= set(means) else ""),
                  flush=True)
        if args.constrained:
            print(f"{nodes} nodes, {args.constrained:.0%} constrained: {rates[1]:.0f} pods/s beside "
                  f"{rates[0]:.0f} unconstrained: ratio {rates[1] / rates[0]:.2f}", flush=True)
    print(f"peak RSS of the scheduler process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
