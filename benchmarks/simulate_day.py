"""The simulator's speed: a 24-hour trace of 100,000 pods on 1,000 nodes (16 cores, 64Gi each).

The synthetic day (``simulate.synthetic``) submits twice as much at its peak as at night; ``--load`` is
the cluster's mean demand (0.55: about 75% at the peak, a cluster sized for its day; near 1 the queues
grow all afternoon, and every scheduling cycle then tries each waiting application's preemption over
every node, which is the core's cost, not the simulator's).

Prints simulated seconds per wall second (target: >= 290, i.e. the day in <= 5 minutes), the same per
CPU second of the process (the figure that holds on a shared machine) and the peak RSS.
``--pods``/``--nodes``/``--hours`` scale it down for a quick look; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from actors.core import config as cfg
from simulate import report
from simulate.cli import Progress
from simulate.engine import Settings, Simulation
from simulate.inputs import parse_cluster, read_trace, write_trace
from simulate.synthetic import workload

QUEUES = """
partitions:
  - name: default
    placementrules:
      - {name: provided, create: true}
    queues:
      - name: root
        submitacl: '*'
        queues:
          - {name: prod, resources: {guaranteed: {vcore: 8000, memory: 32000Gi}}, properties: {application.sort.policy: fair}}
          - {name: batch, resources: {guaranteed: {vcore: 4000, memory: 16000Gi}, max: {vcore: 12000, memory: 48000Gi}}}
          - {name: dev, resources: {max: {vcore: 6000, memory: 24000Gi}}}
          - {name: ml, resources: {guaranteed: {vcore: 2000, memory: 8000Gi}}}
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--hours", type=float, default=24.0)
    parser.add_argument("--load", type=float, default=0.55, help="mean demand over capacity (default 0.55)")
    args = parser.parse_args()
    config = cfg.parse(QUEUES).partitions[0]
    cluster = parse_cluster({"nodes": [{"count": args.nodes, "cpu": "16", "memory": "64Gi"}]}, "cluster")
    # The mean duration that makes the cluster's mean demand --load of its capacity.
    mean = args.load * args.nodes * 16 * args.hours * 3600 / (args.pods * 2.3)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "trace.jsonl"
        write_trace(workload(args.pods, args.hours, ["root.prod", "root.batch", "root.dev", "root.ml"],
                             mean_duration=mean), path)
        trace = read_trace(path)
        began, cpu = time.perf_counter(), time.process_time()
        outcome = Simulation(config, cluster, trace, Settings(), Progress("day")).run()
        cpu = time.process_time() - cpu
        summary = report.summarise(outcome)
        report.write({"day": summary}, {"day": outcome}, Path(scratch) / "report")
        total = time.perf_counter() - began
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pods {summary['pods']}, applications {summary['applications']}, nodes {args.nodes}, load {args.load}, "
          f"simulated {outcome.simulated:,.0f}s (makespan {outcome.makespan:,.0f}s)")
    print(f"simulation {outcome.wall:.1f}s wall: {outcome.simulated / outcome.wall:,.0f} simulated s per wall s; "
          f"with the report {total:.1f}s; events {outcome.events:,}; peak RSS {rss:,.0f} MiB")
    print(f"simulation CPU {cpu:.1f}s: {outcome.simulated / cpu:,.0f} simulated s per CPU s")
    print(f"cpu utilisation {summary['utilisation']:.0%}, preemptions {len(summary['preemptions'])}, "
          f"gang timeouts {summary['gang_timeouts']}, unschedulable {len(summary['unschedulable'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
