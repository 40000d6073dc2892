"""Reading pods alone: microseconds the shim takes to make a pod's record, listed (from the API server's JSON
text, ``read_pod``) and watched (from a watch event's dict, ``parse_pod``), by kind of pod.

Each round reads ``--pods`` running pods of 40 workloads one by one with every cache of ``actors.shim.pods``
empty and the collector off, and prints the fastest and slowest round. The kinds:

- ``bare``: what ``recovery.py`` makes by default, a pod with only what a pod must carry;
- ``real``: as ``recovery.py --real-pods`` makes them (the token volume with a name of its own, the default
  tolerations, the API server's defaults, a kubelet's status reporting what each container allocated);
- ``cni``: ``real`` with the annotations Calico writes on every running pod (its container id and pod IP);
- ``stateful``: ``real`` with a StatefulSet's labels of each pod's own (its name and index).

    python benchmarks/pod_read.py
    python benchmarks/pod_read.py --pods 50000 --rounds 5
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import orjson  # noqa: E402
from recovery import as_stored, running_pod, running_status  # noqa: E402

from actors.shim import pods  # noqa: E402


def made(index: int, kind: str) -> dict:
    """Running pod ``index`` of ``kind``, as the API server lists it."""
    pod = running_pod(index, 500, 0)
    metadata = pod["metadata"]
    metadata.update(uid=f"uid-{index:08d}", resourceVersion=str(index + 1),
                    creationTimestamp=f"2026-01-01T00:{index // 60 % 60:02d}:{index % 60:02d}Z")
    if kind == "bare":
        pod["status"] = {"phase": "Running"}
        return pod
    as_stored(pod, index)
    pod["status"] = running_status(pod)
    address = f"10.1.{index // 250 % 250}.{index % 250}/32"
    if kind == "cni":
        metadata["annotations"] = {"cni.projectcalico.org/containerID": f"{index:064x}",
                                   "cni.projectcalico.org/podIP": address, "cni.projectcalico.org/podIPs": address}
    elif kind == "stateful":
        metadata["labels"].update({"statefulset.kubernetes.io/pod-name": f"db-{index}",
                                   "apps.kubernetes.io/pod-index": str(index)})
    return pod


def microseconds(items: list, read: Callable) -> float:
    """Microseconds a pod to read ``items``, every cache of the pods' module empty."""
    pods._facts.clear()
    pods._times.clear()
    pods._bound_tags.clear()
    began = time.perf_counter()
    for item in items:
        read(item)
    return (time.perf_counter() - began) / len(items) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", default="bare,real,cni,stateful")
    args = parser.parse_args()
    gc.disable()
    print(f"us a pod, {args.pods} pods a round, fastest to slowest of {args.rounds} rounds")
    print(f"  {'kind':10} {'listed':>16} {'watched':>16}")
    for kind in args.kinds.split(","):
        watched = [made(index, kind) for index in range(args.pods)]
        listed = [orjson.dumps(pod) for pod in watched]
        figures = []
        for items, read in ((listed, pods.read_pod), (watched, pods.parse_pod)):
            rounds = [microseconds(items, read) for _ in range(args.rounds)]
            figures.append(f"{min(rounds):6.1f} to {max(rounds):5.1f}")
        print(f"  {kind:10} {figures[0]:>16} {figures[1]:>16}", flush=True)


if __name__ == "__main__":
    main()
