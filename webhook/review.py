"""AdmissionReview (admission.k8s.io/v1) in and out: the request fields used, and the response shape."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import orjson

INVALID_UID = "yunikorn-invalid-body"


class ReviewError(ValueError):
    """The body is not an AdmissionReview with a request."""


@dataclass(frozen=True)
class ReviewRequest:
    uid: str
    kind: str
    namespace: str
    name: str
    operation: str
    username: str
    groups: tuple[str, ...]
    object: Any
    old_object: Any


@dataclass(frozen=True)
class Decision:
    """The verdict on one request: ``patch`` is a list of JSONPatch operations (empty: unchanged)."""

    allowed: bool
    message: str = ""
    patch: list[dict] = field(default_factory=list)

    @classmethod
    def allow(cls, patch: list[dict] | None = None) -> Decision:
        return cls(True, "", patch or [])

    @classmethod
    def deny(cls, message: str) -> Decision:
        return cls(False, message)


def parse_review(body: bytes) -> ReviewRequest:
    """The request of an AdmissionReview body; :class:`ReviewError` when it cannot be decoded."""
    try:
        document = orjson.loads(body)
    except ValueError as error:
        raise ReviewError(f"body decode failed: {error}") from None
    request = document.get("request") if isinstance(document, dict) else None
    if not isinstance(request, dict):
        raise ReviewError("body decode failed: no request")
    kind = request.get("kind") or {}
    user = request.get("userInfo") or {}
    try:
        return ReviewRequest(
            uid=str(request.get("uid") or ""),
            kind=str(kind.get("kind") or "") if isinstance(kind, dict) else "",
            namespace=str(request.get("namespace") or "default"),
            name=str(request.get("name") or ""),
            operation=str(request.get("operation") or ""),
            username=str(user.get("username") or ""),
            groups=tuple(str(g) for g in (user.get("groups") or ())),
            object=request.get("object"),
            old_object=request.get("oldObject"),
        )
    except (AttributeError, TypeError) as error:
        raise ReviewError(f"body decode failed: {error}") from None


def response_body(uid: str, decision: Decision) -> bytes:
    """The AdmissionReview reply; ``status`` only with a message, ``patch`` only when non-empty."""
    response: dict[str, Any] = {"uid": uid, "allowed": decision.allowed}
    if decision.message:
        response["status"] = {"metadata": {}, "message": decision.message}
    if decision.patch:
        response["patch"] = base64.b64encode(orjson.dumps(decision.patch)).decode()
        response["patchType"] = "JSONPatch"
    return orjson.dumps({"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "response": response})
