"""Chunked lists: ``limit`` and ``continue`` as the API server serves them.

A list with ``limit`` returns at most that many items, ordered by namespace and name, and a
``continue`` token when more remain (with ``remainingItemCount``). Every page of one list shows the
cluster as it was at the first page's resourceVersion. A token is valid for ``ttl`` seconds and only
the ``capacity`` newest are kept; an older or unknown one gets 410 Expired, as from a real server
after compaction, and the client must list again.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict

from kubesim import errors


def _order(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""


def parse_limit(raw: str | None) -> int:
    """0 for no limit; a bad value is a 400, as on a real server."""
    if raw is None or raw == "":
        return 0
    try:
        limit = int(raw)
    except ValueError:
        raise errors.bad_request(f"limit: invalid value {raw!r}: must be an integer") from None
    return max(limit, 0)


class Pager:
    """The lists still being read in chunks, each kept whole as of its first page; thread-safe.

    A token names a list and an offset, so a client may ask for the same page again (after a broken
    connection, say) as long as the list is kept.
    """

    def __init__(self, capacity: int = 64, ttl: float = 300.0) -> None:
        self.capacity = capacity
        self.ttl = ttl
        self._lists: OrderedDict[str, tuple[float, int, list[dict]]] = OrderedDict()
        self._lock = threading.Lock()

    def first(self, items: list[dict], resource_version: int, limit: int) -> tuple[list[dict], int, str, int]:
        """(page, resourceVersion, continue token or "", items remaining) of a new list."""
        items = sorted(items, key=_order)
        if not limit or len(items) <= limit:
            return items, resource_version, "", 0
        list_id = secrets.token_urlsafe(12)
        with self._lock:
            self._lists[list_id] = (time.monotonic(), resource_version, items)
            while len(self._lists) > self.capacity:
                self._lists.popitem(last=False)
        return self._page(list_id, items, resource_version, 0, limit)

    def next(self, token: str, limit: int) -> tuple[list[dict], int, str, int]:
        """The page at ``token``: 410 Expired if the token is unknown or its list too old."""
        list_id, _, offset = token.rpartition(".")
        with self._lock:
            entry = self._lists.get(list_id)
        if entry is None or not offset.isdigit() or time.monotonic() - entry[0] > self.ttl:
            raise errors.gone("The provided continue parameter is too old to display a consistent list "
                              "result. You can start a new list without the continue parameter.")
        _, resource_version, items = entry
        return self._page(list_id, items, resource_version, int(offset), limit or len(items))

    def _page(self, list_id: str, items: list[dict], resource_version: int, offset: int,
              limit: int) -> tuple[list[dict], int, str, int]:
        end = offset + limit
        if end >= len(items):
            with self._lock:
                self._lists.pop(list_id, None)  # read to the end: nothing more to keep
            return items[offset:], resource_version, "", 0
        return items[offset:end], resource_version, f"{list_id}.{end}", len(items) - end
