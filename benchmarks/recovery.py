"""Recovery: seconds from scheduler start to ``Running`` over a cluster already full of running pods.

kubesim runs as a subprocess with ``--nodes`` nodes and ``--pods`` pods already bound to them (a share
``--foreign`` of them belong to another scheduler), created through the API by creator processes. Then
the scheduler (core + shim) starts in this process: it lists everything, registers, sends the nodes,
applications and existing allocations to the core in confirmed batches and makes the nodes
schedulable. Before it lists, a restarted ``yunikorn-scheduler`` starts an interpreter, imports
``actors.cli`` (everything the command imports), connects (loading the official client's
``kubernetes.client`` and ``kubernetes.config`` and the kubeconfig) and opens its default history store
(a SQLite file already migrated, the modules' bytecode already compiled, as on a restart from the
image): that is timed in a fresh interpreter and added, so the total is from process start until the
core knows every recovered pod and schedules on every node again (every node's turn to schedulable
processed by the core, not only the shim's ``Running``). The scheduler's threads run as the command keeps
them: on one CPU (``--cpu-affinity one``, its default); ``--cpu-affinity all`` lets them run on any.

Printed: those seconds by phase (listed and registered, ``Running``, scheduling on every node), the CPU
seconds the process spent in each (the figure to compare on a loaded machine: wall time there is
mostly time spent waiting for a core) and kubesim's, the CPU seconds of the pods' and nodes' informer
threads and of the core's threads, what was recovered, the core's view of it, and peak RSS.
``--timeline`` adds, per 100 ms, the CPU of each of the process's threads and of kubesim, and whether
any thread of the scheduler was runnable at all: time when none was is time spent waiting on kubesim, a
timer or a hand-off, time when one was but none ran is time spent waiting for a CPU.

    python benchmarks/recovery.py                       # 5,000 nodes, 50,000 pods
    python benchmarks/recovery.py --nodes 500 --pods 5000
    python benchmarks/recovery.py --timeline            # and where the wall time went, 100 ms at a time
    python benchmarks/recovery.py --real-pods           # pods as a real cluster stores them (below)

The benchmark's own pods carry only what a pod must. ``--real-pods`` makes them as a real cluster lists
them: what the API server's admission adds to every pod (the ServiceAccount plugin's token volume, named
``kube-api-access-`` and five random characters, mounted in each container; the DefaultTolerationSeconds
plugin's two ``NoExecute`` tolerations), the defaults it fills in, a workload's template hash label, and
the status a kubelet of Kubernetes 1.33 or later writes (``Running``, a container status reporting what
it allocated and applied), written through ``/status`` after each pod is made.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import resource
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPAWN = multiprocessing.get_context("spawn")  # creators are fresh interpreters, never forks of this one
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from benchmarks_common import add_cpu_affinity, cpus_described, load_client, scheduler_cpus  # noqa: E402
from e2e_throughput import cpu_seconds, queues_yaml, start_kubesim, thread_cpu  # noqa: E402

from actors.heap import tune_collector  # noqa: E402
from actors.shim.client import KubeClient  # noqa: E402


def running_pod(index: int, nodes: int, foreign_every: int) -> dict:
    foreign = foreign_every and index % foreign_every == 0
    queue = index % 10
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"running-{index:06d}", "namespace": "default",
                         "labels": {} if foreign else {"queue": f"root.q{queue}",
                                                       "applicationId": f"app-{queue}-{index // 5000}"}},
            "spec": {"schedulerName": "default-scheduler" if foreign else "yunikorn",
                     "nodeName": f"node-{index % nodes:05d}",
                     "containers": [{"name": "main", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}}


# The letters Kubernetes draws generated name suffixes from (no vowels, no look-alikes).
SUFFIX_LETTERS = "bcdfghjklmnpqrstvwxz2456789"
DEFAULT_TOLERATIONS = [{"key": f"node.kubernetes.io/{taint}", "operator": "Exists", "effect": "NoExecute",
                        "tolerationSeconds": 300} for taint in ("not-ready", "unreachable")]


def as_stored(pod: dict, index: int) -> dict:
    """``pod`` as the API server stores it once admitted and defaulted: the token volume with a name of
    its own, the default tolerations and the usual defaults."""
    token = "kube-api-access-" + "".join(random.Random(index).choices(SUFFIX_LETTERS, k=5))
    spec, labels = pod["spec"], pod["metadata"]["labels"]
    spec.update({"volumes": [{"name": token, "projected": {"defaultMode": 420, "sources": [
                    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                        "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}],
                 "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
                 "serviceAccountName": "default", "serviceAccount": "default", "securityContext": {},
                 "tolerations": DEFAULT_TOLERATIONS, "priority": 0, "enableServiceLinks": True,
                 "preemptionPolicy": "PreemptLowerPriority"})
    for container in spec["containers"]:
        container.update({"volumeMounts": [{"name": token, "readOnly": True,
                                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                          "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                          "imagePullPolicy": "Always"})
    if "applicationId" in labels:
        labels["pod-template-hash"] = "5d4f8b7c9"  # no owner reference: kubesim's collector removes orphans
    return pod


def running_status(pod: dict) -> dict:
    """What a kubelet of Kubernetes 1.33 or later writes of a running pod: every container reports what
    it allocated and applied (here, what it asks)."""
    return {"phase": "Running", "qosClass": "Burstable", "hostIP": "10.0.0.1", "podIP": "10.1.0.1",
            "startTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": kind, "status": "True", "lastProbeTime": None,
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}
                           for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                        "PodScheduled")],
            "containerStatuses": [{
                "name": c["name"], "ready": True, "restartCount": 0, "started": True, "image": c["image"],
                "imageID": f"docker.io/library/{c['image']}@sha256:{'0' * 64}", "containerID": f"containerd://{'0' * 64}",
                "state": {"running": {"startedAt": "2026-01-01T00:00:01Z"}}, "lastState": {},
                "allocatedResources": c["resources"]["requests"], "resources": c["resources"]}
                for c in pod["spec"]["containers"]]}


def create_range(kubeconfig: str, start: int, stop: int, nodes: int, foreign_every: int, real: bool) -> None:
    client = load_client(kubeconfig, pool_size=8)
    path = "/api/v1/namespaces/default/pods"

    def create(index: int) -> None:
        pod = running_pod(index, nodes, foreign_every)
        if not real:
            client.request_retrying("POST", path, body=pod)
            return
        client.request_retrying("POST", path, body=as_stored(pod, index))
        name = pod["metadata"]["name"]
        client.request_retrying("PUT", f"{path}/{name}/status",
                                body={"metadata": {"name": name}, "status": running_status(pod)})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(create, range(start, stop)))
    client.close()


# Modules of the `test` extra (not installed in the image) that the command would import when present.
TEST_ONLY_MODULES = ("kubernetes_validate",)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def start_up_seconds(kubeconfig: str, scratch: str) -> tuple[float, float]:
    """Seconds (wall, CPU) a fresh interpreter takes to do what ``yunikorn-scheduler`` does before it lists:
    start, import the command's modules, connect with ``kubeconfig`` and open its history store. A first,
    untimed run migrates the store and compiles the modules into a bytecode cache, so the timed run finds
    both as a restarted scheduler does (the image's pip compiles every module at install). Packages this
    environment has for the tests alone, which the image has not, are hidden from it as if absent: the
    official client's dynamic module imports ``kubernetes_validate`` (and with it jsonschema) when present.
    As the command does, it sets the collector's pace before it connects; it ends without the interpreter's
    exit (a last collection and the teardown of every module), which a scheduler does not reach before it lists."""
    dsn = f"sqlite:///{scratch}/yunikorn-history.db"
    hidden = ", ".join(f"{name!r}: None" for name in TEST_ONLY_MODULES)
    command = (f"import sys; sys.modules.update({{{hidden}}}); "
               f"import actors.cli; actors.cli.tune_collector(); "
               f"from actors.shim.client import KubeClient; KubeClient.connect({kubeconfig!r}).close(); "
               f"from actors.history.store import HistoryStore; HistoryStore({dsn!r}).migrate().close(); "
               f"import os; os._exit(0)")
    environment = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONPYCACHEPREFIX": f"{scratch}/pycache"}
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", command], cwd=REPO, env=environment, check=True)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.monotonic()
    subprocess.run([sys.executable, "-c", command], cwd=REPO, env=environment, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.monotonic() - began, after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime


def _sample(pids: tuple[int, int], period: float, rows) -> None:
    """In a process of its own (a thread of the scheduler's would wait for the interpreter lock): every
    ``period``, the seconds every thread of ``pids`` spent on a CPU and runnable waiting for one, and whether
    it is runnable now, until told to stop."""
    rows.send("ready")
    taken = []
    while not rows.poll(period):
        at = time.monotonic()
        sample = {}
        for pid in pids:
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    on_cpu, waiting = Path(f"/proc/{pid}/task/{task}/schedstat").read_text().split()[:2]
                    state = Path(f"/proc/{pid}/task/{task}/stat").read_text().rsplit(")", 1)[1].split()[0]
                except (OSError, ValueError, IndexError):
                    continue
                sample[(pid, int(task))] = (int(on_cpu) / 1e9, int(waiting) / 1e9, state == "R")
        taken.append((at, sample))
    rows.send(taken)


class Timeline:
    """With ``--timeline``: every ``period`` seconds, the CPU each thread of this process and of kubesim
    spent, and how long each waited for a CPU (``/proc/.../schedstat``), sampled by another process, so
    the intervals where the scheduler waits on something show, and what ran."""

    def __init__(self, sim_pid: int, period: float = 0.02) -> None:
        self._sim = sim_pid
        self._pipe, theirs = SPAWN.Pipe()
        self._sampler = SPAWN.Process(target=_sample, args=((os.getpid(), sim_pid), period, theirs), daemon=True)
        self._sampler.start()
        self._pipe.recv()  # sampling
        self.rows: list = []
        self._names: dict[int, str] = {}

    def stop(self) -> None:
        self._names = {t.native_id: t.name for t in threading.enumerate()}
        self._pipe.send("stop")
        self.rows = self._pipe.recv()
        self._sampler.join()

    def _name(self, pid: int, tid: int) -> str:
        if pid == self._sim:
            return "kubesim"
        name = self._names.get(tid, "ended")
        return name.split("(")[0].rstrip("-0123456789 ") or name

    def report(self, started: float, bucket: float = 0.1) -> None:
        """Per ``bucket`` of wall time from ``started``: the scheduler's CPU and CPU wait (shares of one core),
        how often none of its threads was runnable, its busiest threads, kubesim's CPU; then the totals."""
        print(f"timeline (per {bucket * 1000:.0f} ms: scheduler on CPU / waiting for a CPU, as shares of one "
              "core; share of samples with none of its threads runnable; its busiest threads; kubesim on CPU)")
        blocked = 0.0
        rows = [(at - started, sample) for at, sample in self.rows]
        first = 0
        for last in range(1, len(rows)):
            if rows[last][0] - rows[first][0] < bucket and last != len(rows) - 1:
                continue
            (was, before), (at, after) = rows[first], rows[last]
            wall = at - was
            cpu: dict[str, float] = {}
            waiting = 0.0
            for key, (on, queued, _) in after.items():
                on0, queued0, _ = before.get(key, (0.0, 0.0, False))
                name = self._name(*key)
                cpu[name] = cpu.get(name, 0.0) + on - on0
                if key[0] != self._sim:
                    waiting += queued - queued0
            sim = cpu.pop("kubesim", 0.0)
            busy = sum(cpu.values())
            samples = rows[first + 1:last + 1]
            stopped = sum(not any(r for (pid, _), (_, _, r) in sample.items() if pid != self._sim)
                          for _, sample in samples) / len(samples)
            blocked += stopped * wall
            top = ", ".join(f"{n} {d / wall:.0%}" for n, d in sorted(cpu.items(), key=lambda x: -x[1])[:3] if d > 0.002)
            print(f"  {was:5.2f}-{at:5.2f} {busy / wall:4.0%} / {waiting / wall:4.0%} none {stopped:4.0%} [{top}] "
                  f"kubesim {sim / wall:.0%}")
            first = last
        (began, before), (ended, after) = rows[0], rows[-1]
        totals: dict[str, float] = {}
        for key, (on, _, _) in after.items():
            totals[self._name(*key)] = totals.get(self._name(*key), 0.0) + on - before.get(key, (0.0,))[0]
        kubesim = totals.pop("kubesim", 0.0)
        wall, cpu = ended - began, sum(totals.values())
        print(f"of {wall:.2f} wall seconds: {cpu:.2f} a thread of the scheduler on a CPU, {blocked:.2f} none of "
              f"them runnable (waiting on kubesim, a timer or each other; sampled), "
              f"{max(0.0, wall - cpu - blocked):.2f} the rest (runnable, waiting for a CPU); kubesim on a CPU {kubesim:.2f}")
        print("  CPU seconds by thread: " + ", ".join(
            f"{name} {seconds:.2f}" for name, seconds in sorted(totals.items(), key=lambda x: -x[1]) if seconds >= 0.01))


class Phases:
    """The first time (seconds since ``started``, CPU seconds since ``cpu_before``) each scheduler state is seen."""

    def __init__(self, service, started: float, cpu_before: float) -> None:
        self.seen: dict[str, tuple[float, float]] = {}
        self._done = threading.Event()

        def watch() -> None:
            while not self._done.wait(0.01):
                state = service.scheduler_state()
                if state not in self.seen:
                    self.seen[state] = (time.monotonic() - started, _cpu_seconds() - cpu_before)

        self._thread = threading.Thread(target=watch, name="phases", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50_000)
    parser.add_argument("--foreign", type=float, default=0.2, help="share of pods of another scheduler")
    parser.add_argument("--creators", type=int, default=2, help="creator processes")
    parser.add_argument("--timeline", action="store_true", help="print CPU per thread and kubesim's over time")
    add_cpu_affinity(parser)
    parser.add_argument("--real-pods", action="store_true",
                        help="pods as a real cluster stores them: admission's token volume and tolerations, a kubelet's status")
    args = parser.parse_args()
    tune_collector()  # as the scheduler command does
    foreign_every = round(1 / args.foreign) if args.foreign > 0 else 0

    from actors.core.scheduler import Scheduler
    from actors.shim.messages import FlushToCore
    from actors.shim.predicates import KubernetesPredicates
    from actors.shim.service import SchedulerService, ServiceSettings

    with tempfile.TemporaryDirectory() as scratch:
        kubeconfig = str(Path(scratch) / "kubeconfig")
        sim = start_kubesim(args.nodes, kubeconfig)
        try:
            began = time.monotonic()
            share = -(-args.pods // args.creators)
            creators = [SPAWN.Process(target=create_range, args=(
                kubeconfig, i * share, min(args.pods, (i + 1) * share), args.nodes, foreign_every, args.real_pods))
                for i in range(args.creators)]
            for creator in creators:
                creator.start()
            for creator in creators:
                creator.join()
            print(f"cluster prepared: {args.nodes} nodes, {args.pods} running pods "
                  f"({args.foreign:.0%} foreign{', as a real cluster stores them' if args.real_pods else ''}) in {time.monotonic() - began:.1f} s", flush=True)
            client = KubeClient.connect(kubeconfig, pool_size=32)
            client.request("POST", "/api/v1/namespaces/default/configmaps", body={
                "metadata": {"name": "yunikorn-configs"}, "data": {"queues.yaml": queues_yaml(10)}})
            start_up = start_up_seconds(kubeconfig, scratch)
            rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            sim_cpu_before = cpu_seconds(sim.pid)
            cpu_before = _cpu_seconds()
            timeline = Timeline(sim.pid) if args.timeline else None
            with scheduler_cpus(args.cpu_affinity):  # as the scheduler command keeps its threads
                started = time.monotonic()
                core = Scheduler(predicates=KubernetesPredicates())
                service = SchedulerService(client, core, ServiceSettings()).start()
                phases = Phases(service, started, cpu_before)
                if not service.wait_until("Running", 600):
                    raise SystemExit(f"scheduler did not reach Running: {service.latest_state()}")
                running = (time.monotonic() - started, _cpu_seconds() - cpu_before)
                # Every node told the outlet it is schedulable before it told the context it recovered:
                # once the outlet has sent what it holds and the core has processed it, the core schedules on all.
                service.outlet.ask(FlushToCore())
                seconds = time.monotonic() - started
                cpu = _cpu_seconds() - cpu_before
                sim_cpu = cpu_seconds(sim.pid) - sim_cpu_before
                phases.stop()
                if timeline is not None:
                    timeline.stop()
                state = service.latest_state()
                snapshot = core.snapshot()
                yunikorn = sum(len(n.allocations) for p in snapshot.partitions for n in p.nodes)
                foreign = sum(len(n.foreign_allocations) for p in snapshot.partitions for n in p.nodes)
                schedulable = sum(n.schedulable for p in snapshot.partitions for n in p.nodes)
                rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
                threads = thread_cpu()
                informers = {kind: threads.get(f"informer-{kind}", float("nan")) for kind in ("pods", "nodes")}
                core_threads = {name: threads.get(name, 0.0) for name in ("PartitionActor", "CoreScheduler")}
                shim_threads = {name: threads.get(name, 0.0) for name in ("ShimContext", "actors", "CoreOutlet")}
                service.stop()
                core.stop()
                client.close()
        finally:
            sim.terminate()
            sim.wait()
    recovery = state.recovery
    listed = phases.seen.get("Recovering", (float("nan"),) * 2)
    print(cpus_described(args.cpu_affinity))
    print(f"seconds from process start to scheduling on every node: {start_up[0] + seconds:.1f} "
          f"(CPU seconds of the scheduler process: {start_up[1] + cpu:.2f}; kubesim's meanwhile: {sim_cpu:.1f})")
    print(f"  start-up (interpreter, the command's imports, connecting, opening the history store; timed in a "
          f"fresh process): {start_up[0]:.2f} (CPU {start_up[1]:.2f})")
    print(f"  everything listed and registered: {listed[0]:.1f} (CPU {listed[1]:.2f})")
    print(f"    the informers' threads (reading, decoding and parsing the lists, then watching): pods CPU "
          f"{informers['pods']:.2f}, nodes CPU {informers['nodes']:.2f}")
    print(f"  Running, every node recovered: {running[0]:.1f} (CPU {running[1]:.2f})")
    print(f"  the core schedules on every node: {seconds:.1f} (CPU {cpu:.2f})")
    print(f"    the core's threads (partitions, core scheduler): CPU {sum(core_threads.values()):.2f} ("
          + ", ".join(f"{name} {seconds:.2f}" for name, seconds in core_threads.items()) + ")")
    print("    the shim's threads after listing: CPU " + ", ".join(
        f"{name} {seconds:.2f}" for name, seconds in shim_threads.items()) + f" (together {sum(shim_threads.values()):.2f})")
    print(f"recovered: {recovery.pods_recovered} pods, {recovery.nodes_recovered}/{recovery.nodes_total} nodes")
    print(f"core: {yunikorn} YuniKorn allocations, {foreign} foreign allocations, {schedulable} schedulable nodes")
    if timeline is not None:
        for state, (at, _) in sorted(phases.seen.items(), key=lambda x: x[1]):
            print(f"  state {state} at {at:.2f}")
        timeline.report(started)
    print(f"peak RSS of the scheduler process: {rss:.0f} MiB (before the scheduler started: {rss_before:.0f} MiB)")


if __name__ == "__main__":
    main()
