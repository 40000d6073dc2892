"""Static checks of the Dockerfile (no container engine runs in CI, so the image is never built here):
a slim Python base of the supported version, every package of the distribution copied and installed,
a non-root user, and entrypoints that are the distribution's console scripts."""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile

import pytest
import yaml

from tests.chart.rendering import CHART

REPO = CHART.parents[1]


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    joined = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, arguments = line.partition(" ")
            result.append((keyword.upper(), arguments.strip()))
    return result


def stages() -> list[list[tuple[str, str]]]:
    found: list[list[tuple[str, str]]] = []
    for keyword, arguments in instructions():
        if keyword == "FROM":
            found.append([])
        found[-1].append((keyword, arguments))
    return found


def copied_sources(stage: list[tuple[str, str]]) -> list[str]:
    """The source paths of a stage's COPY instructions (flags such as --from dropped)."""
    sources = []
    for keyword, arguments in stage:
        if keyword == "COPY":
            words = [word for word in shlex.split(arguments) if not word.startswith("--")]
            sources.extend(words[:-1])
    return sources


def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def test_every_stage_is_a_slim_python_of_a_supported_version():
    required = re.search(r">=\s*3\.(\d+)", pyproject()["project"]["requires-python"]).group(1)
    for stage in stages():
        image = stage[0][1].split()[0]
        match = re.fullmatch(r"python:3\.(\d+)(\.\d+)?-slim(-\w+)?", image)
        assert match, f"{image} is not a python slim image"
        assert int(match.group(1)) >= int(required)


def test_the_image_runs_as_a_non_root_user():
    final = stages()[-1]
    users = [arguments for keyword, arguments in final if keyword == "USER"]
    assert users, "the final stage sets no USER, so it runs as root"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    for component in ("scheduler", "admissionController"):
        # Numeric, so that the kubelet can verify runAsNonRoot, and the same user the chart asks for.
        assert user == str(values[component]["podSecurityContext"]["runAsUser"]), component


def test_every_package_of_the_distribution_is_copied_and_installed():
    packages = [pattern.rstrip("*") for pattern in pyproject()["tool"]["setuptools"]["packages"]["find"]["include"]]
    copied = copied_sources(stages()[0])
    for package in packages:
        assert package in copied, f"package {package} is not copied into the build stage"
    assert "pyproject.toml" in copied and pyproject()["project"]["readme"] in copied
    build_runs = " ".join(arguments for keyword, arguments in stages()[0] if keyword == "RUN")
    assert re.search(r"pip wheel .*\s\.$", build_runs), "the build stage does not build the repository"
    final_runs = " ".join(arguments for keyword, arguments in stages()[-1] if keyword == "RUN")
    assert "pip install" in final_runs and "/wheels/*.whl" in final_runs


def test_dockerignore_keeps_the_packages_and_drops_local_state():
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    copied = copied_sources(stages()[0])
    for path in copied:
        assert not any(fnmatch.fnmatch(path, pattern) for pattern in patterns), f"{path} is ignored"
    for local in (".git", ".venv", ".tox", ".cache"):
        assert local in patterns


def test_entrypoint_and_chart_commands_are_console_scripts():
    scripts = pyproject()["project"]["scripts"]
    entrypoints = [arguments for keyword, arguments in stages()[-1] if keyword == "ENTRYPOINT"]
    assert entrypoints, "no ENTRYPOINT"
    assert json.loads(entrypoints[-1])[0] in scripts
    templates = "\n".join(path.read_text() for path in (CHART / "templates").glob("*.yaml"))
    commands = re.findall(r'command: \["([^"]+)"\]', templates)
    assert set(commands) == {"yunikorn-scheduler", "yunikorn-admission-controller"}
    assert set(commands) <= set(scripts)


def test_exposed_ports_match_the_chart_defaults():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    exposed = {int(port) for keyword, arguments in stages()[-1] if keyword == "EXPOSE" for port in arguments.split()}
    assert exposed == {values["scheduler"]["restPort"], values["admissionController"]["port"]}


@pytest.mark.timeout(120)
def test_the_build_stage_context_builds_a_wheel_with_both_commands(tmp_path):
    """What the build stage copies is enough to build the distribution, and its wheel declares the
    console scripts the chart runs (the image itself cannot be built here: no container engine)."""
    source = tmp_path / "src"
    source.mkdir()
    ignored = shutil.ignore_patterns("__pycache__", "*.pyc")
    for path in copied_sources(stages()[0]):
        origin = REPO / path
        if origin.is_dir():
            shutil.copytree(origin, source / path, ignore=ignored)
        else:
            shutil.copy(origin, source / path)
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                            "--wheel-dir", str(tmp_path / "wheels"), str(source)],
                           capture_output=True, text=True, timeout=110)
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "wheels").glob("yunikorn_py-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        entry_points = next(name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt"))
        scripts = archive.read(entry_points).decode()
        assert "si/si_pb2.py" in archive.namelist()
    for command in ("yunikorn-scheduler", "yunikorn-admission-controller"):
        assert f"{command} = " in scripts
