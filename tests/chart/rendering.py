"""Running helm on charts/yunikorn and looking up the objects it renders."""

from __future__ import annotations

import subprocess
from pathlib import Path

CHART = Path(__file__).resolve().parents[2] / "charts" / "yunikorn"
RELEASE_NAMESPACE = "yunikorn"


class Rendered(list):
    """The objects ``helm template`` produced, with look-ups by kind and name."""

    def of_kind(self, kind: str) -> list[dict]:
        return [obj for obj in self if obj["kind"] == kind]

    def one(self, kind: str, name: str) -> dict:
        found = [obj for obj in self.of_kind(kind) if obj["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
        return found[0]

    def names(self, kind: str) -> set[str]:
        return {obj["metadata"]["name"] for obj in self.of_kind(kind)}


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=60)
