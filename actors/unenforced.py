"""Pod constraints the scheduler was asked to honour and does not enforce, counted per kind.

The shim counts each pod once, when it warns on the pod (a ``Warning`` event naming the constraint);
``/ws/v1/metrics`` reads the counts. Process-wide, like the actor census, and guarded by a lock since
application actors count from the dispatcher's threads while REST threads read.
"""

from __future__ import annotations

import threading
from collections import Counter

_lock = threading.Lock()
_counts: Counter[str] = Counter()


def count(constraints: tuple[str, ...]) -> None:
    with _lock:
        _counts.update(constraints)


def counts() -> dict[str, int]:
    with _lock:
        return dict(_counts)
