"""History store fixtures: a SQLite file per test, and one PostgreSQL server per session with a fresh
database per test. ``dsn`` runs a test on both."""

import pytest

from tests.history.postgres import PostgresServer, binaries


@pytest.fixture(scope="session")
def postgres():
    bin_dir = binaries()
    if bin_dir is None:
        pytest.skip("PostgreSQL is not installed (.ci/run installs Debian's postgresql)")
    server = PostgresServer(bin_dir)
    yield server
    server.close()


@pytest.fixture
def sqlite_dsn(tmp_path):
    return f"sqlite:///{tmp_path / 'history.db'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def dsn(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'history.db'}"
    return request.getfixturevalue("postgres").new_database()
