"""One benchmark report from runs over disjoint parts of a corpus (``hsd bench --docs`` shards run
side by side, or a run stopped half-way and its ``pages.jsonl``).

    python -m tools.bench.merge_runs OUT RUN1/bench.json RUN2/pages.jsonl ... [--command CMD]

writes OUT's ``bench.json``, ``report.md`` and plots as ``hsd bench`` does (``core.bench.report``).
"""

from __future__ import annotations

import json
from pathlib import Path

from core.bench.report import write_outputs


def merge_results(results: list[dict]) -> dict:
    """One result from runs over disjoint parts of a corpus (``--docs`` shards run side by side):
    pages in document-name order, the first run's info with the methods all runs share."""
    if not results:
        raise ValueError("nothing to merge")
    methods = [m for m in results[0]["info"]["methods"] if all(m in r["info"]["methods"] for r in results)]
    pages = sorted((p for r in results for p in r["pages"]), key=lambda p: (p["doc"], p["page"]))
    seen = set()
    for p in pages:
        key = (p["doc"], p["page"])
        if key in seen:
            raise ValueError(f"page {key} appears in two runs")
        seen.add(key)
    info = dict(results[0]["info"], methods=methods)
    info["shards"] = len(results)
    drafters = sorted({r["info"]["drafter"] for r in results})
    info["drafter"] = ", ".join(drafters)
    return {"info": info, "config": results[0].get("config"), "pages": pages}


def load_run(path: str | Path) -> dict:
    """A run's ``bench.json``, or the ``pages.jsonl`` an unfinished run left (info line, then pages)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        lines = [json.loads(line) for line in text.splitlines() if line.strip()]
        if not lines:
            raise ValueError(f"{path}: no pages yet")
        return {"info": lines[0]["info"], "config": None, "pages": lines[1:]}
    return json.loads(text)


def main(argv=None) -> int:
    """``python -m tools.bench.merge_runs OUT RUN1/bench.json RUN2/bench.json ... [--command CMD]``"""
    import argparse

    p = argparse.ArgumentParser(prog="python -m tools.bench.merge_runs", description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("runs", nargs="+")
    p.add_argument("--command", default=None, help="the command line to print in the report")
    a = p.parse_args(argv)
    results = [load_run(r) for r in a.runs]
    agg = write_outputs(merge_results(results), a.out, a.command)
    print(f"{agg['pages']} pages -> {a.out}/report.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
