"""The bundle's licence notice: the project's own licence is declared and shipped, and the notice lists
the bundled libraries with their licence texts (PyMuPDF's AGPL above all, the reason for ours)."""

from __future__ import annotations

import importlib.util
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_licenses():
    spec = importlib.util.spec_from_file_location("hsd_packaging_licenses", ROOT / "packaging" / "licenses.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_project_declares_agpl_and_ships_its_text():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert project["license"] == "AGPL-3.0-or-later"
    text = (ROOT / "LICENSE").read_text("utf-8")
    assert "GNU AFFERO GENERAL PUBLIC LICENSE" in text and "Version 3, 19 November 2007" in text


def test_notice_lists_pymupdf_and_torch_with_their_licences():
    lines = load_licenses().third_party_notice().splitlines()
    headers = {line.split(" ", 1)[0].lower(): line for line, under in zip(lines, lines[1:])
               if under and set(under) == {"="}}
    assert "AFFERO" in headers["pymupdf"].upper()
    assert "BSD" in headers["torch"]


def test_notice_skips_what_is_not_installed():
    notice = load_licenses().third_party_notice(["pymupdf", "no-such-distribution-here"])
    assert "no-such-distribution-here" not in notice
    assert notice.count("\n\n\n") == 2  # the preamble's two lines, then one section


def test_spec_ships_license_and_notice():
    spec = (ROOT / "packaging" / "hsd.spec").read_text("utf-8")
    assert "THIRD_PARTY_LICENSES.txt" in spec and '"LICENSE"' in spec
