"""A loopback proxy between one scheduler process and kubesim that notes every write it forwards, with
the time it passed, so a test can tell which of two processes wrote what, and when."""

from __future__ import annotations

import re
import socket
import threading
import time
from typing import NamedTuple

import yaml

# A request line; kubesim speaks HTTP/1.1 in plain text on loopback.
REQUEST_LINE = re.compile(rb"(POST|PUT|PATCH|DELETE) (\S+) HTTP/1\.[01]\r\n")
MAX_LINE = 16 * 1024


class Write(NamedTuple):
    at: float  # time.monotonic() when the request line passed the proxy
    method: str
    path: str


class WireTap:
    """Listens on loopback and forwards each connection to ``upstream`` (host, port); ``writes`` grows
    as the client's mutating requests pass. ``close`` ends the listener and every connection."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.writes: list[Write] = []
        self._upstream = upstream
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._accept, name="wiretap", daemon=True).start()

    def write_kubeconfig(self, kubeconfig: dict, path) -> str:
        """``kubeconfig`` (kubesim's) pointed at this proxy, written to ``path``."""
        for cluster in kubeconfig["clusters"]:
            cluster["cluster"]["server"] = f"http://127.0.0.1:{self.port}"
        with open(path, "w") as stream:
            yaml.safe_dump(kubeconfig, stream)
        return str(path)

    def writes_since(self, moment: float, excluding: str = r"/leases/") -> list[Write]:
        with self._lock:
            return [w for w in self.writes if w.at >= moment and not re.search(excluding, w.path)]

    def close(self) -> None:
        self._listener.close()
        with self._lock:
            for one in self._sockets:
                _shut(one)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self._upstream)
            with self._lock:
                self._sockets += [client, server]
            threading.Thread(target=self._pipe, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client, False), daemon=True).start()

    def _pipe(self, source: socket.socket, target: socket.socket, requests: bool) -> None:
        pending = b""
        try:
            while chunk := source.recv(65536):
                if requests:
                    pending = self._note(pending + chunk)
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            _shut(target)

    def _note(self, data: bytes) -> bytes:
        """Record the request lines complete in ``data``; return what may still begin one."""
        now = time.monotonic()
        end = 0
        for match in REQUEST_LINE.finditer(data):
            with self._lock:
                self.writes.append(Write(now, match[1].decode(), match[2].decode()))
            end = match.end()
        rest = data[end:]
        cut = rest.rfind(b"\r\n")
        return rest[cut + 2:][-MAX_LINE:] if cut >= 0 else rest[-MAX_LINE:]


def _shut(one: socket.socket) -> None:
    try:
        one.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    one.close()
