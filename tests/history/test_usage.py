"""The usage report from its rollups gives what the report summed over every stored application gave
(the query it replaced, kept here as the reference): over any range, aligned on the rollups' periods
or not, after a batch written again, after pruning, and on a store migrated from the revision before
the rollups."""

from __future__ import annotations

import math
import random

import pytest
from sqlalchemy import func, select

from actors.history import schema
from actors.history.store import (
    NS,
    PERCENTILES,
    ROLLUP_PERIODS,
    HistoryStore,
    Retention,
    UsageRow,
    _application_row,
    bucket_seconds,
    wait_bucket,
)
from tests.history.records import T0, S, finished

HOUR, DAY, WEEK = 3600 * S, 86400 * S, 7 * 86400 * S
STATES = ("Completed", "Completed", "Completed", "Failed", "Expired", "Rejected")


def reference(store: HistoryStore, group_by: str, since: int | None, until: int | None) -> list[UsageRow]:
    """The report as it was computed before the rollups: every application in the range grouped by name,
    state and wait bucket, then summed and ranked here."""
    table = schema.applications
    name = {"queue": table.c.queue, "user": table.c.user_name}[group_by]
    statement = select(name, table.c.state, table.c.wait_bucket, func.count(), func.sum(table.c.vcore_seconds),
                       func.sum(table.c.memory_seconds)).group_by(name, table.c.state, table.c.wait_bucket)
    if since is not None:
        statement = statement.where(table.c.finished_at >= since)
    if until is not None:
        statement = statement.where(table.c.finished_at < until)
    rows: dict[str, UsageRow] = {}
    waits: dict[str, dict[int, int]] = {}
    with store.engine.connect() as connection:
        found = list(connection.execute(statement))
    for key, state, bucket, count, vcore, memory in found:
        row = rows.setdefault(key, UsageRow(key))
        row.applications += count
        row.by_state[state] = row.by_state.get(state, 0) + count
        row.vcore_seconds += vcore or 0.0
        row.memory_seconds += memory or 0.0
        if bucket is not None:
            waits.setdefault(key, {})[bucket] = waits.get(key, {}).get(bucket, 0) + count
    for key, histogram in waits.items():
        total = sum(histogram.values())
        for percent in PERCENTILES:
            rank, seen = max(math.ceil(percent / 100 * total), 1), 0
            for bucket in sorted(histogram):
                seen += histogram[bucket]
                if seen >= rank:
                    rows[key].wait_buckets[percent] = bucket
                    break
    return [rows[key] for key in sorted(rows)]


def assert_same(got: list[UsageRow], expected: list[UsageRow]) -> None:
    assert [(r.key, r.applications, r.by_state, r.wait_buckets) for r in got] == \
        [(r.key, r.applications, r.by_state, r.wait_buckets) for r in expected]
    for mine, theirs in zip(got, expected, strict=True):  # sums in another order: the last bits may differ
        assert mine.vcore_seconds == pytest.approx(theirs.vcore_seconds, rel=1e-9, abs=1e-6)
        assert mine.memory_seconds == pytest.approx(theirs.memory_seconds, rel=1e-9, abs=1e-6)


def applications(count: int, seed: int = 3, spread: int = 9 * WEEK) -> list:
    rng = random.Random(seed)
    return [finished(f"app-{seed}-{i}", queue=f"root.q{rng.randrange(5)}", user=f"user{rng.randrange(7)}",
                     state=(state := rng.choice(STATES)), submitted=T0 + rng.randrange(spread),
                     wait=None if state == "Rejected" or rng.random() < 0.05 else rng.expovariate(1 / 20),
                     runtime=rng.uniform(0, 7200), vcore=rng.choice((100, 250, 1000)),
                     memory=rng.choice((2**27, 2**30)), pods=rng.randrange(1, 4)) for i in range(count)]


def ranges(rng: random.Random) -> list[tuple[int | None, int | None]]:
    """Unbounded, aligned on each period length, just off them, inside one hour, empty, and at random."""
    aligned = [(T0 // (p * S) + 1) * p * S for p in ROLLUP_PERIODS]
    chosen: list[tuple[int | None, int | None]] = [(None, None), (T0 + 3 * WEEK, None), (None, T0 + 5 * DAY + 7),
                                                   (T0 + HOUR // 3, T0 + HOUR // 2), (T0 + DAY, T0 + DAY)]
    for start in aligned:
        chosen += [(start, start + 5 * WEEK), (start - 1, start + 29 * DAY + 1), (start + 1, None)]
    chosen += [tuple(sorted((T0 + rng.randrange(10 * WEEK), T0 + rng.randrange(10 * WEEK)))) for _ in range(12)]
    return chosen


def assert_report_matches(store: HistoryStore, rng: random.Random) -> None:
    for since, until in ranges(rng):
        for group_by in ("queue", "user"):
            assert_same(store.usage(group_by, since, until), reference(store, group_by, since, until))


def test_the_report_equals_the_sum_over_every_application(dsn):
    store = HistoryStore(dsn).migrate()
    apps = applications(3000)
    for start in range(0, len(apps), 700):  # batches sharing periods, as the writer's do
        store.write(apps[start:start + 700])
    store.write(apps[100:900])  # written again after a failover: nothing counts twice
    rng = random.Random(5)
    assert sum(r.applications for r in store.usage("queue", None, None)) == 3000
    assert_report_matches(store, rng)
    # Pruning takes the applications out of the rollups too; empty periods go.
    now = T0 + 6 * WEEK + 5 * HOUR + 17 * S
    deleted = store.prune(Retention(applications=4 * 7 * 86400.0), now)
    assert deleted == sum(1 for app in apps if app.finished_time < now - 4 * WEEK)
    assert_report_matches(store, rng)
    with store.engine.connect() as connection:
        for table in (schema.usage_totals, schema.usage_waits):
            assert connection.execute(select(func.count()).select_from(table).where(
                table.c.applications <= 0)).scalar() == 0
    store.close()


def test_the_wait_percentiles_are_within_five_percent_of_the_true_ones(dsn):
    """The documented bound: the middle of a 10% bucket (plus a millisecond, for waits under a second)."""
    store = HistoryStore(dsn).migrate()
    rng = random.Random(11)
    waits = [rng.lognormvariate(2, 1.5) for _ in range(997)]
    store.write([finished(f"w-{i}", submitted=T0 + i * S, wait=wait) for i, wait in enumerate(waits)])
    [row] = store.usage("queue", None, None)
    ordered = sorted(waits)
    for percent in PERCENTILES:
        true = ordered[math.ceil(percent / 100 * len(ordered)) - 1]
        assert abs(row.wait_percentile(percent) - true) <= 0.05 * true + 0.001, percent
    assert bucket_seconds(wait_bucket(int(true * NS))) == pytest.approx(true, rel=0.05)
    store.close()


def test_a_store_made_before_the_rollups_is_upgraded_in_place(dsn):
    old = HistoryStore(dsn).migrate("0001")
    apps = applications(1200, seed=9)
    with old.engine.begin() as connection:  # as the writer of that revision stored them
        connection.execute(schema.applications.insert(), [_application_row(app) for app in apps])
    old.close()
    store = HistoryStore(dsn).migrate()
    assert store.count() == 1200
    rng = random.Random(2)
    assert_report_matches(store, rng)
    store.write(applications(400, seed=10))  # and the writer keeps them from there
    assert_report_matches(store, rng)
    store.close()
