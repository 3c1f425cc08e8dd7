"""How well the review list (``core.review``) finds the places where a real model's output differs
from a human reference.

For every page of a model-output corpus (``pairs/NAME.pdf`` + ``NAME.md``, the model's output) whose
human reference lies in the reference corpus (``pairs/NAME.md``), the page is drafted as a
conversion drafts it, the model's output is reviewed against the drafts, and the review is scored
against the words where the model's output and the human reference part (the same word alignment
as the review's):

- words: of the model's words a departure marks, the share that differ from the reference
  (precision), and of the model's words that differ, the share a departure marks (recall); the
  share of all words that differ is what marking at random would reach as precision;
- places: of the departures, the share that touch a difference (a skipped passage: lies within
  a word of one), and of the differences (each run where model and reference part), the share a
  departure touches.

Both are given over every difference and over the differences outside the model's formulas, which
the review does not compare (no draft holds a formula's LaTeX). Pages whose review lists nothing
because model and drafts agree too little are counted apart, with how much of their output differs
from the reference.

    python3 tools/review_precision.py ../shared/corpus/model_outputs/omnidocbench_demo ../shared/corpus
"""

from __future__ import annotations

import argparse
import sys
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.review import formulas_in, in_formula, review_page, words  # noqa: E402


def differences(model_text: str, reference: str) -> tuple[list[bool], list[tuple[int, int]]]:
    """Per model word, whether it differs from the reference; and the places (character ranges of
    the model's text; empty where the model lacks the reference's words) where they part."""
    model, human = words(model_text), words(reference)
    matcher = SequenceMatcher(None, [w.key for w in model], [w.key for w in human], autojunk=False)
    differs = [True] * len(model)
    places = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for i in range(i1, i2):
                differs[i] = False
        elif i2 > i1:
            places.append((model[i1].start, model[i2 - 1].end))
        else:
            at = model[i1 - 1].end if i1 > 0 else 0
            places.append((at, at))
    return differs, places


def touches(a: tuple[int, int], b: tuple[int, int], slack: int) -> bool:
    return a[0] - slack <= b[1] and b[0] - slack <= a[1]


def score_page(result, reference: str, slack: int = 2) -> dict:
    """The page's counts, over all its words and over the words outside its formulas (which the
    review does not compare: no draft holds a formula's LaTeX)."""
    review = review_page(result)
    differs, places = differences(result.markdown, reference)
    model = words(result.markdown)
    formulas = formulas_in(result.markdown)
    flagged = [any(d.start <= w.start and w.end <= d.end for d in review.departures if d.end > d.start)
               for w in model]
    ranges = [(d.start, d.end) for d in review.departures]
    row = {"page": result.page, "poor": review.low_agreement, "agreement": review.agreement}
    for scope, keep_word, keep_place in (
            ("all", lambda w: True, lambda p: True),
            ("text", lambda w: not in_formula(formulas, w.start, w.end),
             lambda p: not in_formula(formulas, p[0], p[1], near=slack))):
        kept = [k for k, w in enumerate(model) if keep_word(w)]
        kept_places = [p for p in places if keep_place(p)]
        row[scope] = {
            "words": len(kept), "differ": sum(differs[k] for k in kept), "flagged": sum(flagged[k] for k in kept),
            "flagged_and_differ": sum(flagged[k] and differs[k] for k in kept),
            "departures": len(ranges), "departures_hit": sum(any(touches(r, p, slack) for p in kept_places)
                                                             for r in ranges),
            "places": len(kept_places), "places_found": sum(any(touches(p, r, slack) for r in ranges)
                                                            for p in kept_places)}
    return row


def draft(pdf: Path):
    from core.api import get_drafter, open_document
    from core.results import PageResult, PageStats

    drafter = get_drafter("auto")
    with open_document(pdf) as doc:
        page = doc.page(0)
        regions = drafter.draft(page)
        return PageResult(1, page.width, page.height, "", regions, [], [], [], PageStats())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", type=Path, help="a model-output corpus (pairs/NAME.pdf + NAME.md)")
    parser.add_argument("references", type=Path, help="the corpus whose pairs/NAME.md are the human references")
    args = parser.parse_args(argv)
    rows = []
    for pdf in sorted((args.outputs / "pairs").glob("*.pdf")):
        reference = args.references / "pairs" / f"{pdf.stem}.md"
        if not reference.is_file():
            continue
        result = draft(pdf)
        result.markdown = pdf.with_suffix(".md").read_text(encoding="utf-8")
        row = score_page(result, reference.read_text(encoding="utf-8"))
        row["page_name"] = pdf.stem
        rows.append(row)
        a = row["all"]
        unlisted = " (too little agreement to list)" if row["poor"] else ""
        print(f"{pdf.stem}: agreement {row['agreement']:.0%}{unlisted}, {a['departures']} departures, "
              f"{a['departures_hit']} on a difference; {a['places']} differences, {a['places_found']} found; "
              f"words {a['flagged_and_differ']}/{a['flagged']} flagged differ, {a['differ']}/{a['words']} differ",
              flush=True)
    listed = [r for r in rows if not r["poor"]]

    def share(a, b):
        return f"{a / b:.0%} ({a}/{b})" if b else "-"

    print(f"\n{len(rows)} pages, {len(rows) - len(listed)} listed as one item (too little agreement)"
          + "".join(f"; {r['page_name']}: {r['all']['differ'] / max(1, r['all']['words']):.0%} of the model's "
                    "words differ from the reference" for r in rows if r["poor"]))
    for scope, what in (("all", "every difference"), ("text", "differences outside formulas")):
        t = {k: sum(r[scope][k] for r in listed) for k in listed[0][scope]} if listed else {}
        if not t:
            break
        print(f"{what}, on the other {len(listed)} pages:")
        print(f"  words:  precision {share(t['flagged_and_differ'], t['flagged'])}, recall "
              f"{share(t['flagged_and_differ'], t['differ'])}; chance precision {share(t['differ'], t['words'])}")
        print(f"  places: precision {share(t['departures_hit'], t['departures'])}, recall "
              f"{share(t['places_found'], t['places'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
