"""``yunikorn-scheduler simulate``: replay a trace against a queue configuration on a virtual clock.

    yunikorn-scheduler simulate --queues Q.yaml --cluster C.yaml --trace T.jsonl --report DIR
                                [--compare Q2.yaml] [--seed N] [--set KEY=VALUE ...]

writes ``DIR/report.json``, ``DIR/report.html`` and CSVs. A malformed input stops the run before it
starts, with exit status 2 and a message naming the file, line and field. Traces from elsewhere:

    yunikorn-scheduler simulate import-alibaba batch_task.csv --out T.jsonl [--queue root.batch]
    yunikorn-scheduler simulate export-history --history-dsn DSN --out T.jsonl [--since 7d]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from actors.core import config as cfg
from actors.core import settings as core_settings
from actors.core.config import ConfigError
from actors.core.settings import SettingsError
from simulate import report
from simulate.engine import Settings, Simulation
from simulate.inputs import InputError, read_cluster, read_trace

INPUT_ERROR = 2


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="yunikorn-scheduler simulate", description=__doc__.split("\n\n")[0])
    parser.add_argument("--queues", required=True, help="queues.yaml: the queue configuration to replay against")
    parser.add_argument("--cluster", required=True, help="cluster YAML: nodes: [{count, cpu, memory, labels, taints}]")
    parser.add_argument("--trace", required=True, help="trace, JSON lines (one application a line)")
    parser.add_argument("--report", required=True, help="directory for report.json, report.html and the CSVs")
    parser.add_argument("--compare", help="a second queues.yaml: both run on the same trace, side by side")
    parser.add_argument("--seed", type=int, default=0,
                        help="orders applications submitted at the same time (default 0: file order)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a yunikorn-configs key a simulation reads: service.schedulingInterval=1s")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser.parse_args(argv)


class Progress:
    """A progress bar on stderr in simulated and wall time (a line every few seconds when not a terminal)."""

    def __init__(self, label: str, stream=None) -> None:
        self.label, self.stream = label, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.began = time.perf_counter()
        self.shown = 0.0

    def __call__(self, simulated: float, horizon: float) -> None:
        now = time.perf_counter()
        if now - self.shown < (0.2 if self.tty else 5.0):
            return
        self.shown = now
        self.stream.write(self.line(simulated, horizon) + ("\r" if self.tty else "\n"))
        self.stream.flush()

    def line(self, simulated: float, horizon: float) -> str:
        wall = time.perf_counter() - self.began
        fraction = min(simulated / horizon, 1.0) if horizon else 1.0
        bar = "#" * int(fraction * 30)
        speed = f"{simulated / wall:,.0f}x" if wall > 0 else "-"
        return (f"{self.label} [{bar:<30}] {fraction:4.0%} simulated {_clock(simulated)} / {_clock(horizon)}"
                f"  wall {_clock(wall)}  {speed}")

    def done(self, simulated: float) -> None:
        self.stream.write(self.line(simulated, simulated) + "\n")
        self.stream.flush()


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


# The yunikorn-configs keys a simulated run reads; any other would be accepted and ignored, so is refused.
SIMULATED_KEYS = (core_settings.SCHEDULING_INTERVAL,)


def _extra(pairs: list[str]) -> dict[str, str]:
    extra = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError("--set", pair, "must be KEY=VALUE")
        key = key.strip()
        if key not in SIMULATED_KEYS:
            raise InputError("--set", pair, f"{key} has no effect on a simulation; it takes "
                                            f"{', '.join(SIMULATED_KEYS)}")
        extra[key] = value.strip()
    return extra


def load_config(path: str):
    """The default partition's configuration of a queues.yaml (InputError when it is invalid)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise InputError(path, "", f"cannot be read: {error.strerror}") from None
    try:
        config = cfg.parse(text)
    except ConfigError as error:
        raise InputError(path, "", str(error)) from None
    return next((p for p in config.partitions if p.name == "default"), config.partitions[0])


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["import-alibaba"]:
        return import_alibaba(argv[1:])
    if argv[:1] == ["export-history"]:
        return export_history(argv[1:])
    args = parse_args(argv)
    try:
        extra = _extra(args.set)
        try:
            settings = core_settings.parse(extra)
        except SettingsError as error:
            raise InputError("--set", "", str(error)) from None
        tick = settings.scheduling_interval if core_settings.SCHEDULING_INTERVAL in extra else 1.0
        configs = {_name(args.queues, args.compare, first=True): load_config(args.queues)}
        if args.compare:
            configs[_name(args.compare, args.queues, first=False)] = load_config(args.compare)
        cluster = read_cluster(args.cluster)
        trace = read_trace(args.trace)
    except InputError as error:
        print(f"yunikorn-scheduler simulate: {error}", file=sys.stderr)
        return INPUT_ERROR
    reports, outcomes = {}, {}
    for name, config in configs.items():
        progress = None if args.quiet else Progress(name)
        outcome = Simulation(config, cluster, trace, Settings(tick=tick, seed=args.seed), progress).run()
        if progress is not None:
            progress.done(outcome.simulated)
        outcomes[name], reports[name] = outcome, report.summarise(outcome)
    written = report.write(reports, outcomes, Path(args.report))
    for name, summary in reports.items():
        print(f"{name}: {summary['pods']} pods, makespan {summary['makespan']:.0f}s, cpu utilisation "
              f"{summary['utilisation']:.0%}, {len(summary['preemptions'])} preemptions, "
              f"{summary['simulated_seconds'] / max(summary['wall_seconds'], 1e-9):,.0f} simulated s per wall s")
    print(f"report: {written[-1]}")
    return 0


def _name(path: str, other: str | None, first: bool) -> str:
    stem = Path(path).stem
    if other is not None and Path(other).stem == stem:
        return f"{'A' if first else 'B'}: {Path(path).name}"
    return stem


def import_alibaba(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="yunikorn-scheduler simulate import-alibaba",
                                     description="a trace from Alibaba cluster-trace-v2018's batch_task.csv")
    parser.add_argument("tasks", help="batch_task.csv")
    parser.add_argument("--out", required=True, help="the trace to write (JSON lines)")
    parser.add_argument("--queue", default="root.batch", help="queue of every application (default root.batch)")
    parser.add_argument("--user", default="alibaba", help="user of every application (default alibaba)")
    parser.add_argument("--machine-memory", default="96Gi",
                        help="a machine's memory: plan_mem is a share of it (default 96Gi)")
    args = parser.parse_args(argv)
    from simulate.alibaba import read_tasks
    from simulate.inputs import write_trace
    try:
        lines = read_tasks(args.tasks, args.queue, args.user, args.machine_memory)
    except InputError as error:
        print(f"yunikorn-scheduler simulate: {error}", file=sys.stderr)
        return INPUT_ERROR
    print(f"{write_trace(lines, args.out)} applications written to {args.out}")
    return 0


def export_history(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="yunikorn-scheduler simulate export-history",
                                     description="a trace from the history store's finished applications")
    parser.add_argument("--history-dsn", required=True, help="the history store (a SQLite file or a PostgreSQL DSN)")
    parser.add_argument("--out", required=True, help="the trace to write (JSON lines)")
    parser.add_argument("--partition", default="default")
    parser.add_argument("--queue", help="only this queue's applications")
    parser.add_argument("--since", help="only applications finished this long ago or later (e.g. 168h)")
    args = parser.parse_args(argv)
    from si.goduration import parse_duration
    from simulate.export import NS, from_store
    from simulate.inputs import write_trace
    since = None
    if args.since:
        try:
            since = time.time_ns() - int(parse_duration(args.since) * NS)
        except ValueError:
            print(f"yunikorn-scheduler simulate: --since: {args.since!r} is not a duration such as 168h", file=sys.stderr)
            return INPUT_ERROR
    try:
        lines = from_store(args.history_dsn, args.partition, since=since, queue=args.queue)
    except ImportError:
        print("yunikorn-scheduler simulate: this installation has no history store", file=sys.stderr)
        return INPUT_ERROR
    print(f"{write_trace(lines, args.out)} applications written to {args.out}")
    return 0
