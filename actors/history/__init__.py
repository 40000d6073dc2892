"""The history store: finished applications, the periodic samples and the event stream, kept in SQL
(a SQLite file by default, PostgreSQL by DSN) and written by one writer off the scheduling path.

The core tells it :mod:`si.history` records and never imports it; the REST API reads it.
"""
