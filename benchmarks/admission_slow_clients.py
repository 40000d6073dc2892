"""Admission controller under slow clients: how long a normal review waits while many clients stall.

Starts a kubesim and the real ``yunikorn-admission-controller``, measures ``/mutate`` latency on new
TLS connections, then opens ``--stalled`` connections spread over five kinds (TCP only; TLS handshake
then silent; half a request head; a head and part of the body; one byte a second) and measures again
while they connect, while they are open, and once the controller should have cut them. The stalled
clients run in a process of their own, as an attacker runs apart from the API server. A review slower
than 10 s counts as failed: that is when the API server gives up on the webhook. The controller's CPU
seconds over the whole run are printed too. With ``--bursts N`` the stalled clients connect N times
(those of all but the last leave again), reviews going on each time: one burst's slowest review says
little on a machine shared with other work. With ``--reference REV`` the same runs first against the
controller of that git revision, then against this tree.
Run: ``python benchmarks/admission_slow_clients.py [--stalled 200 --bursts 1 --workers 2 --threads 16 --reviews 20 --reference HEAD~1]``.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import socket
import ssl
import sys
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
    process_tree_cpu,
    running_controller,
    spark_executor_review,
)

API_SERVER_TIMEOUT = 10.0
LATE = 0.2  # the goal: every review on a new connection answered within it
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


def _attacker(port: int, bundle: bytes, count: int, opened, stop) -> None:
    """The stalled clients, in a process of their own: ``count`` connections opened at once from many
    threads, as an attacker would; then one byte a second on the dribbling kind until ``stop``."""
    context = _context(bundle)
    opened.send(0)  # started
    with ThreadPoolExecutor(64) as pool:
        socks = [sock for sock in pool.map(lambda n: _open(port, context, n % 5), range(count)) if sock]
    opened.send(len(socks))
    alive, position = [s for n, s in enumerate(socks) if n % 5 == 4], 0
    while not stop.wait(1.0):
        for sock in list(alive):
            try:
                sock.sendall(HEAD[position % len(HEAD):][:1])
            except OSError:
                alive.remove(sock)
        position += 1
    for sock in socks:
        sock.close()


def _reviews(port: int, context: ssl.SSLContext, count: int, until=lambda: True) -> tuple[list[float], int]:
    """``count`` reviews one after the other (more until ``until()``), each on a new connection: latencies
    (s) and failures."""
    latencies, failures, index = [], 0, 0
    while index < count or not until():
        index += 1
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
    p50, p99 = (latencies[min(len(latencies) - 1, int(p * len(latencies)))] * 1000 for p in (0.5, 0.99))
    late = sum(latency > LATE for latency in latencies)
    print(f"{label}: p50 {p50:.1f} ms, p99 {p99:.1f} ms, max {latencies[-1] * 1000:.1f} ms, {len(latencies)} "
          f"answered ({late} after {LATE * 1000:.0f} ms), {failures} failed (over {API_SERVER_TIMEOUT:.0f} s or cut)")


PHASES = ("no stalled clients", "while stalled clients connect", "stalled clients open", "after the request timeout")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stalled", type=int, default=200, help="stalled connections, spread over 5 kinds")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--reviews", type=int, default=20, help="reviews per measurement (at least)")
    parser.add_argument("--bursts", type=int, default=1,
                        help="times the stalled clients connect at once (the last ones stay), reviews going on")
    parser.add_argument("--request-timeout", type=float, default=10.0)


def measure(args, source: Path) -> dict:
    """One controller run from ``source``: per phase (:data:`PHASES`), (latencies, failures); and under
    ``"server CPU s"`` the controller's CPU seconds over the run."""
    results: dict = {}
    with running_controller(args.workers, args.threads, "--request-timeout", str(args.request_timeout),
                            source=source) as (controller, port, bundle), contextlib.ExitStack() as stack:
        cpu = process_tree_cpu(controller.pid)
        context = _context(bundle)

        def phase(name: str, until=lambda: True) -> None:
            results[name] = _reviews(port, context, args.reviews, until)
            _report(name, *results[name])

        phase(PHASES[0])
        processes = multiprocessing.get_context("fork")
        connecting: tuple[list[float], int] = ([], 0)
        for burst in range(1, args.bursts + 1):  # the stalled clients of all but the last burst then leave
            opened, report = processes.Pipe(duplex=False)
            stop = processes.Event()
            attacker = processes.Process(target=_attacker, args=(port, bundle, args.stalled, report, stop))
            started = time.monotonic()
            attacker.start()
            opened.recv()
            latencies, failures = _reviews(port, context, args.reviews, until=opened.poll)  # while they connect
            connecting = (connecting[0] + latencies, connecting[1] + failures)
            count = opened.recv()
            opened_at = time.monotonic()
            print(f"  burst {burst}: opening the stalled connections took {opened_at - started:.1f} s; "
                  f"{count} got as far as meant")
            if burst < args.bursts:
                stop.set()
                attacker.join()
        stack.callback(attacker.join)
        stack.callback(stop.set)
        results[PHASES[1]] = connecting
        _report(PHASES[1], *connecting)
        phase(PHASES[2])
        time.sleep(max(0.0, opened_at + args.request_timeout + 2 - time.monotonic()))
        phase(PHASES[3])
        results["server CPU s"] = process_tree_cpu(controller.pid) - cpu
        print(f"  controller CPU over the run: {results['server CPU s']:.2f} s")
    return results


if __name__ == "__main__":
    sys.exit(main())
