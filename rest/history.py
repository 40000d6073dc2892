"""What the REST API serves of the history: finished applications paged and filtered, the front page's
samples and the usage report (per queue or per user, JSON or CSV, for showback).

With a history store (``SchedulerView.history``) finished applications come from it; without one, from
the core's snapshot (what it keeps for the retention). The same parameters page and filter both.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

import falcon

from actors.core.history import RING_SIZE, HistorySample
from actors.core.snapshot import (
    AllocationSnapshot,
    ApplicationSnapshot,
    HealthCheck,
    HealthReport,
    PlaceholderSnapshot,
)
from actors.history.store import PERCENTILES, ApplicationQuery, HistoryStore, HistoryUnavailable, UsageRow
from rest import metrics
from si.history import FinishedApplication
from si.resources import Resource

DEFAULT_LIMIT = 1000  # finished applications in one answer when the client asks for no page
MAX_LIMIT = 10_000
COMPLETED_STATES = ("Completed", "Failed", "Expired")
REJECTED_STATES = ("Rejected",)
CHECK = "History store"
USAGE_COLUMNS = ("key", "applications", "completed", "failed", "rejected", "coreHours", "memoryGiBHours",
                 "waitP50Seconds", "waitP90Seconds", "waitP99Seconds")


class WriterState(Protocol):
    @property
    def degraded(self) -> bool: ...

    @property
    def buffered(self) -> int: ...

    @property
    def dropped(self) -> int: ...

    @property
    def written(self) -> int: ...

    @property
    def last_error(self) -> str: ...


@dataclass(frozen=True)
class History:
    """The store the REST API reads, and its writer's state (None on a reader that does not write)."""

    store: HistoryStore
    writer_status: Callable[[], WriterState] | None = None


def fail(status, title: str, description: str):
    raise falcon.HTTPError(status, title=title, description=description)


def parse_time(name: str, text: str | None) -> int | None:
    """Nanoseconds since the epoch from RFC 3339 (``2026-11-25T18:00:00Z``) or Unix seconds."""
    if text is None or text == "":
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            stamp = datetime.fromisoformat(text.replace("z", "Z"))
        except ValueError:
            fail(falcon.HTTP_400, "Invalid parameter",
                 f"{name} must be an RFC 3339 time or Unix seconds, got {text!r}")
        if stamp.tzinfo is None:
            fail(falcon.HTTP_400, "Invalid parameter", f"{name} needs a time zone (Z or +hh:mm), got {text!r}")
        return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1000
    if not math.isfinite(seconds) or not 0 <= seconds < 2**33:
        fail(falcon.HTTP_400, "Invalid parameter", f"{name} is out of range: {text!r}")
    return int(seconds * 1e9)


def _int(req: falcon.Request, name: str, default: int, high: int) -> int:
    raw = req.get_param(name)
    if raw is None:
        return default
    if not raw.isascii() or not raw.isdigit() or int(raw) > high:
        fail(falcon.HTTP_400, "Invalid parameter", f"{name} must be a whole number from 0 to {high}, got {raw!r}")
    return int(raw)


def application_query(req: falcon.Request, partition: str, states: Sequence[str]) -> ApplicationQuery:
    """The page and filters of a finished-applications list (``state`` narrows ``states``)."""
    state = req.get_param("state")
    if state is not None:
        chosen = [s for s in states if s.lower() == state.lower()]
        if not chosen:
            fail(falcon.HTTP_400, "Invalid parameter", f"state {state!r} is not one of {', '.join(states)}")
        states = chosen
    since, until = parse_time("since", req.get_param("since")), parse_time("until", req.get_param("until"))
    return ApplicationQuery(partition, tuple(states), req.get_param("queue"), req.get_param("user"), since, until,
                            _int(req, "limit", DEFAULT_LIMIT, MAX_LIMIT), _int(req, "offset", 0, 2**31))


def select_snapshots(apps: Sequence[ApplicationSnapshot], query: ApplicationQuery) -> list[ApplicationSnapshot]:
    """``query`` over the core's terminated applications (no store): newest first, then the page."""
    found = [a for a in apps if a.state in query.states
             and (query.queue is None or a.queue_name == query.queue) and (query.user is None or a.user == query.user)
             and (query.since is None or a.finished_time >= query.since)
             and (query.until is None or a.finished_time < query.until)]
    found.sort(key=lambda a: a.finished_time, reverse=True)
    return found[query.offset:query.offset + query.limit]


def stored(history: History, query: ApplicationQuery) -> list[ApplicationSnapshot]:
    return [snapshot(app) for app in _read(lambda: history.store.applications(query))]


def stored_one(history: History, partition: str, application_id: str) -> ApplicationSnapshot | None:
    found = _read(lambda: history.store.application(partition, application_id))
    return snapshot(found) if found is not None else None


def snapshot(app: FinishedApplication) -> ApplicationSnapshot:
    """A stored application as the REST layer pictures applications: its allocations are the ones it
    held (they are all released now)."""
    allocations = tuple(AllocationSnapshot(a.key, {}, a.allocated_at, a.allocated_at, Resource(a.resource), 0,
                                           a.node_id, app.application_id, a.placeholder, a.task_group, False, True,
                                           False) for a in app.allocations)
    return ApplicationSnapshot(app.application_id, app.partition, app.queue, app.user, tuple(app.groups), app.state,
                               app.submission_time, app.finished_time, Resource(app.used), Resource(app.max_used),
                               Resource(), (), allocations, app.rejected_message, tuple(app.state_log), dict(app.tags),
                               tuple(PlaceholderSnapshot(p.task_group, p.count, Resource(p.min_resource), p.replaced,
                                                         p.timed_out) for p in app.placeholders))


def cluster_samples(history: History) -> list[HistorySample]:
    return [HistorySample(s.timestamp, s.total_applications, s.total_containers)
            for s in _read(lambda: history.store.cluster_samples(RING_SIZE))]


def _read(read):
    try:
        return read()
    except HistoryUnavailable as error:
        fail(falcon.HTTP_503, "History store unavailable", str(error))


class Usage:
    """``GET /ws/v1/history/usage?groupBy=queue|user&since=&until=[&format=csv]``: per queue or per user,
    the applications that finished in the range, their core-hours and memory GiB-hours, and the
    percentiles of their wait from submission to the first allocation."""

    def __init__(self, history: History | None) -> None:
        self.history = history

    def on_get_usage(self, req, resp):
        if self.history is None:
            fail(falcon.HTTP_404, "History store disabled", "the scheduler runs without a history store")
        group_by = req.get_param("groupBy") or "queue"
        if group_by not in ("queue", "user"):
            fail(falcon.HTTP_400, "Invalid parameter", f"groupBy must be queue or user, got {group_by!r}")
        form = req.get_param("format") or "json"
        if form not in ("json", "csv"):
            fail(falcon.HTTP_400, "Invalid parameter", f"format must be json or csv, got {form!r}")
        since, until = parse_time("since", req.get_param("since")), parse_time("until", req.get_param("until"))
        if since is not None and until is not None and until < since:
            fail(falcon.HTTP_400, "Invalid parameter", "until is before since")
        rows = [_usage(row) for row in _read(lambda: self.history.store.usage(group_by, since, until))]
        if form == "csv":
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow([group_by if c == "key" else c for c in USAGE_COLUMNS])
            for row in rows:
                writer.writerow(["" if row[c] is None else row[c] for c in USAGE_COLUMNS])
            resp.content_type = "text/csv; charset=utf-8"
            resp.text = out.getvalue()
        else:
            resp.media = {"groupBy": group_by, "since": since, "until": until,
                          "usage": [{group_by if k == "key" else k: v for k, v in row.items()} for row in rows]}


def _usage(row: UsageRow) -> dict:
    return {"key": row.key, "applications": row.applications, "completed": row.by_state.get("Completed", 0),
            "failed": row.by_state.get("Failed", 0), "rejected": row.by_state.get("Rejected", 0),
            "coreHours": round(row.core_hours, 6), "memoryGiBHours": round(row.memory_gib_hours, 6),
            **{f"waitP{percent}Seconds": row.wait_percentile(percent) for percent in PERCENTILES}}


def with_store(report: HealthReport, history: History | None) -> HealthReport:
    """``report`` with a ``History store`` check when this scheduler writes one: failed while writes fail.
    A degraded store does not stop scheduling, so the report's overall health stays as it was."""
    if history is None or history.writer_status is None:
        return report
    status = history.writer_status()
    diagnosis = (f"writes fail: {status.last_error}; {status.buffered} records wait, {status.dropped} dropped"
                 if status.degraded else (f"{status.dropped} records dropped" if status.dropped else ""))
    check = HealthCheck(CHECK, not status.degraded, "Check that the history store takes writes", diagnosis)
    return HealthReport(report.healthy, (*report.checks, check))


def families(history: History):
    """A metrics provider: the writer's buffer, drops, writes, and whether it is degraded."""

    def provide(data):
        if history.writer_status is None:
            return
        status = history.writer_status()
        name = f"{metrics.NAMESPACE}_history"
        yield metrics.Family(f"{name}_degraded", "gauge", "1 while writes to the history store fail").add(
            [], 1 if status.degraded else 0)
        yield metrics.Family(f"{name}_buffered_records", "gauge", "records waiting to be written").add(
            [], status.buffered)
        yield metrics.Family(f"{name}_dropped_records_total", "counter",
                             "records lost because the history buffer was full").add([], status.dropped)
        yield metrics.Family(f"{name}_written_records_total", "counter", "records and events written").add(
            [], status.written)

    return provide
