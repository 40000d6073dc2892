"""Keeping the scheduler's threads on one CPU (``actors.cpu``), each case in a process of its own."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="CPU affinity is Linux's")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", "import os, threading\nfrom actors.cpu import *\n" + code],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_threads_started_after_pinning_run_where_it_ran():
    allowed = os.sched_getaffinity(0)
    out = _run("pinned = pin_to_current_cpu(); seen = []\n"
               "thread = threading.Thread(target=lambda: seen.append(os.sched_getaffinity(0))); thread.start(); thread.join()\n"
               "print(pinned, sorted(seen[0]))")
    pinned, seen = out.split(" ", 1)
    if len(allowed) == 1:
        assert pinned == "None" and seen == str(sorted(allowed))
    else:
        assert int(pinned) in allowed and seen == f"[{pinned}]"


def test_a_thread_on_one_cpu_already_is_left_as_it_is():
    cpu = min(os.sched_getaffinity(0))
    assert _run(f"os.sched_setaffinity(0, {{{cpu}}}); print(pin_to_current_cpu(), sorted(os.sched_getaffinity(0)))") \
        == f"None [{cpu}]"
