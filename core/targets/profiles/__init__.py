"""One profile per target family, keyed by ``config.model_type``."""

from __future__ import annotations

import importlib

from core.targets.families import FAMILY_MODULES
from core.targets.profiles.base import PageStyle, Profile


def get_profile(model_type: str) -> Profile:
    """The profile of a family; ``KeyError`` if the family is not supported."""
    module = importlib.import_module(f"core.targets.profiles.{FAMILY_MODULES[model_type]}")
    return module.PROFILE


def any_style() -> PageStyle:
    """Every family's page style merged: for a target whose family is unknown (a replayed output)."""
    style = PageStyle()
    for model_type in FAMILY_MODULES:
        style = style.merged(get_profile(model_type).style)
    return style


def style_of(target) -> PageStyle:
    """The page style of ``target``'s family, or every family's where it has no profile."""
    return target.profile.style if target.profile is not None else any_style()


__all__ = ["FAMILY_MODULES", "PageStyle", "Profile", "any_style", "get_profile", "style_of"]
