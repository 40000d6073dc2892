"""Alembic's environment for the history store: migrations run on the connection the store hands over
(``config.attributes["connection"]``), inside the store's transaction."""

from alembic import context

context.configure(connection=context.config.attributes["connection"], target_metadata=None)
with context.begin_transaction():
    context.run_migrations()
