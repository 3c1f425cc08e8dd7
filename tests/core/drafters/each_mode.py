"""Converting one PDF in every mode, for the losslessness tests of the drafters' pages."""

from __future__ import annotations

import json

from core.cli import main

MODES = ("ar", "hsd", "page")


def convert_in_each_mode(pdf, model: str, folder, max_new_tokens: int = 60) -> tuple[dict, dict]:
    """``hsd convert`` of ``pdf`` in ``ar``, ``hsd`` and ``page`` -> (Markdown bytes, statistics) per mode."""
    outputs, stats = {}, {}
    for mode in MODES:
        out, stats_file = folder / f"{mode}.md", folder / f"{mode}.json"
        assert main(["convert", str(pdf), "-o", str(out), "--model", model, "--mode", mode,
                     "--max-new-tokens", str(max_new_tokens), "--stats", str(stats_file), "-q"]) == 0
        outputs[mode], stats[mode] = out.read_bytes(), json.loads(stats_file.read_text())
    return outputs, stats
