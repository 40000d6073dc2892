import pytest

from actors.base import live_actors, stop_all


@pytest.fixture(autouse=True)
def no_actor_left():
    yield
    left = live_actors()
    stop_all()
    assert not left, f"the test left actors running: {left}"
