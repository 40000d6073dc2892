"""An importer for Alibaba's cluster-trace-v2018 batch workload (``batch_task.csv``).

Each row is one task of a job: ``task_name, instance_num, job_name, task_type, status, start_time,
end_time, plan_cpu, plan_mem`` with no header; times are seconds from the trace's start, ``plan_cpu``
is in hundredths of a core (100 = one core) and ``plan_mem`` is a share of a machine's memory (0-100).
A task's instances become one trace line: the tasks of a job are the stages of a DAG, each starting
when its parents end, so each task is submitted at its own start time (as application
``<job>-<task>``) rather than all at the job's first. Only tasks that ran to the end (``Terminated``,
with an end after their start) are kept; the trace starts at the earliest of them.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

from si.quantity import QuantityError, parse_quantity
from simulate.inputs import InputError

FIELDS = ("task_name", "instance_num", "job_name", "task_type", "status", "start_time", "end_time", "plan_cpu",
          "plan_mem")


def read_tasks(path: str | Path, queue: str = "root.batch", user: str = "alibaba",
               machine_memory: str = "96Gi") -> list[dict]:
    """The trace lines of ``path``'s finished tasks (errors name the line and the column)."""
    try:
        memory = parse_quantity(machine_memory)
    except QuantityError as error:
        raise InputError("--machine-memory", "", str(error)) from None
    rows = list(_rows(Path(path)))
    if not rows:
        raise InputError(str(path), "", "holds no finished task (status Terminated, end after start)")
    origin = min(row["start_time"] for _, row in rows)
    lines = []
    for _, row in rows:
        cpu_milli = row["plan_cpu"] * 10  # hundredths of a core -> millicores
        mem_bytes = int(memory * Fraction(row["plan_mem"]) / 100)
        lines.append({"submit": row["start_time"] - origin, "app": f"{row['job_name']}-{row['task_name']}",
                      "queue": queue, "user": user, "groups": [],
                      "pods": [{"count": row["instance_num"], "cpu": f"{max(1, round(cpu_milli))}m",
                                "memory": str(max(1, mem_bytes)), "duration": row["end_time"] - row["start_time"]}]})
    lines.sort(key=lambda line: line["submit"])
    return lines


def _rows(path: Path) -> Iterator[tuple[int, dict]]:
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as error:
        raise InputError(str(path), "", f"cannot be read: {error.strerror}") from None
    with handle:
        for number, cells in enumerate(csv.reader(handle), 1):
            if not cells or not "".join(cells).strip():
                continue
            where = f"{path}:{number}"
            if len(cells) != len(FIELDS):
                raise InputError(where, "", f"has {len(cells)} columns, not {len(FIELDS)} ({', '.join(FIELDS)})")
            row = dict(zip(FIELDS, (c.strip() for c in cells), strict=True))
            if row["status"] != "Terminated":
                continue
            for name in ("instance_num", "start_time", "end_time"):
                row[name] = _number(row[name], where, name, whole=True)
            for name in ("plan_cpu", "plan_mem"):
                row[name] = _number(row[name], where, name, whole=False)
            if row["instance_num"] < 1 or row["end_time"] <= row["start_time"]:
                continue
            if row["plan_cpu"] <= 0 and row["plan_mem"] <= 0:
                raise InputError(where, "plan_cpu", "the task plans neither cpu nor memory")
            if not row["job_name"]:
                raise InputError(where, "job_name", "is empty")
            yield number, row


def _number(text: str, where: str, name: str, whole: bool):
    try:
        value = float(text)
    except ValueError:
        raise InputError(where, name, f"{text!r} is not a number") from None
    if value != value or value < 0:
        raise InputError(where, name, f"{text!r} must be a non-negative number")
    return int(value) if whole else value
