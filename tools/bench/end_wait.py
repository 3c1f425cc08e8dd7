"""What a document's end waits for: the seconds between its last page's decode and its Markdown.

A document run (``core.run``) ends once its last page's regions are saved; where the drafter is
slower than the decode, the decode has finished every page while the drafting process still reads
or lays out the last ones. ``trace`` runs a command (``hsd bench ... --target simulated-gpu``) with
timestamps logged in every Python process it starts, the drafting process included (a
``sitecustomize`` on ``PYTHONPATH`` that wraps the run's, the drafting thread's and the OCR
drafter's steps; nothing in the product changes); ``report`` reads them: for each document run of
a mode, the pages outstanding when the decode ended and, for each, the seconds after that spent
queued behind earlier pages, recognising (the chunk in hand, a figure's lines), in the layout model
(PyMuPDF's, once for the layout from the detected lines and once for the groups of the lines read),
rendering and detecting, and the rest (the process round trip, tables, the reading order).

    python -m tools.bench.end_wait trace /tmp/trace -- hsd bench CORPUS --target simulated-gpu ...
    python -m tools.bench.end_wait report /tmp/trace [--mode hsd] [--pages]
"""

from __future__ import annotations

import argparse
import functools
import glob
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

ENV = "HSD_END_TRACE"

# -- the hooks (installed by the generated sitecustomize in every process) -------------------------


def install(folder: str) -> None:
    """Wrap the steps ``report`` reads; each call logs one line of JSON to ``folder``."""
    lock, state, local = threading.Lock(), {}, threading.local()

    def log(ev, **fields):
        with lock:
            if "file" not in state:
                state["file"] = open(os.path.join(folder, f"trace_{os.getpid()}.jsonl"), "a", buffering=1)
            fields.update(ev=ev, t=time.time(), pid=os.getpid(), th=threading.current_thread().name)
            state["file"].write(json.dumps(fields, default=str) + "\n")

    def wrap(owner, name, label, before=None, after=None):
        original = getattr(owner, name, None)
        if original is None:
            return

        @functools.wraps(original)
        def wrapped(*args, **kwargs):
            fields = before(*args, **kwargs) if before else {}
            t0 = time.time()
            out = original(*args, **kwargs)
            log(label, t0=t0, **fields, **(after(out) if after else {}))
            return out
        setattr(owner, name, wrapped)

    import core.draft_ahead as draft_ahead
    import core.drafters.ocr_pipeline as pipeline
    import core.drafters.process as process
    import core.drafters.rapidocr as rapidocr
    import core.drafters.scan_layout as scan_layout
    import core.export as export
    import core.run as run

    wrap(run.DocumentRun, "__init__", "run", before=lambda self, request, *a, **k: {
        "input": str(request.input), "mode": request.config.mode})
    wrap(run.PageSaver, "save", "decode_end", before=lambda self, page, decoded: {"page": page.number})
    wrap(export.DocumentOutput, "write_markdown", "markdown")

    def draft_before(self, page, drafted):
        local.page = page.index + 1
        return {"page": page.index + 1, "layout_only": drafted is not None and drafted.drafts.decode_ended()}
    wrap(draft_ahead.DraftAhead, "_draft", "draft", before=draft_before)
    wrap(process.ProcessDrafter, "stop_reading", "stop", before=lambda self: {"page": getattr(local, "page", None)})
    original_ask = process.ProcessDrafter._ask

    def ask(self, what, page, on_lines=None, meanwhile=None, waiting=None):
        if on_lines is not None:
            told = on_lines

            def on_lines(lines, number=page.index + 1):
                log("lines", page=number, n=len(lines))
                return told(lines)
        return original_ask(self, what, page, on_lines, meanwhile, waiting)
    process.ProcessDrafter._ask = ask
    # the drafting process: the OCR drafter's steps
    wrap(rapidocr.RapidOCRDrafter, "draft", "c_page", before=lambda self, page, *a, **k: {"page": page.index + 1})
    wrap(rapidocr.RapidOCRDrafter, "draft_layout", "c_page", before=lambda self, page: {"page": page.index + 1})
    wrap(rapidocr.RapidOCRDrafter, "_rendered", "c_render")
    wrap(pipeline.OcrPipeline, "detect", "c_detect")
    wrap(pipeline.OcrPipeline, "recognise", "c_recognise")
    wrap(scan_layout, "layout_groups", "c_layout_model")
    wrap(rapidocr.RapidOCRDrafter, "layout_ahead", "c_layout_model")


# -- the report ------------------------------------------------------------------------------------


def load(folder: str) -> list[dict]:
    events = []
    for name in glob.glob(os.path.join(folder, "trace_*.jsonl")):
        with open(name, encoding="utf-8") as f:
            events.extend(json.loads(line) for line in f if line.strip())
    return sorted(events, key=lambda e: e.get("t0", e["t"]))


def _overlap(event: dict, start: float, end: float) -> float:
    return max(0.0, min(event["t"], end) - max(event.get("t0", event["t"]), start))


def document_ends(events: list[dict], mode: str = "hsd") -> list[dict]:
    """Per document run of ``mode``: its end wait and, for each page outstanding when its last
    decode ended, where the seconds after went (module docstring)."""
    starts = [e for e in events if e["ev"] == "run"]
    out = []
    for k, start in enumerate(starts):
        if start["mode"] != mode:
            continue
        stop = starts[k + 1]["t0"] if k + 1 < len(starts) else float("inf")
        window = [e for e in events if start["t0"] <= e.get("t0", e["t"]) < stop]
        ends = [e["t"] for e in window if e["ev"] == "decode_end"]
        markdown = [e["t0"] for e in window if e["ev"] == "markdown"]
        if not ends or not markdown:
            continue
        decoded, end = max(ends), markdown[0]
        pages = []
        for d in (e for e in window if e["ev"] == "draft" and e["t"] > decoded):
            child = [e for e in window if e["ev"].startswith("c_") and e["th"] == "MainThread"
                     and e["t0"] >= d["t0"] - 0.05 and e["t"] <= d["t"] + 0.05]
            after = max(decoded, d["t0"])
            model = sum(_overlap(e, after, end) for e in child if e["ev"] == "c_layout_model")
            recognise = sum(_overlap(e, after, end) for e in child if e["ev"] == "c_recognise")
            # the stop's layout runs inside the recognition (its check asks for it)
            inside = sum(_overlap(m, max(after, r["t0"]), r["t"]) for r in child if r["ev"] == "c_recognise"
                         for m in child if m["ev"] == "c_layout_model")
            prepare = sum(_overlap(e, after, end) for e in child if e["ev"] in ("c_render", "c_detect"))
            ran = min(d["t"], end) - after
            part = {"page": d["page"], "layout_only": d["layout_only"], "queued": max(0.0, d["t0"] - decoded),
                    "layout_model": model, "recognise": recognise - inside, "render_detect": prepare,
                    "lines_after": sum(e["n"] for e in window if e["ev"] == "lines" and e["page"] == d["page"]
                                       and e["t"] > decoded),
                    "stop_late": min([e["t"] - decoded for e in window if e["ev"] == "stop"
                                      and e.get("page") == d["page"] and e["t"] >= decoded], default=None)}
            part["other"] = ran - model - part["recognise"] - prepare
            pages.append(part)
        out.append({"document": Path(start["input"]).name, "end_wait": end - decoded, "pages": pages})
    return out


def report(folder: str, mode: str = "hsd", per_page: bool = False) -> str:
    documents = document_ends(load(folder), mode)
    total, counts, lines = Counter(), Counter(), []
    for doc in documents:
        total["end_wait"] += doc["end_wait"]
        lines.append(f"{doc['document']}: {doc['end_wait']:.2f} s, pages outstanding "
                     f"{[p['page'] for p in doc['pages']]}")
        for p in doc["pages"]:
            counts["outstanding"] += 1
            counts["layout_only"] += p["layout_only"]
            counts["lines_after"] += p["lines_after"]
            for key in ("queued", "layout_model", "recognise", "render_detect", "other"):
                total[key] += p[key]
            if per_page:
                lines.append(f"  page {p['page']} ({'layout only' if p['layout_only'] else 'read'}): queued "
                             f"{p['queued']:.2f}, layout model {p['layout_model']:.2f}, recognition "
                             f"{p['recognise']:.2f}, render+detect {p['render_detect']:.2f}, other {p['other']:.2f}; "
                             f"lines told after the decode ended {p['lines_after']}")
    lines.append(f"{len(documents)} documents: end wait {total['end_wait']:.2f} s; outstanding pages' seconds "
                 f"after the decode ended (they overlap across pages): "
                 + ", ".join(f"{k} {total[k]:.2f}" for k in ("queued", "layout_model", "recognise",
                                                              "render_detect", "other"))
                 + f"; pages outstanding {counts['outstanding']}, of them layout only {counts['layout_only']}; "
                   f"lines told after the decode ended {counts['lines_after']}")
    return "\n".join(lines)


def trace(folder: str, command: list[str]) -> int:
    """Run ``command`` with the hooks in every Python process it starts; the log goes to ``folder``."""
    site = Path(folder) / "site"
    site.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    (site / "sitecustomize.py").write_text(
        "import os, sys\n"
        f"if os.environ.get({ENV!r}):\n"
        f"    sys.path.insert(0, {str(root)!r})\n"
        "    from tools.bench.end_wait import install\n"
        f"    install(os.environ[{ENV!r}])\n", encoding="utf-8")
    env = dict(os.environ, **{ENV: str(Path(folder).resolve())})
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(root)] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.call(command, env=env)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.bench.end_wait", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    t = sub.add_parser("trace", help="run a command with the trace on")
    t.add_argument("folder")
    t.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command")
    r = sub.add_parser("report", help="what each document's end waited for")
    r.add_argument("folder")
    r.add_argument("--mode", default="hsd")
    r.add_argument("--pages", action="store_true", help="each outstanding page too")
    args = parser.parse_args(argv)
    if args.command == "trace":
        command = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        if not command:
            parser.error("trace: give the command after --")
        return trace(args.folder, command)
    if not glob.glob(os.path.join(args.folder, "trace_*.jsonl")):
        print(f"{args.folder}: no trace here (run `trace` first)", file=sys.stderr)
        return 2
    print(report(args.folder, args.mode, args.pages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
