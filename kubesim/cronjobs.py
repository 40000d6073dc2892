"""The CronJob controller of kube-controller-manager, for batch/v1.

A CronJob makes a Job from its ``jobTemplate`` at each time its ``schedule`` (five cron fields, or
``@hourly`` and the like) names, in ``timeZone`` (UTC when unset). The Job is named
``<cronjob>-<scheduled time in minutes since the epoch>``, with the template's labels and annotations,
``batch.kubernetes.io/cronjob-scheduled-timestamp`` and a controller owner reference. Of the times missed
since the last one (or since the CronJob was made) only the latest is run, and not when it is more than
``startingDeadlineSeconds`` late. ``concurrencyPolicy``: ``Allow`` runs Jobs side by side, ``Forbid``
skips a time while a Job still runs (and runs the latest missed one when it ends), ``Replace`` deletes the
running Jobs first; ``suspend`` makes none. Finished Jobs beyond ``successfulJobsHistoryLimit`` and
``failedJobsHistoryLimit`` are deleted, oldest first. The status lists the ``active`` Jobs, with
``lastScheduleTime`` and ``lastSuccessfulTime``.

Schedules are read on kubesim's time: the wall clock running ``1/time_factor`` times as fast (the
factor that shortens the kubelets' run times; 0 counts as 0.001), so with 0.01 a ``* * * * *`` CronJob
makes a Job every 0.6 s. The times it writes are those of that clock.
"""

from __future__ import annotations

import calendar
import datetime as dt
import logging
import threading
import time
import zoneinfo

from croniter import CroniterBadDateError, croniter

from kubesim import errors
from kubesim.api import DeleteOptions
from kubesim.deployments import OwnerController, owner_ref
from kubesim.jobs import PREDEFINED_SCHEDULES
from kubesim.resources import CRON_JOB, JOB
from kubesim.serviceaccounts import controller_user
from kubesim.store import Store, clone

log = logging.getLogger(__name__)
SCHEDULED_TIMESTAMP = "batch.kubernetes.io/cronjob-scheduled-timestamp"
USER = controller_user("cronjob-controller")
MIN_TIME_FACTOR = 0.001
_WAKE = object()  # marks an item of the controller's own timer, besides (namespace, name) of a change
_WAKE_MARGIN = 0.001  # real seconds past a scheduled time, so the clock has reached it when the sync runs


class ScheduleClock:
    """Wall time running ``1/time_factor`` times as fast from the moment it is made (or its factor changed)."""

    def __init__(self, time_factor: float) -> None:
        self._lock = threading.RLock()
        self._origin_real = self._origin = time.time()
        self._factor = max(time_factor, MIN_TIME_FACTOR)

    @property
    def time_factor(self) -> float:
        return self._factor

    @time_factor.setter
    def time_factor(self, factor: float) -> None:
        with self._lock:
            self._origin, self._origin_real = self.at(time.time()), time.time()
            self._factor = max(factor, MIN_TIME_FACTOR)

    def at(self, wall: float) -> float:
        """This clock's time when the wall clock read ``wall``."""
        with self._lock:
            return self._origin + (wall - self._origin_real) / self._factor

    def now(self) -> float:
        return self.at(time.time())

    def real_seconds(self, seconds: float) -> float:
        return seconds * self._factor


class CronJobController(OwnerController):
    owner_kind, dependent_kind = CRON_JOB, JOB

    def __init__(self, store: Store, api, time_factor: float = 1.0) -> None:
        super().__init__("kubesim-cronjob-controller", store, api)
        self.clock = ScheduleClock(time_factor)
        self._wakes: dict[tuple[str, str], float] = {}  # (namespace, name) -> the scheduled time it wakes at

    @property
    def time_factor(self) -> float:
        return self.clock.time_factor

    @time_factor.setter
    def time_factor(self, factor: float) -> None:
        """Change how fast schedules run from now on (the CronJobs' next times are worked out again)."""
        with self._store.lock:
            self.clock.time_factor = factor
            for key in list(self._wakes):
                del self._wakes[key]
                self.schedule(key)

    def handle(self, item) -> None:
        if item[0] is _WAKE:
            _, at, *key = item
            item = tuple(key)
            if self._wakes.get(item) == at:  # else a later wake was set up since (the time factor changed)
                del self._wakes[item]
        namespace, name = item
        with self._store.lock:
            cron_job = self._store.find(CRON_JOB, namespace, name)
            if cron_job is None or cron_job["spec"].get("suspend"):
                self._wakes.pop(item, None)  # an update that resumes it syncs it again
            if cron_job is None:
                return
            spec = cron_job["spec"]
            jobs = self._dependents(cron_job)
            active = [job for job in jobs if _finished(job) is None and not job["metadata"].get("deletionTimestamp")]
            status = clone(cron_job.get("status") or {})
            now = self.clock.now()
            zone = _zone(spec.get("timeZone"))
            if not cron_job["metadata"].get("deletionTimestamp") and not spec.get("suspend"):
                latest, following = _around(spec["schedule"], now, zone)
                created = self._run_due(cron_job, status, active, now, latest, zone) if latest is not None else None
                if created is not None:
                    jobs.append(created)
                    active.append(created)
                if following is not None and self._wakes.get(item) != following:  # one wake per time
                    self._wakes[item] = following
                    self.schedule((_WAKE, following, *item), self.clock.real_seconds(following - now) + _WAKE_MARGIN)
            self._trim_history(cron_job, jobs)
            self._write(cron_job, status, jobs, active)

    def _run_due(self, cron_job: dict, status: dict, active: list[dict], now: float, due: float,
                 zone) -> dict | None:
        """The Job of ``due``, the latest time of the schedule, unless run already or the deadline or
        concurrency forbids it."""
        spec, meta = cron_job["spec"], cron_job["metadata"]
        last = status.get("lastScheduleTime")
        since = _seconds(last) if last else self.clock.at(_seconds(meta["creationTimestamp"]))
        if due <= since:
            return None
        deadline = spec.get("startingDeadlineSeconds")
        if deadline is not None and now - due > deadline:
            log.info("cronjob %s/%s: missed the time %s by more than its starting deadline", meta["namespace"],
                     meta["name"], _rfc3339(due))
            return None
        policy = spec.get("concurrencyPolicy", "Allow")
        if active and policy == "Forbid":
            return None  # looked at again when the running Job ends
        if policy == "Replace":
            for job in active:
                self._delete(job)
            active.clear()
        try:
            created = self._api.create(JOB, meta["namespace"], self._job(cron_job, due, zone), user=USER)[1]
        except errors.ApiError as error:
            if error.code != 409:  # a Job of that name exists: that time was run before
                self._retry_later(cron_job, error, f"Error creating job: {error.message}")
                return None
            created = None
        status["lastScheduleTime"] = _rfc3339(due)
        return created

    def _job(self, cron_job: dict, due: float, zone) -> dict:
        meta, template = cron_job["metadata"], clone(cron_job["spec"]["jobTemplate"])
        template_meta = template.get("metadata") or {}
        scheduled = dt.datetime.fromtimestamp(due, zone).isoformat().replace("+00:00", "Z")
        return {"apiVersion": "batch/v1", "kind": "Job", "spec": template["spec"],
                "metadata": {"name": f"{meta['name']}-{int(due) // 60}", "labels": template_meta.get("labels") or {},
                             "annotations": {**(template_meta.get("annotations") or {}), SCHEDULED_TIMESTAMP: scheduled},
                             "ownerReferences": [owner_ref(cron_job, CRON_JOB)]}}

    def _delete(self, job: dict) -> None:
        try:  # as the controller does, the Job's pods with it
            self._api.delete(JOB, job["metadata"]["namespace"], job["metadata"]["name"],
                             DeleteOptions(propagation="Background"))
        except errors.ApiError:
            pass  # already gone

    def _trim_history(self, cron_job: dict, jobs: list[dict]) -> None:
        spec = cron_job["spec"]
        for outcome, limit in (("Complete", spec.get("successfulJobsHistoryLimit")),
                               ("Failed", spec.get("failedJobsHistoryLimit"))):
            if limit is None:
                continue
            ended = sorted((job for job in jobs if _finished(job) == outcome and not job["metadata"].get(
                "deletionTimestamp")), key=lambda job: (job.get("status") or {}).get("startTime") or "")
            for job in ended[:max(len(ended) - limit, 0)]:
                self._delete(job)
                jobs.remove(job)

    def _write(self, cron_job: dict, status: dict, jobs: list[dict], active: list[dict]) -> None:
        before = {ref.get("uid"): ref for ref in status.get("active") or ()}
        refs = [before.get(job["metadata"]["uid"]) or _reference(job)
                for job in sorted(active, key=lambda job: job["metadata"]["name"])]  # by scheduled time
        if refs:
            status["active"] = refs
        else:
            status.pop("active", None)
        succeeded = [(job.get("status") or {}).get("completionTime") for job in jobs if _finished(job) == "Complete"]
        latest = max((t for t in succeeded if t), default=None)
        if latest and latest > status.get("lastSuccessfulTime", ""):
            status["lastSuccessfulTime"] = latest
        status.pop("observedGeneration", None)  # a CronJob's status has none
        if status != cron_job.get("status"):
            updated = clone(cron_job)
            updated["status"] = status
            self._store.replace(CRON_JOB, cron_job["metadata"]["namespace"], cron_job["metadata"]["name"], updated,
                                None)


def _around(schedule: str, now: float, zone) -> tuple[float | None, float | None]:
    """The schedule's latest time up to ``now`` and its next one (None for a time it never reaches, such as
    30 February's)."""
    times = []
    for step in ("get_prev", "get_next"):
        start = croniter(PREDEFINED_SCHEDULES.get(schedule, schedule), dt.datetime.fromtimestamp(now, zone))
        try:
            times.append(getattr(start, step)(float))
        except CroniterBadDateError:
            times.append(None)
    return times[0], times[1]


def _zone(name: str | None):
    return zoneinfo.ZoneInfo(name) if name else dt.UTC


def _finished(job: dict) -> str | None:
    """``Complete`` or ``Failed`` once the Job has ended, else None."""
    for condition in (job.get("status") or {}).get("conditions") or ():
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return condition["type"]
    return None


def _reference(job: dict) -> dict:
    meta = job["metadata"]
    return {"kind": "Job", "namespace": meta["namespace"], "name": meta["name"], "uid": meta["uid"],
            "apiVersion": "batch/v1", "resourceVersion": meta["resourceVersion"]}


def _rfc3339(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def _seconds(timestamp: str) -> float:
    return calendar.timegm(time.strptime(timestamp[:19], "%Y-%m-%dT%H:%M:%S"))
