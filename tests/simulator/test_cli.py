"""``yunikorn-scheduler simulate`` end to end: the shipped sample, compare mode, importers, bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actors.cli import main as scheduler_main
from simulate.cli import main
from simulate.export import trace_lines
from simulate.inputs import read_trace

SAMPLES = Path(__file__).resolve().parents[2] / "simulate" / "samples"
QUEUES = SAMPLES / "queues.yaml"
CLUSTER = SAMPLES / "cluster.yaml"


def small_trace(tmp_path):
    lines = SAMPLES.joinpath("trace.jsonl").read_text().splitlines()[:40]
    path = tmp_path / "trace.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_scheduler_command_runs_a_simulation_with_compare(tmp_path, capsys):
    out = tmp_path / "report"
    code = scheduler_main(["simulate", "--queues", str(QUEUES), "--cluster", str(CLUSTER), "--trace",
                           str(small_trace(tmp_path)), "--report", str(out), "--compare",
                           str(SAMPLES / "queues-fifo.yaml"), "--seed", "3"])
    assert code == 0
    document = json.loads((out / "report.json").read_text())
    assert set(document["configurations"]) == {"queues", "queues-fifo"}
    for summary in document["configurations"].values():
        assert summary["pods"] > 0 and summary["makespan"] > 0 and set(summary["queues"]) >= {"root.prod"}
    captured = capsys.readouterr()
    assert "simulated s per wall s" in captured.out
    assert "simulated" in captured.err and "wall" in captured.err  # the progress bar


def test_a_run_is_the_same_in_another_process(tmp_path):
    """Determinism does not hang on the interpreter's string hashing."""
    trace = small_trace(tmp_path)

    def placements(hash_seed):
        out = tmp_path / f"r{hash_seed}"
        subprocess.run([sys.executable, "-m", "actors.cli", "simulate", "--queues", str(QUEUES), "--cluster",
                        str(CLUSTER), "--trace", str(trace), "--report", str(out), "--quiet"], check=True,
                       env={**os.environ, "PYTHONHASHSEED": str(hash_seed)}, capture_output=True)
        document = json.loads((out / "report.json").read_text())
        return document["placements"], [(p["time"], p["victim"]) for p in document["preemptions"]]

    assert placements(1) == placements(2)


def test_a_malformed_trace_exits_non_zero_naming_line_and_field(tmp_path, capsys):
    trace = small_trace(tmp_path)
    lines = trace.read_text().splitlines()
    lines[4] = lines[4].replace('"cpu":', '"cpu":"two",  "was":')
    trace.write_text("\n".join(lines) + "\n")
    code = main(["--queues", str(QUEUES), "--cluster", str(CLUSTER), "--trace", str(trace), "--report",
                 str(tmp_path / "out")])
    assert code == 2
    assert f"{trace}:5: pods[0].was: unknown field" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_malformed_queue_configuration_or_setting_is_refused(tmp_path, capsys):
    bad = tmp_path / "queues.yaml"
    bad.write_text("partitions:\n  - name: default\n    queues:\n      - name: root\n        colour: red\n")
    assert main(["--queues", str(bad), "--cluster", str(CLUSTER), "--trace", str(small_trace(tmp_path)),
                 "--report", str(tmp_path / "out")]) == 2
    assert f"{bad}: " in capsys.readouterr().err
    assert main(["--queues", str(QUEUES), "--cluster", str(CLUSTER), "--trace", str(small_trace(tmp_path)),
                 "--report", str(tmp_path / "out"), "--set", "service.schedulingInterval=soon"]) == 2
    assert "service.schedulingInterval" in capsys.readouterr().err
    assert main(["--queues", str(QUEUES), "--cluster", str(CLUSTER), "--trace", str(small_trace(tmp_path)),
                 "--report", str(tmp_path / "out"), "--set", "event.maxStreams=10"]) == 2
    assert "event.maxStreams has no effect on a simulation" in capsys.readouterr().err


def test_the_alibaba_importer_reads_the_shipped_sample(tmp_path, capsys):
    out = tmp_path / "alibaba.jsonl"
    assert main(["import-alibaba", str(SAMPLES / "alibaba_batch_task.csv"), "--out", str(out),
                 "--machine-memory", "100Gi"]) == 0
    apps = {a.app_id: a for a in read_trace(out)}
    # Failed and still running tasks are left out; each task is submitted at its own start.
    assert len(apps) == 10 and "j_1004-M1" not in apps and "j_1007-M1" not in apps
    first, stage = apps["j_1001-M1"], apps["j_1001-R2_1"]
    assert (first.submit, stage.submit) == (0.0, 302.0)
    [pods] = first.pods
    assert (pods.count, pods.duration, pods.resource["vcore"]) == (10, 300.0, 1000)
    assert pods.resource["memory"] == int(100 * 2**30 * 0.39 / 100)


def test_the_alibaba_importer_names_a_bad_cell(tmp_path, capsys):
    bad = tmp_path / "batch_task.csv"
    bad.write_text("M1,10,j_1,1,Terminated,10,20,100,0.3\nM2,ten,j_1,1,Terminated,10,20,100,0.3\n")
    assert main(["import-alibaba", str(bad), "--out", str(tmp_path / "t.jsonl")]) == 2
    assert f"{bad}:2: instance_num: 'ten' is not a number" in capsys.readouterr().err


class Brief:
    def __init__(self, key, vcore, start, end, placeholder=False, task_group=""):
        self.key, self.resource, self.allocated_at, self.released_at = key, {"vcore": vcore, "memory": 2**30}, start, end
        self.node_id, self.placeholder, self.task_group = "n", placeholder, task_group


class Finished:
    def __init__(self, app_id, submitted, allocations, untold=0, placeholders=()):
        self.application_id, self.submission_time, self.allocations = app_id, submitted, tuple(allocations)
        self.queue, self.user, self.groups, self.allocations_untold = "root.a", "u1", ("g",), untold
        self.placeholders = tuple(placeholders)


class PlaceholderBrief:
    def __init__(self, task_group, count):
        self.task_group, self.count, self.min_resource = task_group, count, {"vcore": 1000, "memory": 2**30}
        self.replaced, self.timed_out = count, 0


def test_finished_applications_become_trace_lines_that_replay(tmp_path):
    s = 1_000_000_000
    lines = trace_lines([
        Finished("late", 1_000 * s, [Brief("x", 500, 1_010 * s, 1_070 * s)]),
        Finished("early", 400 * s, [Brief("p", 1000, 400 * s, 401 * s, placeholder=True, task_group="tg"),
                                    Brief("y", 1000, 401 * s, 501 * s, task_group="tg"),
                                    Brief("z", 1000, 402 * s, 502 * s, task_group="tg")], untold=2,
                 placeholders=[PlaceholderBrief("tg", 2)]),
        Finished("never-ran", 10 * s, []),
    ])
    assert [line["app"] for line in lines] == ["early", "late"]
    early, late = lines
    assert early["submit"] == 0.0 and late["submit"] == 600.0
    assert early["pods"] == [{"count": 4, "cpu": "1", "memory": "1Gi", "duration": 100.0, "taskGroup": "tg"}]
    assert early["taskGroups"] == [{"name": "tg", "minMember": 2, "minResource": {"cpu": "1", "memory": "1Gi"}}]
    assert late["pods"] == [{"count": 1, "cpu": "500m", "memory": "1Gi", "duration": 60.0}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert [a.pod_count for a in read_trace(path)] == [4, 1]


def test_the_history_store_exports_a_trace_that_replays(tmp_path, capsys):
    """Where the history store is installed: its finished applications, exported and read back."""
    store_module = pytest.importorskip("actors.history.store")
    from si.history import AllocationBrief, FinishedApplication, PlaceholderBrief

    s = 1_000_000_000
    t0 = 1_767_225_600 * s

    def finished(app_id, submitted, allocations, state="Completed", placeholders=()):
        return FinishedApplication(
            application_id=app_id, partition="default", queue="root.a", user="u1", groups=("g",), state=state,
            submission_time=submitted, finished_time=submitted + 500 * s, rejected_message="", state_log=(),
            tags={}, used={}, max_used={}, resource_seconds={}, first_allocation_time=submitted,
            allocations=tuple(allocations), allocations_untold=0, placeholders=tuple(placeholders))

    memory = 2**30
    dsn = f"sqlite:///{tmp_path / 'history.db'}"
    store = store_module.HistoryStore(dsn).migrate()
    store.write([
        finished("web", t0, [AllocationBrief("w1", "n1", {"vcore": 500, "memory": memory}, t0, t0 + 60 * s, False, "")]),
        finished("gang", t0 + 30 * s, [
            AllocationBrief("p1", "n1", {"vcore": 1000, "memory": memory}, t0 + 30 * s, t0 + 31 * s, True, "tg"),
            AllocationBrief("r1", "n1", {"vcore": 1000, "memory": memory}, t0 + 31 * s, t0 + 131 * s, False, "tg")],
            placeholders=[PlaceholderBrief("tg", 1, {"vcore": 1000, "memory": memory}, 1, 0)]),
        finished("rejected", t0, [], state="Rejected")])
    store.close()
    out = tmp_path / "week.jsonl"
    assert main(["export-history", "--history-dsn", dsn, "--out", str(out)]) == 0
    apps = {a.app_id: a for a in read_trace(out)}
    assert set(apps) == {"web", "gang"}
    assert (apps["web"].submit, apps["gang"].submit) == (0.0, 30.0)
    assert apps["gang"].task_groups[0].min_member == 1 and apps["gang"].pods[0].task_group == "tg"
    assert apps["gang"].pods[0].duration == 100.0 and apps["web"].pods[0].resource["vcore"] == 500
