"""Kubernetes quantities (``100m``, ``1.5``, ``2Gi``, ``1e3``) turned into SI integers.

The SI carries every resource as an int64: ``vcore`` in millicores, ``memory`` in bytes, everything
else (``pods``, ``nvidia.com/gpu``, ...) as a plain count. Kubernetes rounds a quantity up to the
smallest unit it is stored in, and so do we: ``0.5m`` of CPU is 1 millicore, ``1.5`` bytes is 2.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from fractions import Fraction

from si.bounded import elide, shown
from si.constants import CPU, MEMORY, VCORE
from si.gonumber import INT64_MAX

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": 1,
            "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18}
_QUANTITY = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exp>[eE][+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))$"
)
# Longer spellings are refused before any arithmetic: an int64 has 19 digits, and a 5,000-digit
# mantissa or exponent would otherwise cost time and end in Python's own int-size ValueError.
MAX_LENGTH = 100
MAX_EXPONENT = 30


class QuantityError(ValueError):
    """A quantity that Kubernetes would refuse, or one the SI cannot carry."""


def parse_quantity(text: str | int | float) -> Fraction:
    """The exact value of a Kubernetes quantity, e.g. ``"100m"`` -> ``Fraction(1, 10)``."""
    if isinstance(text, bool):
        raise QuantityError(f"quantity {text!r} is a boolean, not a number")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise QuantityError(f"quantity {text!r} is not a finite number")
        return Fraction(Decimal(repr(text)))
    if not isinstance(text, str):
        raise QuantityError(f"quantity {shown(text)} must be a string or a number")
    if len(text) > MAX_LENGTH:
        raise QuantityError(f"quantity {shown(text)} is longer than {MAX_LENGTH} characters")
    match = _QUANTITY.match(text.strip())
    if match is None:
        raise QuantityError(f"quantity {shown(text)} is malformed: expected a number with an optional "
                            "suffix (m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei) or exponent (1e3)")
    try:
        value = Fraction(Decimal(match["number"]))
    except InvalidOperation as error:  # pragma: no cover - the pattern admits only decimals
        raise QuantityError(f"quantity {shown(text)} is malformed") from error
    if match["binary"]:
        value *= _BINARY[match["binary"]]
    elif match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > MAX_EXPONENT:
            raise QuantityError(f"quantity {shown(text)} has an exponent out of range "
                                f"(-{MAX_EXPONENT}..{MAX_EXPONENT})")
        value *= Fraction(10) ** exponent
    else:
        value *= _DECIMAL[match["decimal"] or ""]
    return -value if match["sign"] == "-" else value


def to_si_value(name: str, text: str | int | float) -> int:
    """The int64 the SI carries for resource ``name`` (already in SI naming: ``vcore``, ``memory``)."""
    value = parse_quantity(text)
    if value < 0:
        raise QuantityError(f"{elide(name)}: quantity {shown(text)} is negative")
    scaled = value * 1000 if name == VCORE else value
    result = math.ceil(scaled)
    if result > INT64_MAX:
        raise QuantityError(f"{elide(name)}: quantity {shown(text)} does not fit in int64")
    return result


def si_name(kubernetes_name: str) -> str:
    """The SI name of a Kubernetes resource: ``cpu`` is ``vcore``; the rest keep their name."""
    return VCORE if kubernetes_name == CPU else kubernetes_name


def from_kubernetes(resources: Mapping[str, str | int | float] | None) -> dict[str, int]:
    """A Kubernetes resource list (``{"cpu": "500m", "memory": "1Gi"}``) in SI units."""
    result: dict[str, int] = {}
    for name, text in (resources or {}).items():
        key = si_name(name)
        result[key] = result.get(key, 0) + to_si_value(key, text)
        if result[key] > INT64_MAX:  # cpu and vcore both given
            raise QuantityError(f"{elide(key)}: the quantities add up to more than an int64 holds")
    return result


def format_quantity(name: str, value: int) -> str:
    """The Kubernetes spelling of an SI value: ``vcore`` 1500 -> ``"1500m"``, ``memory`` 2**31 -> ``"2Gi"``."""
    if name == VCORE:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if name == MEMORY and value:
        for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
            unit = _BINARY[suffix]
            if value % unit == 0:
                return f"{value // unit}{suffix}"
    return str(value)
