"""Requests as any client may send them: the official client checks types before sending."""

from __future__ import annotations

import json
import urllib.error
import urllib.request


def post(url: str, body) -> tuple[int, dict]:
    """POST ``body`` as JSON; the answer's status code and JSON body."""
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
