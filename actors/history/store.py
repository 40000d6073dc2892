"""The history store: SQL through SQLAlchemy Core, a SQLite file or PostgreSQL (psycopg), the schema
kept by Alembic's migrations.

Writes come from one writer (:mod:`actors.history.writer`), each batch in one transaction; reads come
from the REST threads. A run of an application (partition, id, submission time) is stored once: a
batch written again after a failover changes nothing.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import pathlib
from collections.abc import Sequence
from dataclasses import dataclass, field

import orjson
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, and_, create_engine, delete, event, func, select, text
from sqlalchemy.dialects import postgresql, sqlite
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
MIGRATION_LOCK = 0x79756E69  # PostgreSQL advisory lock: replicas starting together migrate one at a time
WAIT_STEP = math.log(1.1)  # wait-time buckets 10% wide: percentiles from a histogram, on any database
NS = 1_000_000_000


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
    waits: dict[int, int] = field(default_factory=dict)  # wait bucket -> applications

    @property
    def core_hours(self) -> float:
        return self.vcore_seconds / 1000 / 3600

    @property
    def memory_gib_hours(self) -> float:
        return self.memory_seconds / 2**30 / 3600

    def wait_percentile(self, fraction: float) -> float | None:
        """Seconds from submission to the first allocation that ``fraction`` of the applications waited at
        most (within 5%: the middle of a 10% bucket), None when none was allocated."""
        total = sum(self.waits.values())
        if not total:
            return None
        rank = max(math.ceil(fraction * total), 1)
        seen = 0
        for bucket in sorted(self.waits):
            seen += self.waits[bucket]
            if seen >= rank:
                return round(bucket_seconds(bucket), 3)
        return None


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

    def migrate(self) -> HistoryStore:
        """Bring the schema to the latest revision. Processes starting together migrate one at a time: on
        PostgreSQL under an advisory lock, on SQLite under a lock file beside the database."""
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
                command.upgrade(config, "head")
        return self

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
        insert = postgresql.insert if self.dialect == "postgresql" else sqlite.insert
        with self.engine.begin() as connection:
            if apps:
                connection.execute(insert(schema.applications).on_conflict_do_nothing(
                    index_elements=["partition", "application_id", "submitted_at"]), apps)
            if clusters:
                connection.execute(insert(schema.cluster_samples).on_conflict_do_nothing(index_elements=["at"]),
                                   clusters)
            if queues:
                connection.execute(schema.queue_samples.insert(), queues)
            if rows:
                connection.execute(schema.events.insert(), rows)

    def maintain(self) -> None:
        """Refresh the planner's statistics (SQLite keeps none unless asked) and, on PostgreSQL, the
        visibility map that lets the usage report read its indexes alone (autovacuum's work, done now)."""
        if self.dialect == "postgresql":
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
                connection.execute(text("VACUUM ANALYZE applications"))
        else:
            with self.engine.begin() as connection:
                connection.execute(text("ANALYZE"))

    def prune(self, retention: Retention, now: int) -> int:
        """Delete what is older than its retention; the rows deleted."""
        deleted = 0
        with self.engine.begin() as connection:
            for table, column, seconds in (
                    (schema.applications, schema.applications.c.finished_at, retention.applications),
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
        """Per queue or per user, the applications that finished in [since, until)."""
        table = schema.applications
        key = {"queue": table.c.queue, "user": table.c.user_name}[group_by]
        statement = (select(key, table.c.state, table.c.wait_bucket, func.count(), func.sum(table.c.vcore_seconds),
                            func.sum(table.c.memory_seconds))
                     .where(_time_filter(table.c.finished_at, since, until))
                     .group_by(key, table.c.state, table.c.wait_bucket))
        rows: dict[str, UsageRow] = {}
        # PostgreSQL hashes the groups (a user's wait buckets: ~100 each) in memory rather than on disk.
        setup = (text("SET LOCAL work_mem = '64MB'"),) if self.dialect == "postgresql" else ()
        for name, state, bucket, count, vcore, memory in self._rows(statement, setup):
            row = rows.get(name) or rows.setdefault(name, UsageRow(name))
            row.applications += count
            row.by_state[state] = row.by_state.get(state, 0) + count
            row.vcore_seconds += vcore or 0.0
            row.memory_seconds += memory or 0.0
            if bucket is not None:
                row.waits[bucket] = row.waits.get(bucket, 0) + count
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

