"""The webhook's HTTP surface: ``/mutate``, ``/validate-conf`` and ``/health`` as a Falcon WSGI app.

Transport checks come first and answer with plain HTTP errors (400 empty body, 413 too large, 415 not
JSON); once a body is there, every answer is an HTTP 200 AdmissionReview, a denial included, because
that is what the API server understands. Unexpected failures answer 500 with a short text, never a trace.
"""

from __future__ import annotations

import logging

import falcon

from si.bounded import elide
from webhook import constants as c
from webhook.mutation import mutate
from webhook.review import INVALID_UID, Decision, ReviewError, parse_review, response_body
from webhook.validation import SchedulerCheck, validate
from webhook.view import ClusterView

log = logging.getLogger(__name__)

MAX_BODY = 3 * 1024 * 1024


class _Health:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.content_type = falcon.MEDIA_TEXT
        resp.data = b"OK\r\n"

    on_head = on_post = on_put = on_delete = on_get


class _Review:
    """One AdmissionReview endpoint; ``decide(request)`` gives the verdict."""

    def __init__(self, decide) -> None:
        self._decide = decide

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        if req.content_length is not None and req.content_length > MAX_BODY:
            raise falcon.HTTPContentTooLarge(description=f"body larger than {MAX_BODY} bytes")
        try:
            body = req.bounded_stream.read(MAX_BODY + 1)
        except OSError:
            body = b""
        if len(body) > MAX_BODY:
            raise falcon.HTTPContentTooLarge(description=f"body larger than {MAX_BODY} bytes")
        if not body:
            raise falcon.HTTPBadRequest(description="empty or invalid body")
        if (req.content_type or "").split(";")[0].strip().lower() != "application/json":
            raise falcon.HTTPUnsupportedMediaType(description="invalid Content-Type, expect `application/json`")
        try:
            request = parse_review(body)
        except ReviewError as error:
            log.info("undecodable admission review: %s", error)
            uid, decision = INVALID_UID, Decision.deny("body decode failed")
        else:
            uid, decision = request.uid, self._verdict(request)
        resp.content_type = falcon.MEDIA_JSON
        resp.data = response_body(uid, decision)

    def _verdict(self, request) -> Decision:
        """The decision; an object of the wrong shape somewhere the rules did not expect is denied
        (the API server itself would refuse it), not answered with a 500."""
        try:
            return self._decide(request)
        except RecursionError:  # a value nested deeper than any rule reads, wherever it is
            log.warning("malformed %s %s/%s denied: nested too deeply", request.kind, request.namespace, request.name)
            return Decision.deny(f"malformed {request.kind or 'object'}: nested too deeply")
        except (TypeError, AttributeError, ValueError, KeyError) as error:
            log.warning("malformed %s %s/%s denied: %s: %s", request.kind, request.namespace, request.name,
                        type(error).__name__, elide(str(error)))
            return Decision.deny(f"malformed {request.kind or 'object'}: {elide(str(error))}")


def _internal_error(req, resp, error, params) -> None:
    if isinstance(error, falcon.HTTPError):
        raise error
    log.exception("unexpected failure on %s %s", req.method, req.path)
    raise falcon.HTTPInternalServerError(description="internal error; see the admission controller's log")


def create_app(view: ClusterView, namespace: str, scheduler_check: SchedulerCheck | None = None,
               scheduler_user: str = "") -> falcon.App:
    """The WSGI app serving one replica's webhooks from ``view``; ``namespace`` is the scheduler's and
    ``scheduler_user`` its user name (the only one that may create placeholder pods)."""
    app = falcon.App()
    app.req_options.auto_parse_form_urlencoded = False
    app.add_route(c.HEALTH_PATH, _Health())
    app.add_route(c.MUTATE_PATH, _Review(lambda request: mutate(request, view, scheduler_user)))
    app.add_route(c.VALIDATE_PATH, _Review(lambda request: validate(request, view, namespace, scheduler_check)))
    app.add_error_handler(Exception, _internal_error)
    return app
