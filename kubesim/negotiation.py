"""Content negotiation: which request bodies kubesim reads, and which answer a client's ``Accept`` gets.

Bodies of creates and updates are JSON, or protobuf (what client-go's typed clients send) for the kinds
``protobuf`` reads; any other format (CBOR, YAML) is refused with 415, which client-go takes as its cue to
send a CBOR request again as JSON. Answers are JSON only: an ``Accept`` list is read in order and the first
range kubesim can produce wins: JSON, or a ``meta.k8s.io`` Table (what ``kubectl get`` asks for); protobuf
entries are passed over, and a list with nothing kubesim can produce gets 406.
"""

from __future__ import annotations

from typing import NamedTuple

from kubesim import errors, patch, protobuf

JSON = "application/json"
_WRITE_TYPES = {"POST": (JSON, protobuf.MEDIA_TYPE), "PUT": (JSON, protobuf.MEDIA_TYPE), "DELETE": (JSON, protobuf.MEDIA_TYPE),
                "PATCH": (patch.JSON_PATCH, patch.MERGE, patch.STRATEGIC)}
_JSON_RANGES = {JSON, "application/*", "*/*"}
_TABLE_VERSIONS = ("v1", "v1beta1")


class Answer(NamedTuple):
    """How to answer: a plain JSON object, or a Table of ``meta.k8s.io/<table_version>``."""

    table_version: str = ""


PLAIN = Answer()


def body_type(method: str, content_type: str | None) -> str:
    """The media type of a request body kubesim can read (415 otherwise); no header counts as JSON."""
    accepted = _WRITE_TYPES.get(method, (JSON,))
    media = (content_type or "").split(";")[0].strip().lower()
    if not media:
        return accepted[0]
    if media not in accepted:
        raise errors.ApiError(415, "UnsupportedMediaType",
                              f'the body of the request was in an unknown format "{media}" - accepted media '
                              f"types include: {', '.join(accepted)}")
    return media


def answer(accept: str | None, table_allowed: bool) -> Answer:
    """The first entry of ``accept`` kubesim can produce; 406 when there is none."""
    if not accept or not accept.strip():
        return PLAIN
    for entry in accept.split(","):
        media, *raw_params = (part.strip() for part in entry.split(";"))
        params = {key.strip().lower(): value.strip() for key, _, value in (p.partition("=") for p in raw_params)}
        if _refused(params.get("q")) or media.lower() not in _JSON_RANGES:
            continue
        wanted = params.get("as")
        if wanted is None:
            return PLAIN
        if (table_allowed and wanted == "Table" and params.get("g") == "meta.k8s.io"
                and params.get("v") in _TABLE_VERSIONS):
            return Answer(params["v"])
    raise errors.ApiError(406, "NotAcceptable", "only the following media types are accepted: application/json, "
                          "application/json;as=Table;v=v1;g=meta.k8s.io")


def _refused(quality: str | None) -> bool:
    """``q=0`` marks a media range the client does not accept."""
    try:
        return quality is not None and float(quality) == 0
    except ValueError:
        return False
