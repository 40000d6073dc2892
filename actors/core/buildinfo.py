"""What the scheduler reports of its build (``rmBuildInformation`` of ``/ws/v1/clusters``).

Upstream's shim reports its version, build date, Go version, architecture and the git SHAs of core, SI
and shim. Here core, SI and shim are one Python package: the version is the package's, the build date
is ``$YUNIKORN_BUILD_DATE`` when the image sets it, else when the package was installed; the three
``*SHA`` values are SHA-1 digests of the sources of ``actors/core``, ``si`` and ``actors/shim`` as
installed (the code that runs, whether or not it came from a git checkout); ``pythonVersion`` takes
the place of ``goVersion``.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import pathlib
import platform
import time

DISTRIBUTION = "yunikorn-py"
BUILD_DATE_ENV = "YUNIKORN_BUILD_DATE"
_ROOT = pathlib.Path(__file__).resolve().parents[2]  # the folder holding actors/ and si/


def _version() -> str:
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _install_time() -> float | None:
    try:
        files = importlib.metadata.distribution(DISTRIBUTION).files or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == "METADATA":
            try:
                return pathlib.Path(file.locate()).stat().st_mtime
            except OSError:
                return None
    return None


def _build_date() -> str:
    configured = os.environ.get(BUILD_DATE_ENV, "").strip()
    if configured:
        return configured
    when = _install_time()
    if when is None:
        when = max((p.stat().st_mtime for p in (_ROOT / "actors" / "core").glob("*.py")), default=time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(when))  # upstream's `date +%FT%T%z`, in UTC


def _digest(*folders: str) -> str:
    sha = hashlib.sha1()
    for folder in folders:
        base = _ROOT / folder
        for path in sorted(base.glob("*.py")) + sorted(base.glob("*.proto")):
            sha.update(path.relative_to(_ROOT).as_posix().encode() + b"\0")
            sha.update(path.read_bytes())
    return sha.hexdigest()


@functools.cache
def core_build_info() -> dict[str, str]:
    return {"buildVersion": _version(), "buildDate": _build_date(), "arch": platform.machine() or "unknown",
            "pythonVersion": platform.python_version(), "coreSHA": _digest("actors/core"), "siSHA": _digest("si"),
            "shimSHA": _digest("actors/shim"), "isPluginVersion": "false"}
