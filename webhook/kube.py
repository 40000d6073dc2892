"""Calling the Kubernetes API: transient failures (5xx, 429, broken connections) are retried.

Conflicts and not-found answers are not transient: they are returned to the caller, whose
optimistic-concurrency loop decides what they mean.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException
from tenacity import before_sleep_log, retry, retry_if_exception, stop_after_attempt, wait_exponential

log = logging.getLogger(__name__)

TRANSIENT_STATUSES = frozenset({429, 500, 502, 503, 504})


def _transient(error: BaseException) -> bool:
    if isinstance(error, ApiException):
        return error.status in TRANSIENT_STATUSES or error.status == 0
    return isinstance(error, (urllib3.exceptions.HTTPError, OSError))


@retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(8),
       wait=wait_exponential(multiplier=0.05, max=2.0), reraise=True,
       before_sleep=before_sleep_log(log, logging.WARNING))
def call(method: Callable[..., Any], *args, **kwargs) -> Any:
    """``method(*args, **kwargs)``, retried with backoff while the API server fails transiently."""
    return method(*args, **kwargs)


def read_raw(method: Callable[..., Any], *args, **kwargs) -> dict | None:
    """The object a read call returns, as the API server's plain JSON dict; None when it does not exist."""
    try:
        response = call(method, *args, _preload_content=False, **kwargs)
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    try:
        return json.loads(response.data)
    finally:
        response.release_conn()


def status_of(error: ApiException) -> int:
    return int(error.status or 0)
