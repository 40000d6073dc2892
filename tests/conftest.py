"""Fixtures shared by every test folder: a fresh kubesim, an official-client ApiClient for it, a core,
and a cluster (kubesim with the scheduler).

The whole run must leave no actor alive: a session check fails the run otherwise."""

import os
import threading

import pytest
from hypothesis import HealthCheck, settings

from actors.base import live_actors, stop_all
from kubesim import KubeSim
from tests.coreharness import OPEN_CONFIG, Core
from tests.shim.cluster import Cluster
from tests.waiting import wait_for

# A property's examples are judged by what they do, not by how long they take: on a loaded 2-core machine
# hypothesis's 200 ms deadline fails examples that are merely slow, and its too_slow health check fails a
# test whose examples were merely generated slowly.
settings.register_profile("project", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("project")


@pytest.fixture(scope="session", autouse=True)
def history_file(tmp_path_factory):
    """Scheduler commands the tests start keep their history in a file of the session, not the repository."""
    previous = os.environ.get("HISTORY_DSN")
    os.environ["HISTORY_DSN"] = f"sqlite:///{tmp_path_factory.mktemp('history') / 'history.db'}"
    yield
    if previous is None:
        os.environ.pop("HISTORY_DSN", None)
    else:
        os.environ["HISTORY_DSN"] = previous


@pytest.fixture
def kubesim():
    sim = KubeSim(bookmark_interval=0.2).start()
    yield sim
    sim.stop()


@pytest.fixture
def cluster(kubesim, tmp_path):
    """kubesim, and the real core and shim once the test calls ``cluster.start_scheduler()``."""
    path = tmp_path / "kubeconfig"
    kubesim.write_kubeconfig(str(path))
    made = Cluster(kubesim, str(path))
    yield made
    made.close()


@pytest.fixture
def kube_api(kubesim):
    api_client = kubesim.api_client()
    yield api_client
    api_client.close()


@pytest.fixture
def no_thread_leak():
    before = {t.ident for t in threading.enumerate()}
    yield
    wait_for(lambda: not [t for t in threading.enumerate() if t.ident not in before and t.is_alive()
                          and not t.daemon], timeout=5, message="threads started by the test to end")


@pytest.fixture
def core_factory():
    made = []

    def make(config: str = OPEN_CONFIG, **kwargs) -> Core:
        core = Core(config, **kwargs)
        made.append(core)
        return core

    yield make
    for core in made:
        core.scheduler.stop()
    stop_all()
    assert not live_actors()


@pytest.fixture(scope="session", autouse=True)
def no_actor_outlives_the_run():
    yield
    left = live_actors()
    stop_all()
    assert not left, f"actors still running after the test run: {left}"
