"""API errors as the ``Status`` objects a kube-apiserver returns."""

from __future__ import annotations


class ApiError(Exception):
    """An error answered to the client as a ``Status`` with an HTTP code and a reason."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}
        self.headers = headers or {}

    def status(self) -> dict:
        reason = {"reason": self.reason} if self.reason else {}  # a webhook's refusal may give none
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": self.message, **reason, "details": self.details, "code": self.code}


def _details(name: str, kind, group: str = "") -> dict:
    details = {"name": name, "kind": kind.plural}
    if kind.group:
        details["group"] = kind.group
    return details


def _qualified(kind) -> str:
    return f"{kind.plural}.{kind.group}" if kind.group else kind.plural


def not_found(kind, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{_qualified(kind)} "{name}" not found', _details(name, kind))


def already_exists(kind, name: str) -> ApiError:
    return ApiError(409, "AlreadyExists", f'{_qualified(kind)} "{name}" already exists', _details(name, kind))


def conflict(kind, name: str, why: str | None = None) -> ApiError:
    message = why or ("the object has been modified; please apply your changes to the latest version and "
                      "try again")
    return ApiError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(kind)} "{name}": {message}',
                    _details(name, kind))


# The type of a field error, by the words its message starts with (apimachinery's field.ErrorType).
_CAUSE_TYPES = (("Forbidden", "FieldValueForbidden"), ("Required value", "FieldValueRequired"),
                ("Unsupported value", "FieldValueNotSupported"), ("Duplicate value", "FieldValueDuplicate"),
                ("Too long", "FieldValueTooLong"), ("Too many", "FieldValueTooMany"))


def invalid(kind, name: str, causes: list[tuple[str, str]]) -> ApiError:
    """422 Invalid as ``NewInvalid`` words it: one error alone, several as ``[a, b]`` (each once); the
    details name the kind (``Pod``), not the resource."""
    said = list(dict.fromkeys(f"{field}: {why}" for field, why in causes))
    text = said[0] if len(said) == 1 else "[" + ", ".join(said) + "]"
    details = {"name": name, "kind": kind.kind, **({"group": kind.group} if kind.group else {})}
    details["causes"] = [{"reason": next((t for words, t in _CAUSE_TYPES if why.startswith(words)),
                                         "FieldValueInvalid"), "message": why, "field": field}
                         for field, why in causes]
    qualified = f"{kind.kind}.{kind.group}" if kind.group else kind.kind
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {text}', details)


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def method_not_allowed(message: str) -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)
