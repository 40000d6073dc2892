"""Running the simulator on small inputs written inline."""

import json

from actors.core import config as cfg
from simulate.engine import Settings, Simulation
from simulate.inputs import parse_cluster, parse_trace_line


def run(config: str, nodes: list[dict], lines: list[dict], **settings):
    partition = cfg.parse(config).partitions[0]
    cluster = parse_cluster({"nodes": nodes}, "cluster")
    trace = [parse_trace_line(json.dumps(line), f"trace:{i}", i) for i, line in enumerate(lines, 1)]
    return Simulation(partition, cluster, trace, Settings(**settings)).run()


def pods(outcome) -> dict:
    return {p.key: p for p in outcome.pods}
