"""Finished-application records for the store's tests."""

from si.history import AllocationBrief, FinishedApplication

S = 1_000_000_000
T0 = 1_780_000_000 * S  # a fixed moment (2026-05-28), so time ranges are exact


def finished(app_id: str, queue: str = "root.a", user: str = "alice", state: str = "Completed",
             submitted: int = T0, wait: float | None = 2.0, runtime: float = 60.0, vcore: int = 1000,
             memory: int = 2**30, pods: int = 1, partition: str = "default") -> FinishedApplication:
    """An application that waited ``wait`` seconds for its first pod, ran ``pods`` pods of
    ``vcore``/``memory`` for ``runtime`` seconds, and finished in ``state``."""
    first = submitted + int(wait * S) if wait is not None else 0
    end = (first or submitted) + int(runtime * S)
    briefs = tuple(AllocationBrief(f"{app_id}-{i}", "node-0", {"vcore": vcore, "memory": memory}, first, end, False,
                                   "") for i in range(pods)) if first else ()
    seconds = {"vcore": vcore * runtime * pods, "memory": memory * runtime * pods} if first else {}
    return FinishedApplication(app_id, partition, queue, user, ("staff",), state, submitted, end, "",
                               ((submitted, "New"), (end, state)), {"team": "x"}, {}, {"vcore": vcore * pods},
                               seconds, first, briefs, 0, ())
