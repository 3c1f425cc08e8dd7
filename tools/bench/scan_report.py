"""Per-kind report of the generated scan set: what the scan drafter costs, how it orders, what it reads.

    hsd bench SET/born --target replay --tokenizer qwen --methods ar,hsd --out bench-born
    hsd bench SET/scan --target replay --tokenizer qwen --methods ar,hsd --out bench-scan
    python -m tools.bench.scan_report SET --born bench-born/bench.json --scan bench-scan/bench.json \
        --compare auto:layout=cdla --out scan-report.md

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


def draft_pages(folder: Path, names: list[str], specs: list[str], log=None) -> dict[str, dict[str, list]]:
    """{spec: {name: regions}}: the drafts of ``folder/pairs/NAME.pdf`` (first page) by each drafter
    spec. The OCR drafters of the specs share one OCR pass per page (their layouts differ, their
    lines do not), so comparing layouts costs the layout models only."""
    import hashlib

    from core.bench.runner import make_drafter
    from core.documents import open_document

    drafters = {spec: make_drafter(spec)[0] for spec in specs}
    memo: dict = {}

    def shared(drafter, page):
        ocr = drafter.choose(page) if hasattr(drafter, "choose") else drafter
        if hasattr(ocr, "ocr_lines") and not getattr(ocr, "_shares_ocr", False):
            own = ocr.ocr_lines

            def ocr_lines(pixels, scale, own=own):
                key = (hashlib.sha1(pixels.tobytes()).hexdigest(), scale)
                if key not in memo:
                    memo.clear()  # one page at a time
                    memo[key] = own(pixels, scale)
                return memo[key]

            ocr.ocr_lines, ocr._shares_ocr = ocr_lines, True
        return drafter

    out: dict[str, dict[str, list]] = {spec: {} for spec in specs}
    for n, name in enumerate(names):
        with open_document(folder / "pairs" / f"{name}.pdf") as doc:
            page = doc.page(0)
            for spec, drafter in drafters.items():
                out[spec][name] = shared(drafter, page).draft(page)
        if log and (n + 1) % 10 == 0:
            log(f"drafted {n + 1}/{len(names)}")
    return out


def save_drafts(path: Path, drafts: dict[str, dict[str, list]]) -> None:
    path.write_text(json.dumps({spec: {name: [r.to_dict() for r in regions] for name, regions in pages.items()}
                                for spec, pages in drafts.items()}), encoding="utf-8")


def load_drafts(path: Path) -> dict[str, dict[str, list]]:
    from core.drafters.base import Region

    data = json.loads(path.read_text(encoding="utf-8"))
    return {spec: {name: [Region.from_dict(r) for r in regions] for name, regions in pages.items()}
            for spec, pages in data.items()}


def draft_quality(set_dir: Path, half: str, drafts: dict[str, list]) -> dict[str, dict]:
    """Per kind and ``all``: mean reading order and text reached of ``drafts`` ({name: regions})."""
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name in sorted(drafts):
        by_kind[name.split("_", 1)[0]].append(name)
    by_kind["all"] = sorted(drafts)
    out: dict[str, dict] = {}
    if not drafts:
        return out
    for kind, names in by_kind.items():
        orders, reached = [], []
        for n in names:
            layout = json.loads((set_dir / "layout" / f"{n}.json").read_text(encoding="utf-8"))
            acc = order_accuracy(layout["regions"], drafts[n])
            if acc is not None:
                orders.append(acc)
            reached.append(text_reached((set_dir / half / "pairs" / f"{n}.md").read_text(encoding="utf-8"), drafts[n]))
        out[kind] = {"order": sum(orders) / len(orders) if orders else None,
                     "reached": sum(reached) / len(reached) if reached else None, "pages": len(names)}
    return out


def kind_rows(born: dict, scan: dict, born_quality: dict, scan_quality: dict) -> list[dict]:
    """One row per kind (and ``all``): passes and ratios of the two runs, with reading order and text
    reached of both halves (``draft_quality``)."""
    born_p, scan_p = _passes(born), _passes(scan)
    by_kind: dict[str, list[str]] = defaultdict(list)
    for name in sorted(set(born_p) & set(scan_p)):
        by_kind[name.split("_", 1)[0]].append(name)
    rows = []
    for kind, names in list(sorted(by_kind.items())) + [("all", sorted(set(born_p) & set(scan_p)))]:
        row = {"kind": kind, "pages": len(names)}
        for half, passes, quality in (("born", born_p, born_quality), ("scan", scan_p, scan_quality)):
            row[f"{half}_hsd"] = sum(passes[n]["hsd"] for n in names)
            row[f"{half}_ar"] = sum(passes[n]["ar"] for n in names)
            tokens, stage2 = sum(passes[n]["tokens"] for n in names), sum(passes[n]["stage2"] for n in names)
            row[f"{half}_mal"] = tokens / stage2 if stage2 else 0.0
            row[f"{half}_order"] = quality.get(kind, {}).get("order")
            row[f"{half}_reached"] = quality.get(kind, {}).get("reached")
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
    parser.add_argument("set", help="the folder tools.bench.scan_set wrote")
    parser.add_argument("--born", help="bench.json (or pages.jsonl) of hsd bench SET/born; shards comma-separated")
    parser.add_argument("--scan", help="bench.json (or pages.jsonl) of hsd bench SET/scan; shards comma-separated")
    parser.add_argument("--drafter", default="auto", help="drafter spec of the order and text columns (default auto)")
    parser.add_argument("--compare", default="", help="more drafter specs whose order and text columns are "
                        "reported beside it, drafted with the same OCR (e.g. auto:layout=cdla)")
    parser.add_argument("--drafts", default=None, help="keep the drafts in this JSON file (reused when present)")
    parser.add_argument("--docs", default=None, help="only pages whose names start with one of these (comma-separated)")
    parser.add_argument("--out", default=None, help="write the tables here (and rows as JSON beside it)")
    args = parser.parse_args(argv)
    set_dir = Path(args.set)
    specs = [args.drafter] + [s for s in args.compare.split(",") if s]
    names = sorted(p.stem for p in (set_dir / "scan" / "pairs").glob("*.pdf"))
    if args.docs:
        names = [n for n in names if any(n.startswith(prefix) for prefix in args.docs.split(","))]
    cache = Path(args.drafts) if args.drafts else None
    if cache and cache.is_file():
        drafts = load_drafts(cache)
    else:
        log = lambda s: print(s, flush=True)  # noqa: E731
        drafts = {"born:" + spec: pages for spec, pages in draft_pages(set_dir / "born", names, specs[:1]).items()}
        drafts.update(draft_pages(set_dir / "scan", names, specs, log))
        if cache:
            save_drafts(cache, drafts)
    text = ""
    if args.born and args.scan:
        born, scan = _bench(Path(args.born)), _bench(Path(args.scan))
        rows = kind_rows(born, scan, draft_quality(set_dir, "born", drafts.get("born:" + specs[0], {})),
                         draft_quality(set_dir, "scan", drafts.get(specs[0], {})))
        text += markdown_table(rows)
    quality = {spec: draft_quality(set_dir, "scan", drafts[spec]) for spec in specs if drafts.get(spec)}
    if quality:
        text += "\n" + compare_table(quality)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
        Path(args.out).with_suffix(".json").write_text(json.dumps(
            {"rows": rows if args.born and args.scan else [], "quality": quality}, indent=1), encoding="utf-8")
    return 0


def compare_table(quality: dict[str, dict[str, dict]]) -> str:
    """Reading order and text reached per kind for each drafter spec (scans)."""
    specs = list(quality)
    kinds = sorted(k for k in quality[specs[0]] if k != "all") + ["all"]
    lines = ["| kind | " + " | ".join(f"`{s}` order / text" for s in specs) + " |", "|---" * (len(specs) + 1) + "|"]
    for kind in kinds:
        cells = []
        for spec in specs:
            q = quality[spec].get(kind, {})
            cells.append(f"{_pct(q.get('order'))} / {_pct(q.get('reached'))}")
        lines.append(f"| {'**all**' if kind == 'all' else kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.1f} %"


def _bench(path: Path) -> dict:
    """A bench run's ``bench.json``, or its ``pages.jsonl`` (a run still going, or stopped); several,
    comma-separated (shards over disjoint pages), are read as one."""
    if "," in str(path):
        parts = [_bench(Path(p)) for p in str(path).split(",")]
        return {"info": parts[0].get("info", {}), "pages": [rec for part in parts for rec in part["pages"]]}
    if path.suffix == ".jsonl":
        pages = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return {"pages": [p.get("record", p) for p in pages if "methods" in p.get("record", p)]}
    return json.loads(path.read_text(encoding="utf-8"))


if __name__ == "__main__":
    raise SystemExit(main())
