"""A hostile configuration already stored in ``yunikorn-configs`` when the scheduler starts: it runs on
the default configuration, says so in an event, and schedules (the defects: the start-up exited, or
the process crashed, on every restart)."""

import pytest

from tests.waiting import wait_for

HOSTILE = {
    "huge exponent": "partitions:\n  - name: default\n    queues:\n      - name: root\n        resources:\n"
                     "          max: {vcore: 1e" + "0" * 5000 + "}\n",
    "deep nesting": "[" * 30000 + "]" * 30000,
    "alias bomb": "a: &a ['x','x','x','x','x','x','x','x','x','x']\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
        f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n"
        for i in range(8)),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_the_scheduler_starts_on_the_default_configuration_and_schedules(cluster, case):
    cluster.node("n1")
    cluster.configure(HOSTILE[case])
    cluster.start_scheduler()
    wait_for(lambda: cluster.events("ConfigurationRefused"), message="the refusal as an event")
    [event] = cluster.events("ConfigurationRefused")
    assert len(event.message) <= 1024 and event.type == "Warning"
    cluster.pod("works", labels={"applicationId": "app"})
    cluster.wait_bound("works")
