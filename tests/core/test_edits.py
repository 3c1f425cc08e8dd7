"""The user's page edits beside the resume store: kept across reads, tied to the model output they
replaced, read as hostile data; a page dropped from the store is the only one a run converts again."""

from __future__ import annotations

import json
import os

from core.edits import EDITS_FILE, PageEdits


def test_edits_are_kept_apply_to_their_model_output_and_go_when_asked(tmp_path):
    edits = PageEdits(tmp_path)
    assert not edits and edits.text_of(3, "model") == "model"
    edits.set(3, "mine", "model")
    edits.set(4, "same", "same")  # the model's own text is no edit
    again = PageEdits(tmp_path)
    assert again.pages() == [3] and again.text_of(3, "model") == "mine"
    assert again.text_of(3, "a new conversion") == "a new conversion"  # stale: the page was converted anew
    assert again.stale({3: "a new conversion"}) == [3] and again.stale({3: "model"}) == []
    again.discard([3])
    assert not PageEdits(tmp_path) and not (tmp_path / EDITS_FILE).exists()


def test_a_damaged_or_hostile_edits_file_counts_as_no_edits(tmp_path):
    path = tmp_path / EDITS_FILE
    for content in ("not json", json.dumps({"format": "hsd-edits/1", "pages": {"x": {}, "2": {"markdown": 1}}}),
                    json.dumps({"format": "other", "pages": {"2": {"markdown": "a", "model_sha256": "b"}}})):
        path.write_text(content)
        assert not PageEdits(tmp_path)
    path.unlink()
    os.symlink(tmp_path / "elsewhere.json", path)
    (tmp_path / "elsewhere.json").write_text(json.dumps(
        {"format": "hsd-edits/1", "pages": {"2": {"markdown": "a", "model_sha256": "b"}}}))
    assert not PageEdits(tmp_path)  # never read through a link


def test_forgetting_a_page_leaves_the_others_and_the_settings(tmp_path):
    from core.export import work_dir_for
    from core.exports import open_finished
    from core.page_store import forget_page, saved_settings
    from tests.core.exports.conftest import make_finished

    md = make_finished(tmp_path)
    store = work_dir_for(md)
    assert saved_settings(store) == {"model": "test", "mode": "hsd"}
    assert forget_page(store, 2) and not forget_page(store, 2)
    assert [r.page for r in open_finished(md).results] == [1]
