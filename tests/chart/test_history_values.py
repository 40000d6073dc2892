"""The chart's history store values: a SQLite file on the history volume by default, a PostgreSQL DSN
from a Secret, a claim for the file; the scheduler command reads them as --history-* and $HISTORY_DSN."""

import kubernetes_validate
import pytest

from actors.cli import parse_args

KUBERNETES_VERSION = "1.35.0"


def scheduler(objects) -> tuple[dict, dict]:
    deployment = objects.one("Deployment", "yunikorn-scheduler")
    spec = deployment["spec"]["template"]["spec"]
    [container] = spec["containers"]
    return spec, container


def dsn_env(container) -> dict:
    [env] = [e for e in container["env"] if e["name"] == "HISTORY_DSN"]
    return env


def test_by_default_a_sqlite_file_on_the_history_volume(render):
    spec, container = scheduler(render())
    assert dsn_env(container)["value"] == "sqlite:////var/lib/yunikorn/history.db"
    assert {"name": "history", "mountPath": "/var/lib/yunikorn"} in container["volumeMounts"]
    assert {"name": "history", "emptyDir": {}} in spec["volumes"]
    args = parse_args([a for a in container["args"] if a.startswith("--history")])
    assert (args.history_app_retention, args.history_sample_retention, args.history_event_retention) == \
        (720 * 3600.0, 720 * 3600.0, 168 * 3600.0)


def test_postgresql_from_a_secret_and_a_claim_for_the_file(render):
    objects = render({"scheduler": {"history": {"dsnSecret": {"name": "yunikorn-history", "key": "dsn"},
                                                "existingClaim": "history-pvc", "appRetention": "2160h"}}})
    spec, container = scheduler(objects)
    assert dsn_env(container)["valueFrom"] == {"secretKeyRef": {"name": "yunikorn-history", "key": "dsn"}}
    assert {"name": "history", "persistentVolumeClaim": {"claimName": "history-pvc"}} in spec["volumes"]
    assert "--history-app-retention=2160h" in container["args"]
    kubernetes_validate.validate(objects.one("Deployment", "yunikorn-scheduler"), KUBERNETES_VERSION, strict=True)


def test_a_dsn_in_values(render):
    _, container = scheduler(render({"scheduler": {"history": {"dsn": "none"}}}))
    assert dsn_env(container)["value"] == "none"


@pytest.mark.parametrize("bad", [{"appRetention": "a month"}, {"unknown": 1}, {"dsnSecret": {"name": "x", "key": ""}}])
def test_bad_history_values_are_refused(helm, bad, tmp_path):
    import yaml

    from tests.chart.rendering import CHART, run_helm

    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"scheduler": {"history": bad}}))
    done = run_helm(helm, "template", "yunikorn", str(CHART), "--values", str(values))
    assert done.returncode != 0 and "history" in done.stderr
