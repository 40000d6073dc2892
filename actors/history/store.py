"""The history store: SQL through SQLAlchemy Core, a SQLite file or PostgreSQL (psycopg), the schema
kept by Alembic's migrations (Alembic is imported only when the schema is behind: importing it costs a
start 0.14 s of CPU).

Writes come from one writer (:mod:`actors.history.writer`), each batch in one transaction; reads come
from the REST threads. A run of an application (partition, id, submission time) is stored once: a
batch written again after a failover changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import logging
import math
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson
from sqlalchemy import (
    BigInteger,
    Engine,
    and_,
    any_,
    bindparam,
    case,
    cast,
    create_engine,
    delete,
    event,
    func,
    inspect,
    literal,
    select,
    text,
    union_all,
)
from sqlalchemy.engine import make_url

from actors.history import schema
from si import si_pb2
from si.history import (
    AllocationBrief,
    ClusterSample,
    FinishedApplication,
    HistoryRecord,
    PlaceholderBrief,
    QueueSample,
)

log = logging.getLogger(__name__)
MIGRATIONS = pathlib.Path(__file__).with_name("migrations")
HEAD_REVISION = "0002"  # the newest migration under migrations/versions (a test holds it to Alembic's head)
MIGRATION_LOCK = 0x79756E69  # PostgreSQL advisory lock: replicas starting together migrate one at a time
WAIT_STEP = math.log(1.1)  # wait-time buckets 10% wide: percentiles from a histogram, on any database
PERCENTILES = (50, 90, 99)  # the wait percentiles the usage report gives
NS = 1_000_000_000
# The usage rollups' period lengths (seconds; each divides the next), finest first. A report sums whole
# periods, coarsest first, and reads what is left at its two edges (under an hour each) from the
# applications. Changing them takes a migration that rebuilds the rollups.
ROLLUP_PERIODS = (3600, 86400, 7 * 86400, 28 * 86400)


class HistoryUnavailable(Exception):
    """The database could not be read."""


def engine_url(dsn: str) -> str:
    """A SQLAlchemy URL for ``dsn``: ``postgresql://`` and ``postgres://`` go through psycopg 3."""
    url = make_url(dsn)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    elif not url.drivername.startswith(("sqlite", "postgresql")):
        raise ValueError(f"history store: unsupported database {url.drivername!r} (sqlite:/// or postgresql://)")
    return url.render_as_string(hide_password=False)


def describe(dsn: str) -> str:
    """``dsn`` without its password, for logs."""
    return make_url(dsn).render_as_string(hide_password=True)


def wait_bucket(wait_ns: int) -> int:
    return int(math.log1p(max(wait_ns, 0) / 1e6) / WAIT_STEP)


def bucket_seconds(bucket: int) -> float:
    """The middle of a wait-time bucket, in seconds."""
    return math.expm1((bucket + 0.5) * WAIT_STEP) / 1e3


@dataclass(frozen=True)
class ApplicationQuery:
    """Which finished applications a list shows, newest first."""

    partition: str
    states: tuple[str, ...]
    queue: str | None = None
    user: str | None = None
    since: int | None = None  # finished at or after (ns)
    until: int | None = None  # finished before (ns)
    limit: int = 1000
    offset: int = 0


@dataclass
class UsageRow:
    key: str  # the queue or the user
    applications: int = 0
    by_state: dict[str, int] = field(default_factory=dict)
    vcore_seconds: float = 0.0  # millicore-seconds
    memory_seconds: float = 0.0  # byte-seconds
    wait_buckets: dict[int, int] = field(default_factory=dict)  # percentile (of PERCENTILES) -> wait bucket

    @property
    def core_hours(self) -> float:
        return self.vcore_seconds / 1000 / 3600

    @property
    def memory_gib_hours(self) -> float:
        return self.memory_seconds / 2**30 / 3600

    def wait_percentile(self, percent: int) -> float | None:
        """Seconds from submission to the first allocation that ``percent`` % of the applications waited at
        most (within 5%: the middle of a 10% bucket), None when none was allocated."""
        bucket = self.wait_buckets.get(percent)
        return None if bucket is None else round(bucket_seconds(bucket), 3)


@dataclass(frozen=True)
class Retention:
    """How long each kind of history is kept, in seconds."""

    applications: float = 30 * 86400.0
    samples: float = 30 * 86400.0
    events: float = 7 * 86400.0


class HistoryStore:
    def __init__(self, dsn: str, pool_size: int = 4) -> None:
        url = engine_url(dsn)
        self.dsn = dsn
        if url.startswith("sqlite"):
            self.engine = _sqlite_engine(url)
        else:
            self.engine = create_engine(url, pool_size=pool_size, max_overflow=pool_size, pool_pre_ping=True,
                                        pool_recycle=1800)
        self.dialect = self.engine.dialect.name
        # The engine loaded its own dialect's package only: loading PostgreSQL's costs a SQLite start 35 ms.
        self._insert = importlib.import_module(f"sqlalchemy.dialects.{self.dialect}").insert
        apps = schema.applications
        # Built once: the writer runs them for every batch, and compiling them again costs more than running.
        self._add_stored = self._roll_ups(self._among(apps.c.id, "ids"), 1)
        self._take_pruned = self._roll_ups(apps.c.finished_at < bindparam("cutoff"), -1)
        self._runs_of = select(apps.c.partition, apps.c.application_id, apps.c.submitted_at, apps.c.finished_at) \
            .where(self._among(apps.c.application_id, "application_ids"))

    def migrate(self, revision: str = "head") -> HistoryStore:
        """Bring the schema to ``revision``, by default the latest. Processes starting together migrate one at a time: on
        PostgreSQL under an advisory lock, on SQLite under a lock file beside the database."""
        if revision == "head" and self._revisions() == {HEAD_REVISION}:
            return self
        from alembic import command
        from alembic.config import Config

        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        with contextlib.ExitStack() as held:
            path = self.engine.url.database if self.dialect == "sqlite" else None
            if path and path != ":memory:":
                lock = held.enter_context(open(f"{path}.lock", "w"))  # noqa: SIM115 - closed by the stack
                fcntl.flock(lock, fcntl.LOCK_EX)
            with self.engine.begin() as connection:
                if self.dialect == "postgresql":
                    connection.execute(select(func.pg_advisory_xact_lock(MIGRATION_LOCK)))
                config.attributes["connection"] = connection
                command.upgrade(config, revision)
        return self

    def _revisions(self) -> set[str]:
        """The revisions the database is at (none before its first migration)."""
        with self.engine.connect() as connection:
            if not inspect(connection).has_table("alembic_version"):
                return set()
            return set(connection.scalars(text("SELECT version_num FROM alembic_version")))

    def close(self) -> None:
        self.engine.dispose()

    # Writes.
    def write(self, records: Sequence[HistoryRecord], events: Sequence[si_pb2.EventRecord] = ()) -> None:
        """Write ``records`` and ``events`` in one transaction (all or none)."""
        apps = [_application_row(r) for r in records if isinstance(r, FinishedApplication)]
        clusters = [{"at": r.timestamp, "applications": r.total_applications, "containers": r.total_containers}
                    for r in records if isinstance(r, ClusterSample)]
        queues = [{"at": r.timestamp, "partition": r.partition, "queue": r.queue,
                   "allocated": _json(r.allocated), "running_applications": r.running_applications}
                  for r in records if isinstance(r, QueueSample)]
        rows = [_event_row(e) for e in events]
        insert = self._insert
        with self.engine.begin() as connection:
            apps = self._unseen(connection, apps)
            if apps:
                table = schema.applications
                # Only what was not stored before counts (a batch may be written again after a failover).
                stored = connection.execute(insert(table).on_conflict_do_nothing(
                    index_elements=["partition", "application_id", "submitted_at"]).returning(table.c.id), apps)
                ids = [row.id for row in stored]
                if ids:
                    for statement in self._add_stored:
                        connection.execute(statement, {"ids": ids})
            if clusters:
                connection.execute(insert(schema.cluster_samples).on_conflict_do_nothing(index_elements=["at"]),
                                   clusters)
            if queues:
                connection.execute(schema.queue_samples.insert(), queues)
            if rows:
                connection.execute(schema.events.insert(), rows)

    def _among(self, column, name: str):
        """``column IN`` the list given as parameter ``name``; PostgreSQL takes it as one array rather than a
        parameter each."""
        if self.dialect == "postgresql":
            from sqlalchemy.dialects.postgresql import ARRAY

            return column == any_(bindparam(name, type_=ARRAY(column.type)))
        return column.in_(bindparam(name, expanding=True))

    def _unseen(self, connection, apps: list[dict]) -> list[dict]:
        """``apps`` but the runs already stored under another submission time: a standby that recovered an
        application, and finished it once it led, saw the run the old leader stored. Two runs of one id
        never overlap in time (a new run starts once the last one completed), so an overlap is the same run."""
        if not apps:
            return apps
        stored: dict[tuple[str, str], list[tuple[int, int]]] = {}
        for partition, app_id, submitted, finished in connection.execute(
                self._runs_of, {"application_ids": sorted({app["application_id"] for app in apps})}):
            stored.setdefault((partition, app_id), []).append((submitted, finished))
        return [app for app in apps if not any(
            submitted != app["submitted_at"] and submitted <= app["finished_at"] and app["submitted_at"] <= finished
            for submitted, finished in stored.get((app["partition"], app["application_id"]), ()))]

    def _roll_ups(self, which, sign: int) -> list:
        """The statements that add (``sign`` 1) or take away (-1) the applications ``which`` selects in the
        usage rollups: one upsert per rollup, of the applications grouped per period length and grouping."""
        apps = schema.applications
        insert = self._insert
        totals, waits = [], []
        for seconds in ROLLUP_PERIODS:
            start = apps.c.finished_at // (seconds * NS) * (seconds * NS)
            for grouping, name in (("queue", apps.c.queue), ("user", apps.c.user_name)):
                fixed = (literal(grouping), literal(seconds), start, name)
                totals.append(select(*fixed, apps.c.state, sign * func.count(), sign * func.sum(apps.c.vcore_seconds),
                                     sign * func.sum(apps.c.memory_seconds))
                              .where(which).group_by(start, name, apps.c.state))
                waits.append(select(*fixed, apps.c.wait_bucket, sign * func.count())
                             .where(which, apps.c.wait_bucket.is_not(None)).group_by(start, name, apps.c.wait_bucket))
        statements = []
        for table, rolled in ((schema.usage_totals, totals), (schema.usage_waits, waits)):
            key = [column.name for column in table.primary_key]
            sums = [column.name for column in table.columns if column.name not in key]
            upsert = insert(table).from_select(key + sums, union_all(*rolled))
            statements.append(upsert.on_conflict_do_update(
                index_elements=key, set_={column: table.c[column] + upsert.excluded[column] for column in sums}))
        return statements

    def maintain(self) -> None:
        """Refresh the planner's statistics (SQLite keeps none unless asked) and, on PostgreSQL, the
        visibility map that lets the usage report read its indexes alone, and the room of the rollups'
        rows that every stored application updates (autovacuum's work, done now)."""
        if self.dialect == "postgresql":
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("VACUUM ANALYZE applications, usage_totals, usage_waits"))
        else:
            with self.engine.begin() as connection:
                connection.execute(text("ANALYZE"))

    def prune(self, retention: Retention, now: int) -> int:
        """Delete what is older than its retention (the applications leave the rollups too); the rows
        deleted."""
        with self.engine.begin() as connection:
            table = schema.applications
            cutoff = now - int(retention.applications * NS)
            for statement in self._take_pruned:
                connection.execute(statement, {"cutoff": cutoff})
            for rollup in (schema.usage_totals, schema.usage_waits):
                connection.execute(delete(rollup).where(rollup.c.period_start < cutoff, rollup.c.applications <= 0))
            deleted = connection.execute(delete(table).where(table.c.finished_at < cutoff)).rowcount
            for table, column, seconds in (
                    (schema.cluster_samples, schema.cluster_samples.c.at, retention.samples),
                    (schema.queue_samples, schema.queue_samples.c.at, retention.samples),
                    (schema.events, schema.events.c.at, retention.events)):
                deleted += connection.execute(delete(table).where(column < now - int(seconds * NS))).rowcount
        return deleted

    # Reads.
    def applications(self, query: ApplicationQuery) -> list[FinishedApplication]:
        table = schema.applications
        statement = (select(table.c.document).where(_application_filter(query))
                     .order_by(table.c.finished_at.desc(), table.c.id.desc()).limit(query.limit).offset(query.offset))
        return [_application(document) for document in self._read(statement)]

    def application(self, partition: str, application_id: str) -> FinishedApplication | None:
        """The latest finished run of ``application_id``."""
        table = schema.applications
        statement = (select(table.c.document)
                     .where(table.c.application_id == application_id, table.c.partition == partition)
                     .order_by(table.c.finished_at.desc()).limit(1))
        found = self._read(statement)
        return _application(found[0]) if found else None

    def count(self, distinct_ids: bool = False) -> int:
        """Stored runs of applications, or with ``distinct_ids`` the applications (an id may run again)."""
        counted = func.count(func.distinct(schema.applications.c.application_id)) if distinct_ids else func.count()
        return self._read(select(counted).select_from(schema.applications))[0]

    def cluster_samples(self, limit: int) -> list[ClusterSample]:
        """The newest ``limit`` samples, oldest first."""
        table = schema.cluster_samples
        rows = self._rows(select(table).order_by(table.c.at.desc()).limit(limit))
        return [ClusterSample(r.at, r.applications, r.containers) for r in reversed(rows)]

    def queue_samples(self, since: int, queue: str | None = None) -> list[QueueSample]:
        table = schema.queue_samples
        statement = select(table).where(table.c.at >= since)
        if queue is not None:
            statement = statement.where(table.c.queue == queue)
        return [QueueSample(r.at, r.partition, r.queue, orjson.loads(r.allocated), r.running_applications)
                for r in self._rows(statement.order_by(table.c.at, table.c.id))]

    def events(self, since: int, limit: int) -> list[dict]:
        table = schema.events
        rows = self._rows(select(table).where(table.c.at >= since).order_by(table.c.at, table.c.id).limit(limit))
        return [{**r._asdict(), "resource": orjson.loads(r.resource)} for r in rows]

    def usage(self, group_by: str, since: int | None, until: int | None) -> list[UsageRow]:
        """Per queue or per user, the applications that finished in [since, until): the whole rollup periods
        the range covers and its edges from the applications, summed and ranked in one statement."""
        statement = _usage_statement(group_by, *_cover(since, until)) if since is None or until is None or \
            since < until else None
        if statement is None:
            return []
        rows: dict[str, UsageRow] = {}
        # PostgreSQL hashes the groups (a user's wait buckets: ~100 each) in memory rather than on disk.
        setup = (text("SET LOCAL work_mem = '64MB'"),) if self.dialect == "postgresql" else ()
        for name, state, count, vcore, memory, *buckets in self._rows(statement, setup):
            row = rows.get(name) or rows.setdefault(name, UsageRow(
                name, wait_buckets={p: b for p, b in zip(PERCENTILES, buckets, strict=True) if b is not None}))
            row.applications += count
            row.by_state[state] = row.by_state.get(state, 0) + count
            row.vcore_seconds += vcore
            row.memory_seconds += memory
        return [rows[name] for name in sorted(rows)]

    def _rows(self, statement, setup: Sequence = ()) -> list:
        try:
            with self.engine.begin() as connection:
                for step in setup:
                    connection.execute(step)
                return list(connection.execute(statement))
        except Exception as error:  # the database is down or unreachable: the reader says so
            raise HistoryUnavailable(f"history store: {type(error).__name__}: {error}") from error

    def _read(self, statement) -> list:
        return [row[0] for row in self._rows(statement)]


def _sqlite_engine(url: str) -> Engine:
    path = make_url(url).database
    if path and path != ":memory:":
        pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record) -> None:
        # WAL: readers never wait for the writer nor the writer for them; NORMAL sync is safe with WAL.
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return engine


def _time_filter(column, since: int | None, until: int | None):
    conditions = []
    if since is not None:
        conditions.append(column >= since)
    if until is not None:
        conditions.append(column < until)
    return and_(True, *conditions)


def _cover(since: int | None, until: int | None) -> tuple[list[tuple[int, int | None, int | None]],
                                                          list[tuple[int | None, int | None]]]:
    """[since, until) as whole rollup periods, coarsest first ((period seconds, first start, end), None for
    unbounded), and the edges no whole finest period covers ((since, until) of applications)."""
    periods: list[tuple[int, int | None, int | None]] = []
    edges: list[tuple[int | None, int | None]] = []

    def split(low: int | None, high: int | None, level: int) -> None:
        if level < 0:
            edges.append((low, high))
            return
        size = ROLLUP_PERIODS[level] * NS
        first = None if low is None else -(-low // size) * size
        end = None if high is None else high // size * size
        if first is not None and end is not None and first >= end:
            split(low, high, level - 1)
            return
        periods.append((ROLLUP_PERIODS[level], first, end))
        if low is not None and low < first:
            split(low, first, level - 1)
        if high is not None and end < high:
            split(end, high, level - 1)

    split(since, until, len(ROLLUP_PERIODS) - 1)
    return periods, edges


def _usage_statement(group_by: str, periods, edges):
    """One row per queue or user and final state: its applications, vcore- and memory-seconds, and the wait
    buckets of its PERCENTILES (alike on each of its rows)."""
    totals, waits, apps = schema.usage_totals, schema.usage_waits, schema.applications
    name = {"queue": apps.c.queue, "user": apps.c.user_name}[group_by]

    def whole(table, *columns):
        return [select(table.c.name, *columns).where(
            table.c.grouping == group_by, table.c.period_seconds == seconds,
            _time_filter(table.c.period_start, first, end)) for seconds, first, end in periods]

    def parts(selects):
        return (selects[0] if len(selects) == 1 else union_all(*selects)).subquery()

    counted = parts([*whole(totals, totals.c.state, totals.c.applications, totals.c.vcore_seconds,
                            totals.c.memory_seconds),
                     *[select(name.label("name"), apps.c.state, func.count().label("applications"),
                              func.sum(apps.c.vcore_seconds).label("vcore_seconds"),
                              func.sum(apps.c.memory_seconds).label("memory_seconds"))
                       .where(_time_filter(apps.c.finished_at, low, high)).group_by(name, apps.c.state)
                       for low, high in edges]])
    by_state = (select(counted.c.name, counted.c.state, func.sum(counted.c.applications).label("applications"),
                       func.sum(counted.c.vcore_seconds).label("vcore_seconds"),
                       func.sum(counted.c.memory_seconds).label("memory_seconds"))
                .group_by(counted.c.name, counted.c.state).subquery())
    waited = parts([*whole(waits, waits.c.wait_bucket, waits.c.applications),
                    *[select(name.label("name"), apps.c.wait_bucket, func.count().label("applications"))
                      .where(_time_filter(apps.c.finished_at, low, high), apps.c.wait_bucket.is_not(None))
                      .group_by(name, apps.c.wait_bucket) for low, high in edges]])
    histogram = (select(waited.c.name, waited.c.wait_bucket, func.sum(waited.c.applications).label("count"))
                 .group_by(waited.c.name, waited.c.wait_bucket).subquery())
    running = select(histogram.c.name, histogram.c.wait_bucket,
                     func.sum(histogram.c.count).over(partition_by=histogram.c.name, order_by=histogram.c.wait_bucket,
                                                      rows=(None, 0)).label("below"),
                     func.sum(histogram.c.count).over(partition_by=histogram.c.name).label("total")).subquery()
    # The p-th percentile is the first bucket holding the ceil(p% of total)-th application.
    ranked = (select(running.c.name, *[func.min(case((running.c.below * 100 >= running.c.total * percent,
                                                      running.c.wait_bucket))).label(f"p{percent}")
                                       for percent in PERCENTILES])
              .group_by(running.c.name).subquery())
    return (select(by_state.c.name, by_state.c.state, cast(by_state.c.applications, BigInteger),
                   func.coalesce(by_state.c.vcore_seconds, 0.0), func.coalesce(by_state.c.memory_seconds, 0.0),
                   *[ranked.c[f"p{percent}"] for percent in PERCENTILES])
            .join_from(by_state, ranked, ranked.c.name == by_state.c.name, isouter=True))


def _application_filter(query: ApplicationQuery):
    table = schema.applications
    conditions = [table.c.partition == query.partition, table.c.state.in_(query.states),
                  _time_filter(table.c.finished_at, query.since, query.until)]
    if query.queue is not None:
        conditions.append(table.c.queue == query.queue)
    if query.user is not None:
        conditions.append(table.c.user_name == query.user)
    return and_(*conditions)


def _json(value) -> str:
    return orjson.dumps(value).decode()


def _application_row(app: FinishedApplication) -> dict:
    first = app.first_allocation_time
    return {"partition": app.partition, "application_id": app.application_id, "queue": app.queue,
            "user_name": app.user, "state": app.state, "submitted_at": app.submission_time,
            "finished_at": app.finished_time,
            "wait_bucket": wait_bucket(first - app.submission_time) if first else None,
            "vcore_seconds": float(app.resource_seconds.get("vcore", 0.0)),
            "memory_seconds": float(app.resource_seconds.get("memory", 0.0)),
            "document": _json(_document(app))}


def _document(app: FinishedApplication) -> dict:
    return {"applicationID": app.application_id, "partition": app.partition, "queue": app.queue,
            "user": app.user, "groups": list(app.groups), "state": app.state,
            "submissionTime": app.submission_time, "finishedTime": app.finished_time,
            "rejectedMessage": app.rejected_message, "stateLog": [list(entry) for entry in app.state_log],
            "tags": dict(app.tags), "used": dict(app.used), "maxUsed": dict(app.max_used),
            "resourceSeconds": dict(app.resource_seconds), "firstAllocationTime": app.first_allocation_time,
            "allocations": [[a.key, a.node_id, dict(a.resource), a.allocated_at, a.released_at, a.placeholder,
                             a.task_group] for a in app.allocations],
            "allocationsUntold": app.allocations_untold,
            "placeholders": [[p.task_group, p.count, dict(p.min_resource), p.replaced, p.timed_out]
                             for p in app.placeholders]}


def _application(document: str) -> FinishedApplication:
    d = orjson.loads(document)
    return FinishedApplication(
        d["applicationID"], d["partition"], d["queue"], d["user"], tuple(d["groups"]), d["state"],
        d["submissionTime"], d["finishedTime"], d["rejectedMessage"], tuple((t, s) for t, s in d["stateLog"]),
        d["tags"], d["used"], d["maxUsed"], d["resourceSeconds"], d["firstAllocationTime"],
        tuple(AllocationBrief(*a) for a in d["allocations"]), d["allocationsUntold"],
        tuple(PlaceholderBrief(*p) for p in d["placeholders"]))


_EVENT = si_pb2.EventRecord
# Enum names by number, looked up once: the writer turns thousands of events a second into rows.
_TYPES = {number: name for name, number in _EVENT.Type.items()}
_CHANGES = {number: name for name, number in _EVENT.ChangeType.items()}
_DETAILS = {number: name for name, number in _EVENT.ChangeDetail.items()}


def _event_row(record: si_pb2.EventRecord) -> dict:
    quantities = record.resource.resources
    return {"at": record.timestampNano, "type": _TYPES.get(record.type, str(record.type)),
            "object_id": record.objectID, "reference_id": record.referenceID,
            "change_type": _CHANGES.get(record.eventChangeType, str(record.eventChangeType)),
            "change_detail": _DETAILS.get(record.eventChangeDetail, str(record.eventChangeDetail)),
            "message": record.message,
            "resource": _json({name: q.value for name, q in quantities.items()}) if quantities else "{}"}

