"""The CronJob controller, through the official client, on a kubesim whose time runs a hundred times as
fast (a schedule's minute lasts 0.6 s): Jobs made from the template at the scheduled times, their names,
labels, annotations and owner references, the status, each concurrency policy, suspension, history limits,
deletion with the Jobs and their pods, validation, the time factor changed while running, and the switch."""

from __future__ import annotations

import logging

import pytest
from kubernetes import client, watch

from kubesim import KubeSim
from kubesim.cronjobs import SCHEDULED_TIMESTAMP
from tests.kubesim.raw import post
from tests.kubesim.test_jobs import bind_all
from tests.waiting import wait_for

MINUTE = 60


def cron_job(name: str, schedule: str = "* * * * *", command: tuple[str, ...] = ("sleep", "30"), **spec) -> dict:
    return {"metadata": {"name": name},
            "spec": {"schedule": schedule, "jobTemplate": {
                "metadata": {"labels": {"app": name}, "annotations": {"note": "kept"}},
                "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": {
                    "restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox",
                                                              "command": list(command)}]}}}}, **spec}}


def job_names(sim) -> list[str]:
    return sorted(j["metadata"]["name"] for j in sim.objects("jobs", "default"))


def minute_of(job_name: str) -> int:
    return int(job_name.rsplit("-", 1)[1])


def made_jobs(sim) -> list[str]:
    """The names of the Jobs made from now on, in order."""
    made: list[str] = []
    sim.store.listeners.append(lambda event: made.append(event.new["metadata"]["name"])
                               if event.kind.plural == "jobs" and event.type == "ADDED" else None)
    return made


def test_jobs_are_made_from_the_template_at_each_scheduled_time(sim, batch):
    made = made_jobs(sim)
    created = batch.create_namespaced_cron_job("default", cron_job("tick"))
    assert (created.spec.concurrency_policy, created.spec.suspend, created.spec.successful_jobs_history_limit,
            created.spec.failed_jobs_history_limit) == ("Allow", False, 3, 1)
    wait_for(lambda: len(made) >= 2, timeout=5, message="two Jobs, a scheduled minute apart")
    assert minute_of(made[1]) == minute_of(made[0]) + 1
    job = batch.read_namespaced_job(made[0], "default")
    assert job.metadata.labels == {"app": "tick"}
    assert job.metadata.annotations == {"note": "kept", SCHEDULED_TIMESTAMP: job.metadata.annotations[
        SCHEDULED_TIMESTAMP]}
    assert job.metadata.annotations[SCHEDULED_TIMESTAMP].endswith(":00Z")
    [owner] = job.metadata.owner_references
    assert (owner.api_version, owner.kind, owner.name, owner.uid, owner.controller, owner.block_owner_deletion) == (
        "batch/v1", "CronJob", "tick", created.metadata.uid, True, True)
    wait_for(lambda: any(p["metadata"]["labels"].get("job-name") == made[0] for p in sim.objects("pods")),
             timeout=5, message="the Job controller makes the Job's pod")

    def status_lists_them() -> bool:
        status = batch.read_namespaced_cron_job("tick", "default").status
        return status.active is not None and len(status.active) >= 2 and status.last_schedule_time is not None
    wait_for(status_lists_them, timeout=5, message="the active Jobs and the last scheduled time in the status")
    status = batch.read_namespaced_cron_job("tick", "default").status
    assert [(ref.kind, ref.api_version) for ref in status.active] == [("Job", "batch/v1")] * len(status.active)
    assert [ref.name for ref in status.active] == sorted(ref.name for ref in status.active)


def test_forbid_skips_times_while_a_job_runs_then_runs_the_latest_missed(sim, batch, sim_core):
    made = made_jobs(sim)
    batch.create_namespaced_cron_job("default", cron_job("one", concurrencyPolicy="Forbid"))
    wait_for(lambda: made, timeout=5, message="the first Job")
    first_minute = minute_of(made[0])
    wait_for(lambda: sim.cronjobs.clock.now() >= (first_minute + 3) * MINUTE, timeout=5,
             message="three more scheduled times")
    assert made == [made[0]]
    bind_all(sim, sim_core)  # its pod runs, and ends after its 30 s
    wait_for(lambda: len(made) == 2, timeout=5, message="a Job once the first has ended")
    assert minute_of(made[1]) >= first_minute + 3  # the latest time missed, not the next one after the first


def test_replace_deletes_the_running_job_first(sim, batch):
    made = made_jobs(sim)
    batch.create_namespaced_cron_job("default", cron_job("swap", concurrencyPolicy="Replace"))
    wait_for(lambda: len(made) >= 2, timeout=5, message="a second Job")
    wait_for(lambda: made[0] not in job_names(sim), timeout=5, message="the first Job gone")
    active = batch.read_namespaced_cron_job("swap", "default").status.active or []
    assert len(active) <= 1


def test_a_suspended_cronjob_makes_no_job_until_resumed(sim, batch):
    made = made_jobs(sim)
    batch.create_namespaced_cron_job("default", cron_job("paused", suspend=True))
    start = sim.cronjobs.clock.now()
    wait_for(lambda: sim.cronjobs.clock.now() >= start + 2 * MINUTE, timeout=5, message="two scheduled times")
    assert made == []
    batch.patch_namespaced_cron_job("paused", "default", {"spec": {"suspend": False}})
    wait_for(lambda: made, timeout=5, message="a Job once resumed")


def test_finished_jobs_beyond_the_history_limits_are_deleted(sim, batch, sim_core):
    made = made_jobs(sim)
    batch.create_namespaced_cron_job("default", cron_job("short", command=("sleep", "1"),
                                                         successfulJobsHistoryLimit=1))

    def complete_jobs() -> list[str]:
        return [j["metadata"]["name"] for j in sim.objects("jobs")
                if any(c["type"] == "Complete" for c in (j.get("status") or {}).get("conditions") or ())]

    def three_done() -> bool:
        bind_all(sim, sim_core)
        return len(made) >= 4 and minute_of(made[2]) < min((minute_of(n) for n in complete_jobs()), default=0)
    wait_for(three_done, timeout=10, message="three Jobs made, only later ones kept once complete")
    assert len(complete_jobs()) <= 1
    assert batch.read_namespaced_cron_job("short", "default").status.last_successful_time is not None


def test_deleting_a_cronjob_deletes_its_jobs_and_their_pods(sim, batch):
    made = made_jobs(sim)
    batch.create_namespaced_cron_job("default", cron_job("gone"))
    wait_for(lambda: made and sim.objects("pods"), timeout=5, message="a Job and its pod")
    batch.delete_namespaced_cron_job("gone", "default")
    wait_for(lambda: not sim.objects("jobs") and not sim.objects("pods"), timeout=5,
             message="the Jobs and their pods collected")


@pytest.mark.parametrize(("spec", "message"), [
    ({"schedule": None}, "spec.schedule: Required value"),
    ({"schedule": "* * * *"}, 'spec.schedule: Invalid value: "* * * *": expected exactly 5 fields, found 4'),
    ({"schedule": "61 * * * *"}, 'spec.schedule: Invalid value: "61 * * * *"'),
    ({"schedule": "TZ=UTC * * * * *"}, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"),
    ({"timeZone": "Mars/Olympus"}, 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone'),
    ({"concurrencyPolicy": "Sometimes"}, 'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: '
                                         '"Allow", "Forbid", "Replace"'),
    ({"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}},
     "spec.jobTemplate.spec.template.spec.restartPolicy"),
])
def test_an_invalid_cronjob_is_refused_and_nothing_is_made(sim, spec, message):
    body = cron_job("bad")
    body["spec"].update(spec)
    body["spec"] = {k: v for k, v in body["spec"].items() if v is not None}
    status, answer = post(f"{sim.url}/apis/batch/v1/namespaces/default/cronjobs", body)
    assert (status, answer["reason"]) == (422, "Invalid")
    assert answer["message"].startswith('CronJob.batch "bad" is invalid: ') and message in answer["message"]
    assert sim.objects("cronjobs") == []


@pytest.mark.parametrize(("spec", "message"), [
    ({"timeZone": 1}, "number 1 into Go struct field CronJobSpec.spec.timeZone of type string"),
    ({"jobTemplate": {"metadata": {"labels": ["app"]}, "spec": {}}}, "array into Go struct field ObjectMeta.spec."
     "jobTemplate.metadata.labels of type map[string]string"),
    ({"jobTemplate": {"spec": {"template": {"spec": {"tolerations": "all"}}}}}, "string into Go struct field PodSpec."
     "spec.jobTemplate.spec.template.spec.tolerations of type []v1.Toleration"),
])
def test_a_cronjob_that_cannot_be_decoded_is_refused_with_400(sim, spec, message):
    body = cron_job("bad")
    body["spec"].update(spec)
    status, answer = post(f"{sim.url}/apis/batch/v1/namespaces/default/cronjobs", body)
    assert (status, answer["reason"]) == (400, "BadRequest")
    assert answer["message"] == f'CronJob in version "v1" cannot be handled as a CronJob: json: cannot unmarshal {message}'
    assert sim.objects("cronjobs") == []


def test_a_schedule_that_never_comes_makes_no_job_and_no_error(sim, batch, caplog):
    made = made_jobs(sim)
    batch.create_namespaced_cron_job("default", cron_job("never", "0 0 30 2 *"))  # accepted, as kube-apiserver does
    batch.create_namespaced_cron_job("default", cron_job("tick"))
    wait_for(lambda: len(made) >= 2, timeout=5, message="two Jobs of the other CronJob")
    assert all(name.startswith("tick-") for name in made)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []


def test_a_name_longer_than_52_characters_is_refused(sim):
    status, answer = post(f"{sim.url}/apis/batch/v1/namespaces/default/cronjobs", cron_job("c" * 53))
    assert status == 422 and "must be no more than 52 characters" in answer["message"]


def test_predefined_schedules_and_time_zones_are_read():
    with KubeSim(time_factor=1.0) as sim, sim.api_client() as api:
        batch = client.BatchV1Api(api)
        batch.create_namespaced_cron_job("default", cron_job("hourly", "@hourly", timeZone="Asia/Kolkata"))
        made = made_jobs(sim)
        sim.cronjobs.time_factor = 0.001  # an hour lasts 3.6 s
        wait_for(lambda: made, timeout=10, message="a Job at the next hour")
        stamp = batch.read_namespaced_job(made[0], "default").metadata.annotations[SCHEDULED_TIMESTAMP]
        assert stamp.endswith(":00:00+05:30")  # an hour of that zone, at half past the hour in UTC
        assert minute_of(made[0]) % 60 == 30


def test_the_new_kinds_are_discovered_watched_listed_and_their_status_written(sim_api, batch):
    resources = {r.name: r for r in client.AppsV1Api(sim_api).get_api_resources().resources}
    resources.update({r.name: r for r in batch.get_api_resources().resources})
    assert (resources["statefulsets"].short_names, resources["daemonsets"].short_names,
            resources["cronjobs"].short_names) == (["sts"], ["ds"], ["cj"])
    assert {"statefulsets/status", "daemonsets/status", "cronjobs/status"} <= resources.keys()
    seen = watch.Watch().stream(batch.list_namespaced_cron_job, "default", timeout_seconds=5)
    batch.create_namespaced_cron_job("default", cron_job("paused", suspend=True))
    assert next(seen)["type"] == "ADDED"
    batch.patch_namespaced_cron_job_status("paused", "default", {"status": {"lastScheduleTime": "2026-01-01T00:00:00Z"}})
    assert batch.list_namespaced_cron_job("default", label_selector="!missing").items[0].status.last_schedule_time \
        .isoformat() == "2026-01-01T00:00:00+00:00"
    assert batch.list_namespaced_cron_job("default", label_selector="missing").items == []
