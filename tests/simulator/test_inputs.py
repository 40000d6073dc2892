"""Traces and clusters are parsed whole before a run; every problem names its file, line and field."""

import json

import pytest

from simulate.inputs import (
    HARD,
    InputError,
    parse_cluster,
    read_cluster,
    read_trace,
    trace_record,
    write_trace,
)

GOOD = {"submit": 5.5, "app": "a1", "queue": "root.a", "user": "u1", "groups": ["g"],
        "pods": [{"count": 4, "cpu": "500m", "memory": "2Gi", "duration": 600, "priority": 3, "taskGroup": "tg",
                  "nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "gpu", "operator": "Exists"}]}],
        "taskGroups": [{"name": "tg", "minMember": 4, "minResource": {"cpu": "500m", "memory": "2Gi"}}],
        "gangStyle": "Hard", "placeholderTimeout": 60}


def write_lines(tmp_path, *lines):
    path = tmp_path / "trace.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def test_a_trace_line_reads_into_an_application(tmp_path):
    [app] = read_trace(write_lines(tmp_path, GOOD))
    assert (app.submit, app.app_id, app.queue, app.user, app.groups) == (5.5, "a1", "root.a", "u1", ("g",))
    [pods] = app.pods
    assert (pods.count, dict(pods.resource), pods.duration, pods.priority) == (
        4, {"vcore": 500, "memory": 2 * 2**30}, 600.0, 3)
    assert pods.node_selector == (("disk", "ssd"),) and pods.tolerations[0].operator == "Exists"
    assert app.task_groups[0].min_member == 4 and app.gang_style == HARD and app.placeholder_timeout == 60


def test_a_trace_written_reads_back_the_same(tmp_path):
    apps = read_trace(write_lines(tmp_path, GOOD, {**GOOD, "app": "a2", "submit": 1}))
    path = tmp_path / "again.jsonl"
    write_trace(apps, path)
    again = read_trace(path)
    assert [trace_record(a) for a in again] == [trace_record(a) for a in apps]
    assert [a.app_id for a in again] == ["a2", "a1"]  # by submit time


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"submit": -1}, "submit", "at least 0"),
    ({"submit": "soon"}, "submit", "must be a number"),
    ({"app": ""}, "app", "non-empty string"),
    ({"pods": []}, "pods", "non-empty list"),
    ({"pods": [{"cpu": "1", "duration": 1, "count": 0}]}, "pods[0].count", "between 1"),
    ({"pods": [{"cpu": "lots", "duration": 1}]}, "pods[0].cpu", "malformed"),
    ({"pods": [{"cpu": "1"}]}, "pods[0].duration", "is required"),
    ({"pods": [{"duration": 1}]}, "pods[0]", "requests nothing"),
    ({"pods": [{"cpu": "1", "duration": 1, "colour": "red"}]}, "pods[0].colour", "unknown field"),
    ({"pods": [{"cpu": "1", "duration": 1, "taskGroup": "nope"}]}, "pods[0].taskGroup", "names no task group"),
    ({"gangStyle": "Firm"}, "gangStyle", "Soft or Hard"),
    ({"taskGroups": [{"name": "tg", "minMember": 0}]}, "taskGroups[0].minMember", "between 1"),
    ({"pods": [{"cpu": "1", "duration": 1, "tolerations": [{"effect": "Sometimes"}]}]},
     "pods[0].tolerations[0].effect", "must be one of"),
])
def test_a_malformed_line_is_refused_naming_its_line_and_field(tmp_path, change, field, words):
    path = write_lines(tmp_path, GOOD, {**GOOD, "app": "a2", **change})
    with pytest.raises(InputError) as raised:
        read_trace(path)
    assert raised.value.where == f"{path}:2" and raised.value.field == field
    assert words in str(raised.value) and str(raised.value).startswith(f"{path}:2: {field}: ")


def test_broken_json_and_repeated_applications_are_refused_by_line(tmp_path):
    with pytest.raises(InputError, match=r":2: not JSON"):
        read_trace(write_lines(tmp_path, GOOD, '{"submit": 1,'))
    with pytest.raises(InputError, match=r":3: app: 'a1' was already submitted on line 1"):
        read_trace(write_lines(tmp_path, GOOD, "# a comment", GOOD))


def test_a_cluster_reads_shapes_labels_and_taints(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text('nodes:\n  - {count: 3, cpu: "16", memory: 64Gi, labels: {zone: a}}\n'
                    '  - count: 1\n    cpu: "8"\n    memory: 32Gi\n    taints: [{key: gpu, value: "true", effect: NoSchedule}]\n')
    cluster = read_cluster(path)
    assert cluster.node_count == 4
    big, gpu = cluster.shapes
    assert dict(big.resource) == {"vcore": 16000, "memory": 64 * 2**30, "pods": 110} and big.labels == (("zone", "a"),)
    assert gpu.taints[0].key == "gpu" and gpu.taints[0].effect == "NoSchedule"


def test_a_malformed_cluster_names_the_line_of_its_node(tmp_path):
    path = tmp_path / "cluster.yaml"
    path.write_text('nodes:\n  - {count: 3, cpu: "16", memory: 64Gi}\n  - {count: 2, cpu: "x", memory: 1Gi}\n')
    with pytest.raises(InputError, match=r"cluster.yaml:3: nodes\[1\].cpu: quantity 'x' is malformed"):
        read_cluster(path)
    with pytest.raises(InputError, match=r"nodes\[0\].taints\[0\].effect: must be one of"):
        parse_cluster({"nodes": [{"cpu": "1", "memory": "1Gi", "taints": [{"key": "k", "effect": "Never"}]}]}, "c")
    path.write_text("nodes: [\n")
    with pytest.raises(InputError, match="not YAML"):
        read_cluster(path)
