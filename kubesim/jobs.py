"""The Job controller of kube-controller-manager, for batch/v1 Jobs in NonIndexed mode.

A Job runs ``parallelism`` pods at a time until ``completions`` of them succeed (with no completions,
until one succeeds and none is left running); each pod failure counts against ``backoffLimit``. Pods are
named ``<job>-<5 random characters>``, carry the Job's selector labels (``batch.kubernetes.io/job-name``,
``job-name``, ``batch.kubernetes.io/controller-uid``, ``controller-uid``) and a controller owner
reference with ``blockOwnerDeletion``. The status shows active, ready, terminating, succeeded and failed
pods, ``startTime``, ``completionTime`` and the conditions kube-controller-manager 1.34 writes
(``SuccessCriteriaMet`` then ``Complete``; ``FailureTarget`` then ``Failed``). Suspension, indexed
completion, pod failure policies and deadlines are not played.

A CronJob's defaults and validation (its schedule read with croniter) are here too; its controller is in
``kubesim.cronjobs``.
"""

from __future__ import annotations

import logging
import zoneinfo

from croniter import croniter

from kubesim import errors
from kubesim.deployments import check_decodable
from kubesim.resources import CRON_JOB, JOB, POD
from kubesim.serviceaccounts import controller_user
from kubesim.store import Event, Store, clone, now_rfc3339
from kubesim.worker import Worker

log = logging.getLogger(__name__)
JOB_NAME, CONTROLLER_UID = "batch.kubernetes.io/job-name", "batch.kubernetes.io/controller-uid"
RETRY_SECONDS = 1.0
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")
CRON_JOB_NAME_LIMIT = 52
# robfig/cron's descriptors (kube-apiserver refuses its "@every").
PREDEFINED_SCHEDULES = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                        "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_TERMINAL = ("Succeeded", "Failed")


def default_job(job: dict, uid: str) -> None:
    """The API server's defaults and generated selector for a new Job (before it is stored)."""
    spec = job["spec"]
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
    spec.setdefault("parallelism", 1)
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("suspend", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    if not spec.get("manualSelector"):
        name = job["metadata"]["name"]
        spec["selector"] = {"matchLabels": {CONTROLLER_UID: uid}}
        template_meta = spec["template"].setdefault("metadata", {})
        template_meta["labels"] = {**(template_meta.get("labels") or {}), CONTROLLER_UID: uid, JOB_NAME: name,
                                   "controller-uid": uid, "job-name": name}
    job["status"] = {}


def validate_job(job: dict) -> list[tuple[str, str]]:
    """Field errors of a Job (the API server's validation, for what the controller reads)."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [("spec.template", "Required value")]
    template = spec.get("template")
    pod_spec = template.get("spec") if isinstance(template, dict) else None
    if not isinstance(pod_spec, dict):
        return [("spec.template.spec", "Required value")]
    causes = []
    template_meta = template.get("metadata")
    if template_meta is not None and (not isinstance(template_meta, dict) or not _string_map(
            template_meta.get("labels")) or not _string_map(template_meta.get("annotations"))):
        causes.append(("spec.template.metadata", "Invalid value: labels and annotations must map strings to strings"))
    if not pod_spec.get("containers"):
        causes.append(("spec.template.spec.containers", "Required value"))
    if pod_spec.get("restartPolicy") not in ("OnFailure", "Never"):
        causes.append(("spec.template.spec.restartPolicy", 'Required value: valid values: "OnFailure", "Never"'))
    for field in ("parallelism", "completions", "backoffLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            causes.append((f"spec.{field}", f"Invalid value: {value!r}: must be greater than or equal to 0"))
    return causes


def default_cron_job(cron_job: dict) -> None:
    """The API server's defaults for a new CronJob (before validation)."""
    spec = cron_job.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("concurrencyPolicy", "Allow")
        spec.setdefault("suspend", False)
        spec.setdefault("successfulJobsHistoryLimit", 3)
        spec.setdefault("failedJobsHistoryLimit", 1)


def validate_cron_job(cron_job: dict) -> list[tuple[str, str]]:
    """Field errors of a CronJob: its schedule, time zone and policies, and its Job template as a Job's."""
    spec = cron_job.get("spec")
    if not isinstance(spec, dict):
        return [("spec.schedule", "Required value")]
    check_decodable(CRON_JOB, spec)
    causes = []
    name = (cron_job.get("metadata") or {}).get("name") or ""
    if len(name) > CRON_JOB_NAME_LIMIT:  # its Jobs' names add 11 characters, and a label value has 63
        causes.append(("metadata.name", f'Invalid value: "{name}": must be no more than {CRON_JOB_NAME_LIMIT} '
                                        "characters"))
    causes += schedule_errors(spec.get("schedule"), spec.get("timeZone"))
    if spec.get("concurrencyPolicy") not in CONCURRENCY_POLICIES:
        supported = ", ".join(f'"{p}"' for p in CONCURRENCY_POLICIES)
        causes.append(("spec.concurrencyPolicy",
                       f'Unsupported value: "{spec.get("concurrencyPolicy")}": supported values: {supported}'))
    for field in ("startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            causes.append((f"spec.{field}", f"Invalid value: {value!r}: must be greater than or equal to 0"))
    template = spec.get("jobTemplate")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        return [*causes, ("spec.jobTemplate.spec.template.spec", "Required value")]
    return causes + [(f"spec.jobTemplate.{field}", message) for field, message in validate_job(template)]


def schedule_errors(schedule, time_zone) -> list[tuple[str, str]]:
    """A CronJob's schedule as kube-apiserver reads it: five fields or a predefined ``@`` schedule."""
    if not isinstance(schedule, str) or not schedule:
        return [("spec.schedule", "Required value")]
    causes = []
    if "TZ" in schedule:
        causes.append(("spec.schedule", f'Invalid value: "{schedule}": cannot use TZ or CRON_TZ in schedule, '
                                        "use timeZone field instead"))
    elif not (schedule.startswith("@") and schedule in PREDEFINED_SCHEDULES or len(schedule.split()) == 5
              and croniter.is_valid(schedule)):
        fields = len(schedule.split())
        reason = f"expected exactly 5 fields, found {fields}" if fields != 5 and not schedule.startswith("@") \
            else "unrecognized or invalid"
        causes.append(("spec.schedule", f'Invalid value: "{schedule}": {reason}: {schedule}'))
    if time_zone is not None:
        try:
            zoneinfo.ZoneInfo(time_zone)
        except (ValueError, TypeError, zoneinfo.ZoneInfoNotFoundError):
            causes.append(("spec.timeZone", f'Invalid value: "{time_zone}": unknown time zone {time_zone}'))
    return causes


class JobController(Worker):
    def __init__(self, store: Store, api) -> None:
        super().__init__("kubesim-job-controller")
        self._store = store
        self._api = api
        self._finished: dict[str, tuple[set[str], set[str]]] = {}  # job uid -> (succeeded, failed) pod uids
        self._owned: dict[str, set[str]] = {}  # job uid -> the names of the pods it controls

    def start(self) -> None:
        with self._store.lock:
            for pod in self._store.list(POD)[0]:
                owner = _controller(pod["metadata"])
                if owner is not None:
                    self._owned.setdefault(owner["uid"], set()).add(pod["metadata"]["name"])
            for job in self._store.list(JOB)[0]:
                self.schedule((job["metadata"]["namespace"], job["metadata"]["name"]))
            self._store.listeners.append(self._on_event)
        super().start()

    def _on_event(self, event: Event) -> None:
        """Called under the store lock: note the Jobs to look at, and their pods' ends as they happen."""
        meta = event.new["metadata"]
        if event.kind is JOB:
            if event.type == "DELETED":
                self._finished.pop(meta["uid"], None)
                self._owned.pop(meta["uid"], None)
            elif event.old is None or event.old.get("spec") != event.new.get("spec"):
                self.schedule((meta["namespace"], meta["name"]))
            return
        if event.kind is not POD:
            return
        owner = _controller(meta)
        if owner is None:
            return
        owned = self._owned.setdefault(owner["uid"], set())
        if event.type == "DELETED":
            owned.discard(meta["name"])
        else:
            owned.add(meta["name"])
        status = event.new.get("status")
        phase = status.get("phase") if isinstance(status, dict) else None
        if event.type != "DELETED" and phase in _TERMINAL:
            succeeded, failed = self._finished.setdefault(owner["uid"], (set(), set()))
            (succeeded if phase == "Succeeded" else failed).add(meta["uid"])
        self.schedule((meta["namespace"], owner["name"]))

    def handle(self, item) -> None:
        namespace, name = item
        with self._store.lock:
            job = self._store.find(JOB, namespace, name)
            if job is None:
                return
            uid = job["metadata"]["uid"]
            pods = self._pods(job)
            succeeded, failed = self._finished.setdefault(uid, (set(), set()))
            status = clone(job.get("status") or {})
            done = {c.get("type") for c in status.get("conditions") or () if c.get("status") == "True"}
            running = [p for p in pods if (p.get("status") or {}).get("phase") not in _TERMINAL]
            active = [p for p in running if not p["metadata"].get("deletionTimestamp")]
            spec = job["spec"]
            count = {"succeeded": max(len(succeeded), status.get("succeeded", 0)),
                     "failed": max(len(failed), status.get("failed", 0))}
            if not done & {"Complete", "Failed"} and not job["metadata"].get("deletionTimestamp"):
                self._drive(job, status, active, count, spec)
            self._write_status(job, status, count)

    def _pods(self, job: dict) -> list[dict]:
        namespace, uid = job["metadata"]["namespace"], job["metadata"]["uid"]
        found = (self._store.find(POD, namespace, name) for name in self._owned.get(uid, ()))
        return [pod for pod in found if pod is not None and (_controller(pod["metadata"]) or {}).get("uid") == uid]

    def _drive(self, job: dict, status: dict, active: list[dict], count: dict, spec: dict) -> None:
        now = now_rfc3339()
        status.setdefault("startTime", now)
        completions = spec.get("completions")
        if count["failed"] > spec.get("backoffLimit", 6):
            for pod in active:
                self._delete_pod(pod)
            active.clear()
            _finish(status, ("FailureTarget", "Failed"), "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit", now)
            return
        if (count["succeeded"] >= completions if completions is not None
                else count["succeeded"] > 0 and not active):
            _finish(status, ("SuccessCriteriaMet", "Complete"), "CompletionsReached",
                    "Reached expected number of succeeded pods", now)
            status["completionTime"] = now
            return
        wanted = spec.get("parallelism", 1)
        if completions is not None:
            wanted = min(wanted, completions - count["succeeded"])
        elif count["succeeded"]:
            wanted = 0
        if spec.get("suspend"):
            wanted = 0
        for _ in range(wanted - len(active)):
            created = self._create_pod(job)
            if created is None:
                break
            active.append(created)

    def _create_pod(self, job: dict) -> dict | None:
        meta = job["metadata"]
        template = clone(job["spec"]["template"])
        pod_meta = template.get("metadata") or {}
        pod = {"apiVersion": "v1", "kind": "Pod", "spec": template["spec"],
               "metadata": {"generateName": f"{meta['name']}-", "labels": pod_meta.get("labels") or {},
                            "annotations": pod_meta.get("annotations") or {},
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": meta["name"],
                                                 "uid": meta["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]}}
        if not pod["metadata"]["annotations"]:
            del pod["metadata"]["annotations"]
        try:
            return self._api.create(POD, meta["namespace"], pod, user=controller_user("job-controller"))[1]
        except errors.ApiError as error:  # as kube-controller-manager, retry later (its event: FailedCreate)
            log.info("job %s/%s: pod not created: %s", meta["namespace"], meta["name"], error.message)
            self.schedule((meta["namespace"], meta["name"]), RETRY_SECONDS)
            return None

    def _delete_pod(self, pod: dict) -> None:
        try:
            self._api.delete(POD, pod["metadata"]["namespace"], pod["metadata"]["name"])
        except errors.ApiError:
            pass  # already gone

    def _write_status(self, job: dict, status: dict, count: dict) -> None:
        running = [p for p in self._pods(job) if (p.get("status") or {}).get("phase") not in _TERMINAL]
        active = [p for p in running if not p["metadata"].get("deletionTimestamp")]
        for field, value in (("active", len(active)), *count.items()):
            if value:
                status[field] = value
            else:
                status.pop(field, None)
        status["ready"] = sum(1 for p in active if _ready(p))
        status["terminating"] = len(running) - len(active)
        status["uncountedTerminatedPods"] = {}
        if status != job.get("status"):
            updated = clone(job)
            updated["status"] = status
            self._store.replace(JOB, job["metadata"]["namespace"], job["metadata"]["name"], updated, None)


def _string_map(value) -> bool:
    return value is None or (isinstance(value, dict) and all(isinstance(v, str) for v in value.values()))


def _controller(meta: dict) -> dict | None:
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True and ref.get("kind") == "Job" \
                and ref.get("apiVersion") == "batch/v1":
            return ref
    return None


def _ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def _finish(status: dict, types: tuple[str, str], reason: str, message: str, now: str) -> None:
    status["conditions"] = [*(status.get("conditions") or ()),
                            *({"type": t, "status": "True", "reason": reason, "message": message,
                               "lastProbeTime": now, "lastTransitionTime": now} for t in types)]
