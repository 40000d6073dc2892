"""A throwaway PostgreSQL server for the tests: Debian's binaries, a cluster in a temporary directory,
listening only on a unix socket there; as root, the server runs as the ``postgres`` system user (or
``nobody``), since PostgreSQL refuses to run as root."""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import psycopg

USER = "yunikorn"


def binaries() -> Path | None:
    """The directory of initdb and pg_ctl: on the PATH, else the newest of /usr/lib/postgresql/*/bin."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _runner() -> list[str]:
    if os.geteuid() != 0:
        return []
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return ["runuser", "-u", name, "--"]
    raise RuntimeError("running as root with neither a postgres nor a nobody user to run PostgreSQL as")


class PostgresServer:
    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.run_as = _runner()
        self.base = Path(tempfile.mkdtemp(prefix="yk-pg-"))
        self.data = self.base / "data"
        if self.run_as:
            shutil.chown(self.base, self.run_as[2], None)
            self.base.chmod(0o755)
        self._numbers = itertools.count(1)
        self._command("initdb", "-D", str(self.data), "-U", USER, "-A", "trust", "--no-sync", "-E", "UTF8")
        self.start()

    def _command(self, name: str, *args: str) -> None:
        subprocess.run([*self.run_as, str(self.bin / name), *args], check=True, capture_output=True, timeout=120,
                       cwd=self.base)

    def start(self) -> None:
        options = f"-k {self.base} -c listen_addresses='' -c fsync=off -c synchronous_commit=off " \
                  "-c full_page_writes=off -c max_connections=200"
        self._command("pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.base / "server.log"),
                      "-w", "-t", "60", "start")

    def stop(self) -> None:
        self._command("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{USER}@/{database}?host={self.base}"

    def new_database(self) -> str:
        """The DSN of a fresh, empty database."""
        name = f"history_{next(self._numbers)}"
        with psycopg.connect(f"postgresql://{USER}@/postgres?host={self.base}", autocommit=True) as connection:
            connection.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def close(self) -> None:
        try:
            self._command("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(self.base, ignore_errors=True)
