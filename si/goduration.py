"""Durations as Go's ``time.ParseDuration`` reads them (``30s``, ``1m30s``, ``1.5h``, ``500ms``, ``0``):
upstream's configuration, kube-scheduler's flags and the chart's values are written that way."""

from __future__ import annotations

import re

from si.bounded import shown

_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h)")  # both micro signs, as Go
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float:
    """Seconds (negative with a leading ``-``); ``ValueError`` when ``text`` is not a Go duration."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    position, seconds = 0, 0.0
    for match in _PART.finditer(body):
        if match.start() != position:
            break
        seconds += float(match[1]) * _SECONDS[match[2]]
        position = match.end()
    if not body or position != len(body):
        raise ValueError(f"not a duration such as 30s, 1m30s or 500ms: {shown(text)}")
    return -seconds if text.startswith("-") else seconds
