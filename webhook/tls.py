"""Serving certificates that can change while the server runs.

The replica's parent process writes the server key and chain into one PEM file, replacing it
atomically (write beside, then rename) so a reader never sees a key from one certificate and a chain
from another. Each gunicorn worker builds its ``SSLContext`` once and rebuilds it only when the file's
identity (inode, mtime) changes: new handshakes pick up a rotated certificate, open connections keep
theirs, and nothing restarts.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import threading
from pathlib import Path

log = logging.getLogger(__name__)


def write_atomically(path: Path, content: bytes) -> None:
    """Replace ``path`` with ``content`` in one rename; the file is readable by its owner only."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(content)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def server_context(pem_file: Path) -> ssl.SSLContext:
    """A server-side context with TLS 1.2 or newer and the key and chain in ``pem_file``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(pem_file))
    context.set_alpn_protocols(["http/1.1"])
    return context


class ReloadingContext:
    """The current context for ``pem_file``, rebuilt when the file is replaced."""

    def __init__(self, pem_file: Path) -> None:
        self._file = Path(pem_file)
        self._lock = threading.Lock()
        self._identity: tuple[int, int] | None = None
        self._context: ssl.SSLContext | None = None

    def get(self) -> ssl.SSLContext:
        stat = os.stat(self._file)
        identity = (stat.st_ino, stat.st_mtime_ns)
        if identity != self._identity:
            with self._lock:
                if identity != self._identity:
                    self._context = server_context(self._file)
                    self._identity = identity
                    log.info("loaded the server certificate from %s", self._file)
        return self._context
