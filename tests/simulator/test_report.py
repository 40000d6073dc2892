"""The report of a run: percentiles, usage, fair share, preemptions and unschedulable pods, as JSON, CSV
and one self-contained HTML page."""

import csv
import json
import re

from simulate import report
from tests import queues as built
from tests.simulator.simrun import run
from tests.simulator.test_engine import GUARANTEED, app

NODE = {"count": 1, "cpu": "4", "memory": "4Gi"}


def test_percentiles_are_nearest_rank():
    values = sorted(float(v) for v in range(1, 101))
    assert (report.percentile(values, 50), report.percentile(values, 95), report.percentile(values, 99)) == (50, 95, 99)
    assert report.percentile([7.0], 99) == 7.0 and report.percentile([], 50) is None


def test_waits_usage_and_limits_per_queue_and_user():
    outcome = run(built.config(built.queue("a", max={"vcore": 2, "memory": "4Gi"}, guaranteed={"vcore": 1, "memory": "1Gi"}),
                               built.queue("b")), [NODE],
                  [app("a1", 0, count=4, duration=10, user="ann"), app("b1", 0, count=1, duration=30, queue="root.b",
                                                                       user="bob")])
    summary = report.summarise(outcome)
    a = summary["queues"]["root.a"]
    # Two at a time under the max: waits 0, 0, 10, 10.
    assert (a["pods"], a["wait_p50"], a["wait_p95"], a["wait_max"]) == (4, 0.0, 10.0, 10.0)
    assert a["max"] == {"vcore": 2000, "memory": 4 * 2**30} and a["guaranteed"]["vcore"] == 1000
    assert max(vcore for _, vcore, _ in a["usage"]) == 2000
    assert summary["users"]["bob"]["wait_p99"] == 0.0 and summary["users"]["ann"]["pods"] == 4
    assert summary["makespan"] == 30.0
    # 2 cores for 20s (a) + 1 core for 30s (b) out of 4 cores x 30s.
    assert abs(summary["utilisation"] - (2 * 20 + 30) / 120) < 1e-9
    assert summary["placements"]["root.a"] == ["a1-0-0", "a1-0-1", "a1-0-2", "a1-0-3"]


def test_preemptions_and_unschedulable_pods_are_listed_with_their_reasons():
    outcome = run(GUARANTEED, [NODE], [app("a1", 0, count=4, duration=1000), app("b1", 10, count=2, duration=100,
                                                                                  queue="root.b"),
                                       app("huge", 20, cpu="64", queue="root.b")])
    summary = report.summarise(outcome)
    assert summary["queues"]["root.a"]["preempted"] == len(summary["preemptions"]) >= 1
    assert summary["preemptions"][0]["victim_queue"] == "root.a"
    assert summary["preemptions"][0]["preemptor_queue"] == "root.b"
    assert summary["queues"]["root.b"]["preempting"] == summary["queues"]["root.a"]["preempted"]
    [stuck] = summary["unschedulable"]
    assert stuck["pod"] == "huge-0-0" and stuck["reason"].startswith("0/1 nodes are available")
    assert summary["queues"]["root.b"]["unschedulable"] == 1


def test_files_are_written_and_the_page_needs_nothing_from_outside(tmp_path):
    outcomes = {name: run(GUARANTEED, [NODE], [app("a1", 0, count=4, duration=100),
                                               app("b1", 10, count=2, duration=50, queue="root.b")])
                for name in ("left", "right")}
    reports = {name: report.summarise(o) for name, o in outcomes.items()}
    written = report.write(reports, outcomes, tmp_path)
    assert {p.name for p in written} == {"report.json", "report.html", "queues.csv", "users.csv", "usage.csv",
                                         "pods.csv", "preemptions.csv"}
    document = json.loads((tmp_path / "report.json").read_text())
    assert set(document["configurations"]) == {"left", "right"}
    assert document["configurations"]["left"]["queues"]["root.b"]["pods"] == 2
    rows = list(csv.DictReader((tmp_path / "queues.csv").open()))
    assert {(r["config"], r["queue"]) for r in rows} == {(c, q) for c in ("left", "right") for q in ("root.a", "root.b")}
    page = (tmp_path / "report.html").read_text()
    assert page.count("<svg") >= 4 and "left" in page and "right" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page) and "<script" not in page
