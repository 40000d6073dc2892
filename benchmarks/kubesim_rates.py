"""kubesim's raw rates: creates/s, binds/s and watch events/s, with the official client and raw HTTP.

Scheduler benchmarks are quoted against these figures, so the emulator's own ceiling is visible.
kubesim runs in this process (its server threads share the interpreter with the clients, as they do
in the embedded scheduler); run with ``--pods N --threads T``.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time

from kubernetes import client, watch

from kubesim import KubeSim


def pod(name: str) -> dict:
    return {"metadata": {"name": name, "labels": {"app": "bench"}},
            "spec": {"containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}


def run_threads(count: int, target) -> float:
    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - began


def official_client(sim: KubeSim, pods: int, threads: int, prefix: str) -> tuple[float, float]:
    apis = [client.CoreV1Api(sim.api_client()) for _ in range(threads)]
    share = pods // threads

    def create(i):
        for j in range(share):
            apis[i].create_namespaced_pod("default", pod(f"{prefix}{i}-{j}"))

    def bind(i):
        for j in range(share):
            name = f"{prefix}{i}-{j}"
            apis[i].create_namespaced_pod_binding(name, "default", {"metadata": {"name": name},
                                                                    "target": {"name": f"node-{j % 100:05d}"}},
                                                  _preload_content=False).release_conn()

    created = share * threads / run_threads(threads, create)
    bound = share * threads / run_threads(threads, bind)
    for api in apis:
        api.api_client.close()
    return created, bound


def raw_http(sim: KubeSim, pods: int, threads: int, prefix: str) -> tuple[float, float]:
    share = pods // threads
    headers = {"Content-Type": "application/json"}

    def create(i):
        connection = http.client.HTTPConnection("127.0.0.1", sim.port)
        for j in range(share):
            connection.request("POST", "/api/v1/namespaces/default/pods", json.dumps(pod(f"{prefix}{i}-{j}")), headers)
            connection.getresponse().read()
        connection.close()

    def bind(i):
        connection = http.client.HTTPConnection("127.0.0.1", sim.port)
        for j in range(share):
            name = f"{prefix}{i}-{j}"
            body = json.dumps({"metadata": {"name": name}, "target": {"name": f"node-{j % 100:05d}"}})
            connection.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding", body, headers)
            connection.getresponse().read()
        connection.close()

    created = share * threads / run_threads(threads, create)
    bound = share * threads / run_threads(threads, bind)
    return created, bound


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=8)
    args = parser.parse_args(argv)

    with KubeSim(history_size=200_000) as sim:
        events = []
        watch_api = client.CoreV1Api(sim.api_client())
        stream = watch.Watch()

        def count_events():
            try:
                for _ in stream.stream(watch_api.list_namespaced_pod, "default", timeout_seconds=600,
                                       _request_timeout=700):
                    events.append(time.perf_counter())
            except Exception:  # the stream is cut when kubesim stops at the end of the run
                pass

        watcher = threading.Thread(target=count_events, daemon=True)
        watcher.start()
        print(f"kubesim rates: {args.pods} pods, {args.threads} client threads, in-process server", flush=True)
        began = time.perf_counter()
        client_create, client_bind = official_client(sim, args.pods, args.threads, "c")
        print(f"  official client : {client_create:8.0f} creates/s  {client_bind:8.0f} binds/s", flush=True)
        raw_create, raw_bind = raw_http(sim, args.pods, args.threads, "r")
        print(f"  raw http.client : {raw_create:8.0f} creates/s  {raw_bind:8.0f} binds/s", flush=True)
        expected = 4 * (args.pods // args.threads) * args.threads
        deadline = time.monotonic() + 30
        while len(events) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        elapsed = (events[-1] - began) if events else float("nan")
        print(f"  watch           : {len(events)} of {expected} events delivered, "
              f"{len(events) / elapsed:8.0f} events/s over the run", flush=True)
        stream.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
