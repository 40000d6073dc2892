"""The history store's tables (SQLAlchemy Core). Alembic's migrations under ``migrations/`` create and
evolve them; this module is what the queries are written against, kept equal to the latest revision.

Times are nanoseconds since the epoch. An application's full record is a JSON document; the columns
beside it are what the paged lists filter on and the usage report sums.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, Float, Index, Integer, MetaData, Table, Text, UniqueConstraint

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
    # The usage report reads indexes alone: by time range, or grouped by queue or user in index order.
    Index("ix_applications_finished", "finished_at", "queue", "user_name", "state", "wait_bucket",
          "vcore_seconds", "memory_seconds"),
    Index("ix_applications_queue", "queue", "state", "wait_bucket", "finished_at", "vcore_seconds",
          "memory_seconds"),
    Index("ix_applications_user", "user_name", "state", "wait_bucket", "finished_at", "vcore_seconds",
          "memory_seconds"),
    Index("ix_applications_id", "application_id"),
)

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
