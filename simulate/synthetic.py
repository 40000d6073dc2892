"""A synthetic workload with a day's shape (the sample trace and the benchmark's), the same for a seed."""

from __future__ import annotations

import math
import random

SHAPES = [("500m", "1Gi"), ("1", "2Gi"), ("2", "4Gi"), ("2", "8Gi"), ("4", "8Gi"), ("4", "16Gi")]


def workload(pods: int, hours: float, queues: list[str], users: int = 12, seed: int = 1,
             mean_duration: float = 3600.0, gang_share: float = 0.05) -> list[dict]:
    """About ``pods`` pods in applications of 1-32 pods, submitted over ``hours`` with a daytime peak,
    spread over ``queues`` and ``users``; a ``gang_share`` of the applications are gangs."""
    rng = random.Random(seed)
    lines, made, index = [], 0, 0
    span = hours * 3600
    while made < pods:
        # Submissions follow the working day: twice as many at the peak as at night.
        while True:
            submit = rng.uniform(0, span)
            if rng.random() < 0.5 + 0.5 * math.sin(math.pi * (submit % 86400) / 86400):
                break
        count = min(pods - made, max(1, int(rng.paretovariate(1.3))) if rng.random() < 0.9 else rng.randint(8, 32))
        cpu, memory = rng.choice(SHAPES)
        duration = round(min(rng.lognormvariate(math.log(mean_duration) - 0.5, 1.0), 8 * mean_duration), 1)
        queue = queues[index % len(queues)] if rng.random() < 0.3 else rng.choice(queues)
        user = f"user{rng.randrange(users)}"
        line = {"submit": round(submit, 3), "app": f"app-{index:06d}", "queue": queue, "user": user,
                "groups": [f"team{int(user[4:]) % 3}"],
                "pods": [{"count": count, "cpu": cpu, "memory": memory, "duration": duration,
                          "priority": rng.choice((0, 0, 0, 10))}]}
        if count >= 4 and rng.random() < gang_share * 4:
            line["taskGroups"] = [{"name": "workers", "minMember": count,
                                   "minResource": {"cpu": cpu, "memory": memory}}]
            line["pods"][0]["taskGroup"] = "workers"
            line["gangStyle"] = rng.choice(("Soft", "Hard"))
            line["placeholderTimeout"] = 600
        lines.append(line)
        made += count
        index += 1
    lines.sort(key=lambda line: line["submit"])
    return lines
