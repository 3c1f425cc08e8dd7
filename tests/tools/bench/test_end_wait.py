"""The end-wait report splits a document's end into its outstanding pages' steps."""

from __future__ import annotations

import json

from tools.bench import end_wait


def _write(folder, events):
    with open(folder / "trace_1.jsonl", "w", encoding="utf-8") as f:
        for e in events:
            f.write(json.dumps({"pid": 1, "th": "MainThread", **e}) + "\n")


def test_a_documents_end_is_split_into_its_outstanding_pages_steps(tmp_path):
    _write(tmp_path, [
        {"ev": "run", "t0": 0.0, "t": 0.0, "input": "/x/a_doc.pdf", "mode": "hsd"},
        {"ev": "decode_end", "t0": 9.0, "t": 9.0, "page": 1},
        {"ev": "decode_end", "t0": 10.0, "t": 10.0, "page": 2},
        {"ev": "stop", "t0": 10.0, "t": 10.0, "page": 2},
        {"ev": "lines", "t0": 10.5, "t": 10.5, "page": 2, "n": 3},
        # page 2, read while its decode ran: the chunk in hand, the stop's layout inside it, the groups
        {"ev": "c_recognise", "t0": 8.0, "t": 12.0},
        {"ev": "c_layout_model", "t0": 10.5, "t": 12.0},
        {"ev": "c_layout_model", "t0": 12.0, "t": 13.0},
        {"ev": "draft", "t0": 8.0, "t": 13.0, "page": 2, "layout_only": False},
        {"ev": "markdown", "t0": 13.1, "t": 13.2},
        {"ev": "run", "t0": 20.0, "t": 20.0, "input": "/x/a_doc.pdf", "mode": "ar"},
    ])
    [doc] = end_wait.document_ends(end_wait.load(str(tmp_path)))
    assert doc["document"] == "a_doc.pdf" and round(doc["end_wait"], 6) == 3.1
    [page] = doc["pages"]
    assert page["page"] == 2 and not page["layout_only"] and page["lines_after"] == 3
    assert round(page["layout_model"], 6) == 2.5 and round(page["recognise"], 6) == 0.5
    assert round(page["queued"], 6) == 0.0 and round(page["stop_late"], 6) == 0.0
    assert "end wait 3.10 s" in end_wait.report(str(tmp_path))
