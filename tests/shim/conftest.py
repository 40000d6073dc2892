"""Every shim test leaves no actor running."""

import pykka
import pytest


@pytest.fixture(autouse=True)
def no_leaked_actors():
    yield
    leaked = pykka.ActorRegistry.get_all()
    pykka.ActorRegistry.stop_all()
    assert not leaked, f"actors left running: {leaked}"
