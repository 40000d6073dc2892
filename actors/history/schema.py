"""The history store's tables (SQLAlchemy Core). Alembic's migrations under ``migrations/`` create and
evolve them; this module is what the queries are written against, kept equal to the latest revision.

Times are nanoseconds since the epoch. An application's full record is a JSON document; the columns
beside it are what the paged lists filter on and the usage report sums.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()
# A 64-bit key on PostgreSQL; SQLite numbers its rows only through a column declared INTEGER.
ROW_ID = BigInteger().with_variant(Integer(), "sqlite")

applications = Table(
    "applications", metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("partition", Text, nullable=False),
    Column("application_id", Text, nullable=False),
    Column("queue", Text, nullable=False),
    Column("user_name", Text, nullable=False),
    Column("state", Text, nullable=False),
    Column("submitted_at", BigInteger, nullable=False),
    Column("finished_at", BigInteger, nullable=False),
    Column("wait_bucket", Integer),  # see actors.history.store.wait_bucket; NULL: never allocated
    Column("vcore_seconds", Float, nullable=False),  # millicore-seconds
    Column("memory_seconds", Float, nullable=False),  # byte-seconds
    Column("document", Text, nullable=False),
    UniqueConstraint("partition", "application_id", "submitted_at", name="uq_applications_run"),
    # The usage report reads the edges of its range from the first index alone; lists filtered by queue or
    # user page through the other two.
    Index("ix_applications_finished", "finished_at", "queue", "user_name", "state", "wait_bucket",
          "vcore_seconds", "memory_seconds"),
    Index("ix_applications_queue", "queue", "state", "wait_bucket", "finished_at", "vcore_seconds",
          "memory_seconds"),
    Index("ix_applications_user", "user_name", "state", "wait_bucket", "finished_at", "vcore_seconds",
          "memory_seconds"),
    Index("ix_applications_id", "application_id"),
)

# The usage report's rollups, kept by the writer in the transaction that stores the applications: per
# period of each length in ``actors.history.store.ROLLUP_PERIODS`` (seconds, periods aligned on the
# epoch, by finish time), per queue and per user ("grouping"), what finished in it. A report over a range
# sums the whole periods it covers, coarsest first, and reads only its ragged edges from ``applications``.


def _rollup(table: str, key: Column, *sums: Column) -> Table:
    """A rollup keyed by grouping, period and name, then ``key``."""
    return Table(
        table, metadata,
        Column("grouping", Text, nullable=False),  # queue or user
        Column("period_seconds", Integer, nullable=False),
        Column("period_start", BigInteger, nullable=False),
        Column("name", Text, nullable=False),  # the queue or the user
        key, *sums,
        PrimaryKeyConstraint("grouping", "period_seconds", "period_start", "name", key.name),
        sqlite_with_rowid=False,
    )


usage_totals = _rollup("usage_totals", Column("state", Text, nullable=False),
                       Column("applications", BigInteger, nullable=False),
                       Column("vcore_seconds", Float, nullable=False),
                       Column("memory_seconds", Float, nullable=False))
# Beside them, the wait histogram: applications per wait bucket (those ever allocated).
usage_waits = _rollup("usage_waits", Column("wait_bucket", Integer, nullable=False),
                      Column("applications", BigInteger, nullable=False))

cluster_samples = Table(
    "cluster_samples", metadata,
    Column("at", BigInteger, primary_key=True, autoincrement=False),
    Column("applications", Integer, nullable=False),
    Column("containers", Integer, nullable=False),
)

queue_samples = Table(
    "queue_samples", metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("at", BigInteger, nullable=False),
    Column("partition", Text, nullable=False),
    Column("queue", Text, nullable=False),
    Column("allocated", Text, nullable=False),  # JSON {resource: quantity}
    Column("running_applications", Integer, nullable=False),
    Index("ix_queue_samples_at", "at"),
    Index("ix_queue_samples_queue", "queue", "at"),
)

events = Table(
    "events", metadata,
    Column("id", ROW_ID, primary_key=True, autoincrement=True),
    Column("at", BigInteger, nullable=False),
    Column("type", Text, nullable=False),
    Column("object_id", Text, nullable=False),
    Column("reference_id", Text, nullable=False),
    Column("change_type", Text, nullable=False),
    Column("change_detail", Text, nullable=False),
    Column("message", Text, nullable=False),
    Column("resource", Text, nullable=False),  # JSON {resource: quantity}
    Index("ix_events_at", "at"),
    Index("ix_events_object", "object_id", "at"),
)
