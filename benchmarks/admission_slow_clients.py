"""Admission controller under slow clients: how long a normal review waits while many clients stall.

Starts a kubesim and the real ``yunikorn-admission-controller``, measures ``/mutate`` latency on new
TLS connections, then opens ``--stalled`` connections spread over five kinds (TCP only; TLS handshake
then silent; half a request head; a head and part of the body; one byte a second) and measures again
while they are open, and a third time once the controller should have cut them. A review slower than
10 s counts as failed: that is when the API server gives up on the webhook. With ``--reference REV`` the
same runs first against the controller of that git revision, then against this tree.
Run: ``python benchmarks/admission_slow_clients.py [--stalled 200 --workers 2 --threads 16 --reviews 20 --reference HEAD~1]``.
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import ssl
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from admission_throughput import (  # noqa: E402
    SERVER_NAME,
    LeanConnection,
    _context,
    checkout,
    running_controller,
    spark_executor_review,
)

API_SERVER_TIMEOUT = 10.0
HEAD = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n"


def _open(port: int, context: ssl.SSLContext, kind: int) -> socket.socket | None:
    """A stalled connection of ``kind`` (0-4); None if the server did not let it get that far."""
    try:
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        if kind == 0:
            return raw
        tls = context.wrap_socket(raw, server_hostname=SERVER_NAME)
        tls.sendall({1: b"", 2: HEAD[:40], 3: HEAD + b"{", 4: b""}[kind])
        return tls
    except OSError:
        return None


def _dribble(socks: list[socket.socket], stop: threading.Event) -> None:
    """One byte a second on each socket until the server cuts it."""
    alive, position = list(socks), 0
    while alive and not stop.wait(1.0):
        for sock in list(alive):
            try:
                sock.sendall(HEAD[position % len(HEAD):][:1])
            except OSError:
                alive.remove(sock)
        position += 1


def _reviews(port: int, context: ssl.SSLContext, count: int) -> tuple[list[float], int]:
    """``count`` reviews one after the other, each on a new connection: latencies (s) and failures."""
    latencies, failures = [], 0
    for index in range(count):
        started = time.perf_counter()
        try:
            connection = LeanConnection(port, context)
            connection._tls.settimeout(API_SERVER_TIMEOUT)
            status, _ = connection.exchange(LeanConnection.encode("/mutate", spark_executor_review(index)))
            connection.close()
            ok = status == 200
        except OSError:
            ok = False
        elapsed = time.perf_counter() - started
        if ok and elapsed < API_SERVER_TIMEOUT:
            latencies.append(elapsed)
        else:
            failures += 1
    return latencies, failures


def _report(label: str, latencies: list[float], failures: int) -> None:
    latencies = sorted(latencies)
    if not latencies:
        print(f"{label}: every review failed ({failures})")
        return
    p50 = latencies[len(latencies) // 2] * 1000
    print(f"{label}: p50 {p50:.1f} ms, max {latencies[-1] * 1000:.1f} ms, "
          f"{len(latencies)} answered, {failures} failed (over {API_SERVER_TIMEOUT:.0f} s or cut)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stalled", type=int, default=200, help="stalled connections, spread over 5 kinds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--reviews", type=int, default=20, help="reviews per measurement")
    parser.add_argument("--request-timeout", type=float, default=10.0)
    parser.add_argument("--reference", metavar="REV", help="git revision to measure first, for comparison")
    args = parser.parse_args()

    print(f"admission controller: {args.workers} workers x {args.threads} threads, request timeout "
          f"{args.request_timeout:.0f} s; {args.stalled} stalled connections")
    if args.reference:
        with checkout(args.reference) as reference:
            print(f"before ({args.reference}):")
            measure(args, reference)
        print("after (this tree):")
    measure(args, REPO)
    return 0


def measure(args, source: Path) -> None:
    with running_controller(args.workers, args.threads, "--request-timeout", str(args.request_timeout),
                            source=source) as (_, port, bundle), contextlib.ExitStack() as stack:
        context = _context(bundle)
        _report("no stalled clients", *_reviews(port, context, args.reviews))
        stop = threading.Event()

        # All at once from many threads, as an attacker would; the reviews start meanwhile.
        pool = ThreadPoolExecutor(64)
        started = time.monotonic()
        opening = [pool.submit(_open, port, context, n % 5) for n in range(args.stalled)]
        _report("while stalled clients connect", *_reviews(port, context, args.reviews))
        socks = [stack.enter_context(sock) for future in opening if (sock := future.result())]
        pool.shutdown()
        opened = time.monotonic()
        print(f"  opening the stalled connections took {opened - started:.1f} s; {len(socks)} got as far as meant")
        dribbler = threading.Thread(target=_dribble, args=([s for n, s in enumerate(socks) if n % 5 == 4], stop))
        dribbler.start()
        stack.callback(dribbler.join)
        stack.callback(stop.set)
        _report("stalled clients open", *_reviews(port, context, args.reviews))

        time.sleep(max(0.0, opened + args.request_timeout + 2 - time.monotonic()))
        _report("after the request timeout", *_reviews(port, context, args.reviews))


if __name__ == "__main__":
    sys.exit(main())
