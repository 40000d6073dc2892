"""Waiting for a condition with a deadline, instead of sleeping a guessed time."""

import time
from collections.abc import Callable
from typing import Any


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.01,
             message: str = "condition") -> Any:
    """Poll ``condition`` until it returns something truthy (and return it); fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {message}")
        time.sleep(interval)
