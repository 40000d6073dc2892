"""Fixtures of the chart tests: the helm binary (fetched once per run) and a renderer of the chart."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.chart.get_helm import HelmUnavailable, helm_path
from tests.chart.rendering import CHART, RELEASE_NAMESPACE, Rendered, run_helm


@pytest.fixture(scope="session")
def helm() -> Path:
    try:
        return helm_path()
    except HelmUnavailable as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture(scope="session")
def render(helm, tmp_path_factory) -> Callable[..., Rendered]:
    """``render(values_dict)``: the chart's objects for those values (merged over values.yaml)."""
    scratch = tmp_path_factory.mktemp("values")
    cache: dict[str, Rendered] = {}

    def _render(values: dict | None = None) -> Rendered:
        key = yaml.safe_dump(values or {}, sort_keys=True)
        if key not in cache:
            values_file = scratch / f"values-{len(cache)}.yaml"
            values_file.write_text(key)
            done = run_helm(helm, "template", "yunikorn", str(CHART), "--namespace", RELEASE_NAMESPACE,
                            "--values", str(values_file))
            assert done.returncode == 0, done.stderr
            cache[key] = Rendered(obj for obj in yaml.safe_load_all(done.stdout) if obj)
        return cache[key]

    return _render
