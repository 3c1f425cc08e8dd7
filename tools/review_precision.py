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

Pages whose review lists nothing because model and drafts agree too little are counted apart,
with how much of their output differs from the reference.

    python3 tools/review_precision.py ../shared/corpus/model_outputs/omnidocbench_demo ../shared/corpus
"""

from __future__ import annotations

import argparse
import sys
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.review import review_page, words  # noqa: E402


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
    review = review_page(result)
    differs, places = differences(result.markdown, reference)
    model = words(result.markdown)
    flagged = [any(d.start <= w.start and w.end <= d.end for d in review.departures if d.end > d.start)
               for w in model]
    ranges = [(d.start, d.end) for d in review.departures]
    return {"page": result.page, "poor": review.low_agreement, "agreement": review.agreement,
            "words": len(model), "differ": sum(differs), "flagged": sum(flagged),
            "flagged_and_differ": sum(f and d for f, d in zip(flagged, differs)),
            "departures": len(ranges), "departures_hit": sum(any(touches(r, p, slack) for p in places) for r in ranges),
            "places": len(places), "places_found": sum(any(touches(p, r, slack) for r in ranges) for p in places)}


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
        unlisted = " (too little agreement to list)" if row["poor"] else ""
        print(f"{pdf.stem}: agreement {row['agreement']:.0%}{unlisted}, "
              f"{row['departures']} departures, {row['departures_hit']} on a difference; "
              f"{row['places']} differences, {row['places_found']} found; words {row['flagged_and_differ']}/"
              f"{row['flagged']} flagged differ, {row['differ']}/{row['words']} differ", flush=True)
    listed = [r for r in rows if not r["poor"]]
    total = {k: sum(r[k] for r in listed) for k in ("words", "differ", "flagged", "flagged_and_differ",
                                                     "departures", "departures_hit", "places", "places_found")}

    def share(a, b):
        return f"{a / b:.0%} ({a}/{b})" if b else "-"

    print(f"\n{len(rows)} pages, {len(rows) - len(listed)} listed as one item (too little agreement)"
          + "".join(f"; {r['page_name']}: {r['differ'] / max(1, r['words']):.0%} of the model's words differ from the "
                    "reference" for r in rows if r["poor"]))
    print(f"on the other {len(listed)}:")
    print(f"words:  precision {share(total['flagged_and_differ'], total['flagged'])}, recall "
          f"{share(total['flagged_and_differ'], total['differ'])}; chance precision "
          f"{share(total['differ'], total['words'])}")
    print(f"places: precision {share(total['departures_hit'], total['departures'])}, recall "
          f"{share(total['places_found'], total['places'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
