"""Per-kind report of the generated scan set: what the scan drafter costs, how it orders, what it reads.

    hsd bench SET/born --target replay --tokenizer qwen --methods ar,hsd --out bench-born
    hsd bench SET/scan --target replay --tokenizer qwen --methods ar,hsd --out bench-scan
    python -m core.bench.scan_report SET --born bench-born/bench.json --scan bench-scan/bench.json --out scan-report.md

Per kind (the file name up to ``_``), from the two runs and from drafting each page again with the
runs' drafter:

* **scan / born passes**: hsd forward passes on the scans over those on the same pages born-digital,
  in total (the ratio is what reading a scan instead of a text layer costs); also the worst page;
* **reading order**: of every two laid-out regions (``SET/layout/*.json``, the generator's order)
  that the drafter put in different regions, the share it put in the generator's order (a region
  goes to the drafter region that covers most of it);
* **text reached**: the share of the reference's character trigrams (letters, digits and CJK,
  counted with multiplicity) that occur in the page's drafts.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from core.drafters.normalize import normalize_for_match


def order_accuracy(truth: list[dict], regions: list) -> float | None:
    """Share of pairs of laid-out regions, placed in different drafter regions, that the drafter
    orders as the generator did (None when no pair is placed apart)."""
    placed = []
    for t in sorted(truth, key=lambda t: t["order"]):
        best, best_area = None, 0.0
        for k, region in enumerate(regions):
            area = _overlap(t["bbox"], region.bbox)
            if area > best_area:
                best, best_area = k, area
        if best is not None:
            placed.append(best)
    agree = total = 0
    for i in range(len(placed)):
        for j in range(i + 1, len(placed)):
            if placed[i] != placed[j]:
                total += 1
                agree += placed[i] < placed[j]
    return agree / total if total else None


def text_reached(reference: str, regions: list) -> float:
    """Share of the reference's character trigrams (with multiplicity) found in the drafts."""
    ref = _trigrams(normalize_for_match(reference))
    if not ref:
        return 1.0
    drafts = _trigrams(normalize_for_match("\n".join(r.text for r in regions)))
    return sum(min(n, drafts[g]) for g, n in ref.items()) / sum(ref.values())


def _trigrams(text: str) -> Counter:
    return Counter(text[i:i + 3] for i in range(len(text) - 2))


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _passes(bench: dict) -> dict[str, dict]:
    """page name -> {"hsd": passes, "ar": passes, "mal": ..., "tokens": ...} of a one-page-per-document run."""
    out = {}
    for rec in bench["pages"]:
        m = rec["methods"]
        out[rec["doc"]] = {"hsd": m["hsd"]["forward_passes"], "ar": m.get("ar", {}).get("forward_passes", 0),
                           "tokens": m["hsd"].get("generated_tokens", 0),
                           "stage2": m["hsd"].get("stage2_passes", 0)}
    return out


def draft_pages(folder: Path, names: list[str], spec: str, log=None) -> dict[str, list]:
    """The drafts of ``folder/pairs/NAME.pdf`` (first page) by the drafter ``spec``."""
    from core.bench.runner import make_drafter
    from core.documents import open_document

    drafter, _ = make_drafter(spec)
    out = {}
    for n, name in enumerate(names):
        with open_document(folder / "pairs" / f"{name}.pdf") as doc:
            out[name] = drafter.draft(doc.page(0))
        if log and (n + 1) % 20 == 0:
            log(f"drafted {n + 1}/{len(names)}")
    return out


def kind_rows(set_dir: Path, born: dict, scan: dict, born_drafts: dict, scan_drafts: dict) -> list[dict]:
    """One row per kind (and ``all``): passes, ratios, order and text reached on both halves."""
    born_p, scan_p = _passes(born), _passes(scan)
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name in sorted(set(born_p) & set(scan_p)):
        by_kind[name.split("_", 1)[0]].append(name)
    rows = []
    for kind, names in list(sorted(by_kind.items())) + [("all", sorted(set(born_p) & set(scan_p)))]:
        row = {"kind": kind, "pages": len(names)}
        for half, passes, drafts in (("born", born_p, born_drafts), ("scan", scan_p, scan_drafts)):
            row[f"{half}_hsd"] = sum(passes[n]["hsd"] for n in names)
            row[f"{half}_ar"] = sum(passes[n]["ar"] for n in names)
            tokens, stage2 = sum(passes[n]["tokens"] for n in names), sum(passes[n]["stage2"] for n in names)
            row[f"{half}_mal"] = tokens / stage2 if stage2 else 0.0
            orders, reached = [], []
            for n in names:
                if n not in drafts:
                    continue
                layout = json.loads((set_dir / "layout" / f"{n}.json").read_text(encoding="utf-8"))
                acc = order_accuracy(layout["regions"], drafts[n])
                if acc is not None:
                    orders.append(acc)
                ref = (set_dir / half / "pairs" / f"{n}.md").read_text(encoding="utf-8")
                reached.append(text_reached(ref, drafts[n]))
            row[f"{half}_order"] = sum(orders) / len(orders) if orders else None
            row[f"{half}_reached"] = sum(reached) / len(reached) if reached else None
        row["ratio"] = row["scan_hsd"] / row["born_hsd"] if row["born_hsd"] else float("inf")
        row["worst"] = max(((scan_p[n]["hsd"] / max(1, born_p[n]["hsd"]), n) for n in names), default=(0.0, ""))
        rows.append(row)
    return rows


def markdown_table(rows: list[dict]) -> str:
    def pct(v):
        return "-" if v is None else f"{100 * v:.1f} %"
    lines = ["| kind | pages | hsd passes born / scan | scan / born | worst page | mean accepted length born / scan | "
             "reading order born / scan | text reached born / scan |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        name = f"**{r['kind']}**" if r["kind"] == "all" else r["kind"]
        lines.append(f"| {name} | {r['pages']} | {r['born_hsd']} / {r['scan_hsd']} | {r['ratio']:.2f}x | "
                     f"{r['worst'][0]:.2f}x ({r['worst'][1]}) | {r['born_mal']:.2f} / {r['scan_mal']:.2f} | "
                     f"{pct(r['born_order'])} / {pct(r['scan_order'])} | {pct(r['born_reached'])} / {pct(r['scan_reached'])} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="per-kind report of the generated scan set")
    parser.add_argument("set", help="the folder hsd bench-corpus --scan-set wrote")
    parser.add_argument("--born", required=True, help="bench.json of hsd bench SET/born")
    parser.add_argument("--scan", required=True, help="bench.json of hsd bench SET/scan")
    parser.add_argument("--drafter", default=None, help="drafter spec for the order and text columns "
                        "(default: each run's own)")
    parser.add_argument("--out", default=None, help="write the table here (and rows as JSON beside it)")
    args = parser.parse_args(argv)
    set_dir = Path(args.set)
    born = json.loads(Path(args.born).read_text(encoding="utf-8"))
    scan = json.loads(Path(args.scan).read_text(encoding="utf-8"))
    names = sorted({r["doc"] for r in scan["pages"]} & {r["doc"] for r in born["pages"]})
    log = lambda s: print(s, flush=True)  # noqa: E731
    born_drafts = draft_pages(set_dir / "born", names, args.drafter or born["info"]["drafter"])
    scan_drafts = draft_pages(set_dir / "scan", names, args.drafter or scan["info"]["drafter"], log)
    rows = kind_rows(set_dir, born, scan, born_drafts, scan_drafts)
    table = markdown_table(rows)
    print(table)
    if args.out:
        Path(args.out).write_text(table, encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
