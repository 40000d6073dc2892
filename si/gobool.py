"""Booleans as Go's ``strconv.ParseBool`` reads them: upstream's configuration is read that way."""

from __future__ import annotations

_GO_BOOLEANS = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
                **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False)}


def parse_bool(text: str) -> bool:
    """``True`` or ``False`` for one of Go's spellings; ``ValueError`` for anything else."""
    try:
        return _GO_BOOLEANS[text]
    except KeyError:
        raise ValueError("must be true or false") from None
