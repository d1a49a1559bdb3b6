"""Settings checked where they are set: a wrong value is refused with a message naming the field."""

from __future__ import annotations


def integer_in(name: str, value, low: int, high: int, note: str = "") -> None:
    """`value` is an integer in [low, high], else a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name}: {value!r} is not an integer")
    if not low <= value <= high:
        raise ValueError(f"{name}: {value} is outside [{low}, {high}]{note}")


def number(name: str, value) -> None:
    """`value` is a real number, else a ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}: {value!r} is not a number")
