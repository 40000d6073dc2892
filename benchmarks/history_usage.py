"""The history store's usage report over many stored applications: how long ``/ws/v1/history/usage``'s
query takes on SQLite and on PostgreSQL (a throwaway server from Debian's binaries, as the tests start).

Fills each store with ``--apps`` finished applications (100 queues, 1,000 users, a month of finish
times), then times the report per queue and per user over everything and over one week, and a page of
``/applications/completed`` filtered by queue, each the best of ``--repeat`` runs: CPU seconds (this
process's, plus the PostgreSQL server's) and wall seconds. The goal: under 1 s for 1,000,000 applications.

With ``--before TREE`` (another checkout, e.g. main in a scratch worktree) each query runs in two worker
processes on the same store, one importing the store from TREE and one from this checkout, their runs
alternating so both see the same load; the figures are printed side by side with their ratio. The store
is filled by this checkout, whose schema keeps the older one's tables as they were.

    python benchmarks/history_usage.py                       # 1,000,000 applications, both databases
    python benchmarks/history_usage.py --apps 100000 --backends sqlite --before ../main
    python benchmarks/history_usage.py --keep usage.db          # fill a SQLite file once, then
    python benchmarks/history_usage.py --dsn sqlite:///usage.db --before ../main
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if "--worker" not in sys.argv:  # a worker imports the store of the checkout on its PYTHONPATH
    sys.path.insert(0, str(REPO))

from actors.history.store import ApplicationQuery, HistoryStore  # noqa: E402
from tests.history.records import T0, S, finished  # noqa: E402

MONTH = 30 * 86400
WEEK = (T0 + 7 * 86400 * S, T0 + 14 * 86400 * S)
QUERIES = {
    "usage per queue, everything": lambda store: store.usage("queue", None, None),
    "usage per user, everything": lambda store: store.usage("user", None, None),
    "usage per queue, one week": lambda store: store.usage("queue", *WEEK),
    "usage per user, one week": lambda store: store.usage("user", *WEEK),
    "completed page, queue filter": lambda store: store.applications(
        ApplicationQuery("default", ("Completed", "Failed"), queue="root.q7", limit=100, offset=1000)),
}


def fill(store: HistoryStore, count: int, batch: int = 20_000) -> float:
    rng = random.Random(7)
    began = time.perf_counter()
    for start in range(0, count, batch):
        store.write([finished(f"app-{i}", queue=f"root.q{rng.randrange(100)}", user=f"user{rng.randrange(1000)}",
                              state="Failed" if i % 20 == 0 else "Completed",
                              submitted=T0 + rng.randrange(MONTH) * S, wait=rng.expovariate(1 / 5),
                              runtime=rng.uniform(10, 3600), pods=rng.randrange(1, 10))
                     for i in range(start, min(start + batch, count))])
    return time.perf_counter() - began


def server_cpu(postmaster: int | None) -> dict[int, float]:
    """CPU seconds of each of the PostgreSQL server's processes (the postmaster's children: the backends
    and their parallel workers), none without a server."""
    if postmaster is None:
        return {}
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == postmaster:  # ppid; utime and stime follow at 11 and 12
            found[int(entry.name)] = (int(fields[11]) + int(fields[12])) / ticks
    return found


def server_spent(before: dict[int, float], postmaster: int | None) -> float:
    """The server's CPU seconds since ``before`` (a process that ended meanwhile is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in server_cpu(postmaster).items())


def timed(call, postmaster: int | None) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``call()``."""
    cpu, server, wall = time.process_time(), server_cpu(postmaster), time.perf_counter()
    call()
    return time.process_time() - cpu + server_spent(server, postmaster), time.perf_counter() - wall


def worker(dsn: str) -> None:
    """Answer query names on stdin with their (CPU, wall) and a digest of the answer, one JSON line each.
    The server's CPU is measured by the parent."""
    store = HistoryStore(dsn)
    for line in sys.stdin:
        began_cpu, began = time.process_time(), time.perf_counter()
        answer = QUERIES[line.strip()](store)
        cpu, wall = time.process_time() - began_cpu, time.perf_counter() - began
        digest = sorted((getattr(row, "key", None) or row.application_id, getattr(row, "applications", 0))
                        for row in answer)
        print(json.dumps({"cpu": cpu, "wall": wall, "digest": digest}), flush=True)


class Worker:
    def __init__(self, tree: Path, dsn: str) -> None:
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", dsn],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree)

    def run(self, query: str, postmaster: int | None) -> dict:
        server = server_cpu(postmaster)
        self.process.stdin.write(query + "\n")
        self.process.stdin.flush()
        result = json.loads(self.process.stdout.readline())
        result["cpu"] += server_spent(server, postmaster)
        return result

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def measure(name: str, dsn: str, args: argparse.Namespace, postmaster: int | None) -> None:
    store = HistoryStore(dsn).migrate()
    if args.dsn is None:
        seconds = fill(store, args.apps)
        store.maintain()  # the writer does so after its hourly prune (on PostgreSQL autovacuum does too)
        print(f"{name}: {store.count():,} applications stored in {seconds:.0f} s", flush=True)
    else:
        print(f"{name}: {store.count():,} applications in {args.dsn}", flush=True)
    if args.before is None:
        for label, query in QUERIES.items():
            runs = [timed(lambda q=query: q(store), postmaster) for _ in range(args.repeat)]
            print(f"{name}: {label:<30} CPU {min(c for c, _ in runs) * 1000:6.0f} ms   "
                  f"wall {min(w for _, w in runs) * 1000:6.0f} ms", flush=True)
        store.close()
        return
    store.close()
    before, after = Worker(args.before, dsn), Worker(REPO, dsn)
    try:
        print(f"{name}: {'':<30} {'before CPU':>10} {'after CPU':>10} {'ratio':>6} {'before wall':>12} "
              f"{'after wall':>11}", flush=True)
        for label in QUERIES:
            runs: dict[str, list[dict]] = {"before": [], "after": []}
            for _ in range(args.repeat):  # alternating, so both see the same load
                runs["before"].append(before.run(label, postmaster))
                runs["after"].append(after.run(label, postmaster))
            old, new = ({key: min(r[key] for r in runs[side]) for key in ("cpu", "wall")} for side in runs)
            same = runs["before"][0]["digest"] == runs["after"][0]["digest"]
            print(f"{name}: {label:<30} {old['cpu'] * 1000:8.0f} ms {new['cpu'] * 1000:7.0f} ms "
                  f"{old['cpu'] / new['cpu']:6.1f} {old['wall'] * 1000:9.0f} ms {new['wall'] * 1000:8.0f} ms"
                  f"{'' if same else '   ANSWERS DIFFER'}", flush=True)
    finally:
        before.close()
        after.close()


def postmaster_pid(data: Path) -> int:
    return int((data / "postmaster.pid").read_text().split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=1_000_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a checkout to compare with, run alternately")
    parser.add_argument("--dsn", help="a SQLite store filled by an earlier run (kept with --keep), not filled again")
    parser.add_argument("--keep", type=Path, help="fill the SQLite store in this file, and keep it")
    parser.add_argument("--worker", metavar="DSN", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return
    if args.dsn is not None:
        measure("sqlite", args.dsn, args, None)
        return
    if args.keep is not None:
        measure("sqlite", f"sqlite:///{args.keep.resolve()}", args, None)
        return
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as scratch:
                measure("sqlite", f"sqlite:///{scratch}/history.db", args, None)
        elif backend == "postgresql":
            from tests.history.postgres import PostgresServer, binaries

            bin_dir = binaries()
            if bin_dir is None:
                print("postgresql: not installed (apt-get install postgresql)")
                continue
            server = PostgresServer(bin_dir)
            try:
                measure("postgresql", server.new_database(), args, postmaster_pid(server.data))
            finally:
                server.close()
        else:
            raise SystemExit(f"unknown backend {backend!r}")


if __name__ == "__main__":
    main()
