"""The history store's usage report over many stored applications: how long ``/ws/v1/history/usage``'s
query takes on SQLite and on PostgreSQL (a throwaway server from Debian's binaries, as the tests start).

Fills each store with ``--apps`` finished applications (100 queues, 1,000 users, a month of finish
times), then times the report per queue and per user over everything and over one week, and a page of
``/applications/completed`` filtered by queue, each the best of ``--repeat`` runs. The goal: under 1 s
for 1,000,000 applications.

    python benchmarks/history_usage.py                       # 1,000,000 applications, both databases
    python benchmarks/history_usage.py --apps 100000 --backends sqlite
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from actors.history.store import ApplicationQuery, HistoryStore  # noqa: E402
from tests.history.postgres import PostgresServer, binaries  # noqa: E402
from tests.history.records import T0, S, finished  # noqa: E402

MONTH = 30 * 86400


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


def best(repeat: int, call) -> float:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        call()
        times.append(time.perf_counter() - began)
    return min(times)


def measure(name: str, dsn: str, args: argparse.Namespace) -> None:
    store = HistoryStore(dsn).migrate()
    seconds = fill(store, args.apps)
    store.maintain()  # the writer does so after its hourly prune (on PostgreSQL autovacuum does too)
    print(f"{name}: {store.count():,} applications stored in {seconds:.0f} s", flush=True)
    week = (T0 + 7 * 86400 * S, T0 + 14 * 86400 * S)
    for label, call in (
            ("usage per queue, everything", lambda: store.usage("queue", None, None)),
            ("usage per user, everything", lambda: store.usage("user", None, None)),
            ("usage per queue, one week", lambda: store.usage("queue", *week)),
            ("usage per user, one week", lambda: store.usage("user", *week)),
            ("completed page, queue filter", lambda: store.applications(
                ApplicationQuery("default", ("Completed", "Failed"), queue="root.q7", limit=100, offset=1000)))):
        print(f"{name}: {label:<32} {best(args.repeat, call) * 1000:8.0f} ms", flush=True)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--apps", type=int, default=1_000_000)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for backend in args.backends.split(","):
        if backend == "sqlite":
            with tempfile.TemporaryDirectory() as scratch:
                measure("sqlite", f"sqlite:///{scratch}/history.db", args)
        elif backend == "postgresql":
            bin_dir = binaries()
            if bin_dir is None:
                print("postgresql: not installed (apt-get install postgresql)")
                continue
            server = PostgresServer(bin_dir)
            try:
                measure("postgresql", server.new_database(), args)
            finally:
                server.close()
        else:
            raise SystemExit(f"unknown backend {backend!r}")


if __name__ == "__main__":
    main()
