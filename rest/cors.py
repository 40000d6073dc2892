"""Which web pages elsewhere may read the REST API: the answers' CORS headers.

As upstream's web service, every answer carries ``Access-Control-Allow-Origin`` (``*`` by default),
``Access-Control-Allow-Methods`` (``GET, OPTIONS``, or ``OPTIONS, POST`` for a POST) and
``Access-Control-Allow-Headers``, so YuniKorn's web UI may be served from another origin. A browser
asks before a cross-origin request that is not a plain read (validate-conf's JSON POST): that preflight
is granted only to an origin named in the setting, never through ``*``, as upstream's router answers it
without CORS headers; so by default no page elsewhere can make the scheduler validate anything.
"""

from __future__ import annotations

from collections.abc import Iterable

import falcon

ANY = "*"
ALLOWED_HEADERS = "X-Requested-With,Content-Type,Accept,Origin"


def parse_origins(text: str) -> tuple[str, ...]:
    """``*``, or origins (``https://ui.example.com``) separated by commas; empty: none."""
    return tuple(item.strip().rstrip("/") for item in text.split(",") if item.strip())


class CrossOrigin:
    """Falcon middleware adding the CORS headers the ``origins`` setting allows."""

    def __init__(self, origins: Iterable[str]) -> None:
        origins = tuple(origins)
        self._any = ANY in origins
        self._named = frozenset(origin for origin in origins if origin != ANY)

    def process_response(self, req: falcon.Request, resp: falcon.Response, resource, req_succeeded: bool) -> None:
        origin = req.get_header("Origin")
        methods = "OPTIONS, POST" if req.method == "POST" else "GET, OPTIONS"
        if req.method == "OPTIONS":
            allowed = resp.get_header("Allow")
            if allowed:  # as upstream's router lists them
                methods = ", ".join(sorted({*allowed.split(", "), "OPTIONS"}))
                resp.set_header("Allow", methods)
            if not req.get_header("Access-Control-Request-Method"):
                return
            granted = origin if origin in self._named else None
        elif self._any:
            granted = ANY
        else:
            granted = origin if origin in self._named else None
        if self._named:
            resp.append_header("Vary", "Origin")
        if granted is None:
            return
        resp.set_header("Access-Control-Allow-Origin", granted)
        resp.set_header("Access-Control-Allow-Methods", methods)
        resp.set_header("Access-Control-Allow-Headers", ALLOWED_HEADERS)
