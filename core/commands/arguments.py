"""Argument types shared by the sub-commands."""

from __future__ import annotations

import argparse


def whole_number(low: int, high: int, what: str):
    """An argparse ``type`` accepting a whole number from ``low`` to ``high`` (one-line errors)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{what} must be between {low} and {high}, got {number}")
        return number
    return parse
