"""The usage report's rollups: per period (an hour, a day, a week, four weeks), per queue and per user,
the applications that finished in it and their wait histogram; filled from the applications stored.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

PERIODS = (3600, 86400, 7 * 86400, 28 * 86400)
NS = 1_000_000_000


def upgrade() -> None:
    def rollup(table: str, key: sa.Column, *sums: sa.Column) -> sa.Table:
        return op.create_table(
            table,
            sa.Column("grouping", sa.Text, nullable=False),
            sa.Column("period_seconds", sa.Integer, nullable=False),
            sa.Column("period_start", sa.BigInteger, nullable=False),
            sa.Column("name", sa.Text, nullable=False),
            key, *sums,
            sa.PrimaryKeyConstraint("grouping", "period_seconds", "period_start", "name", key.name),
            sqlite_with_rowid=False,
        )

    totals = rollup("usage_totals", sa.Column("state", sa.Text, nullable=False),
                    sa.Column("applications", sa.BigInteger, nullable=False),
                    sa.Column("vcore_seconds", sa.Float, nullable=False),
                    sa.Column("memory_seconds", sa.Float, nullable=False))
    waits = rollup("usage_waits", sa.Column("wait_bucket", sa.Integer, nullable=False),
                   sa.Column("applications", sa.BigInteger, nullable=False))
    apps = sa.table("applications", sa.column("queue", sa.Text), sa.column("user_name", sa.Text),
                    sa.column("state", sa.Text), sa.column("finished_at", sa.BigInteger),
                    sa.column("wait_bucket", sa.Integer), sa.column("vcore_seconds", sa.Float),
                    sa.column("memory_seconds", sa.Float))
    for seconds in PERIODS:
        start = apps.c.finished_at // (seconds * NS) * (seconds * NS)
        for grouping, name in (("queue", apps.c.queue), ("user", apps.c.user_name)):
            fixed = (sa.literal(grouping), sa.literal(seconds), start, name)
            op.execute(totals.insert().from_select(
                ["grouping", "period_seconds", "period_start", "name", "state", "applications", "vcore_seconds",
                 "memory_seconds"],
                sa.select(*fixed, apps.c.state, sa.func.count(), sa.func.sum(apps.c.vcore_seconds),
                          sa.func.sum(apps.c.memory_seconds)).group_by(start, name, apps.c.state)))
            op.execute(waits.insert().from_select(
                ["grouping", "period_seconds", "period_start", "name", "wait_bucket", "applications"],
                sa.select(*fixed, apps.c.wait_bucket, sa.func.count()).where(apps.c.wait_bucket.is_not(None))
                .group_by(start, name, apps.c.wait_bucket)))


def downgrade() -> None:
    op.drop_table("usage_waits")
    op.drop_table("usage_totals")
