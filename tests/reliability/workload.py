"""Bursts of pods for the reliability scenarios and the soak: several applications, a few pods too
big for any node (they must stay pending with a reason, never be lost)."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor


def burst(cluster, prefix: str, count: int, apps: int = 4, queue: str | None = None, oversized_every: int = 0,
          cpu: str | None = None, threads: int = 8, rng: random.Random | None = None) -> list[str]:
    """Create ``count`` pods named ``<prefix>-<n>`` concurrently (each of ``cpu``, else of a random small
    size); returns their names."""
    rng = rng or random.Random(0)
    names = [f"{prefix}-{index:04d}" for index in range(count)]

    def create(index: int) -> None:
        labels = {"applicationId": f"{prefix}-app-{index % apps}"}
        if queue:
            labels["queue"] = queue
        oversized = oversized_every and index % oversized_every == oversized_every - 1
        size = "1000" if oversized else cpu or rng.choice(["100m", "200m", "250m"])
        cluster.pod(names[index], cpu=size, memory="64Mi", labels=labels)
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(count)))
    return names
