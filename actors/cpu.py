"""The scheduler's threads kept on one CPU (``yunikorn-scheduler --cpu-affinity one``, the default).

Every thread of the scheduler runs Python, and the interpreter lock lets one run at a time. Left to the
kernel, the lock goes back and forth between threads on different CPUs, and each holder finds what the
last one wrote in another CPU's caches. On one CPU the threads hand the lock over where the data already
is (the README gives what that saves). What the process gives up is running the little work that
releases the lock (system calls, TLS, SQLite) beside its Python, and moving when its CPU is busy; other
processes still use every CPU, and the kernel moves them away from a busy one.
"""

from __future__ import annotations

import os

# ``--cpu-affinity``: its default first.
CHOICES = ("one", "all")


def current_cpu() -> int | None:
    """The CPU the calling thread runs on, or None where the system does not say (not Linux)."""
    try:
        with open("/proc/thread-self/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[36])  # field 39, "processor", counted from the state (field 3)


def pin_to_current_cpu() -> int | None:
    """Restrict the calling thread to the CPU it runs on, so the threads and processes it starts from
    here on run there too (call it before the scheduler starts any). The CPU, or None when nothing changed:
    the system cannot (not Linux) or the thread may use a single CPU already."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        return None
    cpu = current_cpu()
    if cpu not in allowed:
        cpu = min(allowed)
    os.sched_setaffinity(0, {cpu})
    return cpu
