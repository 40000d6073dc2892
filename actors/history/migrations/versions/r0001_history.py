"""The history store's first tables: finished applications, cluster and queue samples, events.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ROW_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "applications",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("partition", sa.Text, nullable=False),
        sa.Column("application_id", sa.Text, nullable=False),
        sa.Column("queue", sa.Text, nullable=False),
        sa.Column("user_name", sa.Text, nullable=False),
        sa.Column("state", sa.Text, nullable=False),
        sa.Column("submitted_at", sa.BigInteger, nullable=False),
        sa.Column("finished_at", sa.BigInteger, nullable=False),
        sa.Column("wait_bucket", sa.Integer),
        sa.Column("vcore_seconds", sa.Float, nullable=False),
        sa.Column("memory_seconds", sa.Float, nullable=False),
        sa.Column("document", sa.Text, nullable=False),
        sa.UniqueConstraint("partition", "application_id", "submitted_at", name="uq_applications_run"),
    )
    op.create_index("ix_applications_finished", "applications",
                    ["finished_at", "queue", "user_name", "state", "wait_bucket", "vcore_seconds", "memory_seconds"])
    op.create_index("ix_applications_queue", "applications",
                    ["queue", "state", "wait_bucket", "finished_at", "vcore_seconds", "memory_seconds"])
    op.create_index("ix_applications_user", "applications",
                    ["user_name", "state", "wait_bucket", "finished_at", "vcore_seconds", "memory_seconds"])
    op.create_index("ix_applications_id", "applications", ["application_id"])
    op.create_table(
        "cluster_samples",
        sa.Column("at", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("applications", sa.Integer, nullable=False),
        sa.Column("containers", sa.Integer, nullable=False),
    )
    op.create_table(
        "queue_samples",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("partition", sa.Text, nullable=False),
        sa.Column("queue", sa.Text, nullable=False),
        sa.Column("allocated", sa.Text, nullable=False),
        sa.Column("running_applications", sa.Integer, nullable=False),
    )
    op.create_index("ix_queue_samples_at", "queue_samples", ["at"])
    op.create_index("ix_queue_samples_queue", "queue_samples", ["queue", "at"])
    op.create_table(
        "events",
        sa.Column("id", ROW_ID, primary_key=True, autoincrement=True),
        sa.Column("at", sa.BigInteger, nullable=False),
        sa.Column("type", sa.Text, nullable=False),
        sa.Column("object_id", sa.Text, nullable=False),
        sa.Column("reference_id", sa.Text, nullable=False),
        sa.Column("change_type", sa.Text, nullable=False),
        sa.Column("change_detail", sa.Text, nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("resource", sa.Text, nullable=False),
    )
    op.create_index("ix_events_at", "events", ["at"])
    op.create_index("ix_events_object", "events", ["object_id", "at"])


def downgrade() -> None:
    for table in ("events", "queue_samples", "cluster_samples", "applications"):
        op.drop_table(table)
