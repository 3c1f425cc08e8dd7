"""Aggregates, the speed targets, the Markdown report and the PNG plots of a benchmark run.

Every average is over **all** pages (or documents) of a group: nothing is filtered for length,
repetition or errors. A method that failed on a page counts with speed-up 0 there and is listed.

Definitions (per page, ``m`` a method, ``ar`` the baseline from the same run):

* forward-pass speed-up ``ar.forward_passes / m.forward_passes``; forward passes count every prefill
  (one per region crop and the page) and every decoding pass of both stages;
* wall-clock speed-up ``ar.wall / m.wall``, wall = render + draft + engine seconds (``ar`` is not
  charged the drafter; with background drafting, render + engine, the engine's seconds spanning the
  drafter's); on the simulated GPU a page's share of its document run (``core.bench.document_run``),
  its simulated seconds, the engine's CPU time per pass and the passes before its drafts arrived;
* mean accepted length = output tokens per page-level (Stage 2) pass, 1.0 for ``ar``;
  ``regions``: tokens per Stage 1 pass (its passes are batched over regions).

``mean`` = mean of per-page ratios; ``total`` = ratio of the sums (the whole corpus as one job).
Document level (longest documents): ratio of the sums over the document's pages.

Documents end to end (``document_end_to_end``): a method's seconds for a document are its document
run's, from the run's start to its end (the last page's drafts saved), every page counted, plus the
drafter's seconds charged where the run was handed drafts made first; the end-to-end speed-up
``ar / m`` beside the pass speed-up over the same pages, and their ratio (1.0: drafting and the
engine's own work all hidden behind the passes). Beside them the speed-up to the last page's
Markdown (a page is done when its decode ends; its regions are saved when its drafts come): the
sum of the pages' wall-clock. For the set, ratios of the sums over documents.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

from core.bench.human_reference import describe

TARGETS_DOC = {
    "fp_speedup_mean": ("hsd forward-pass speed-up over ar, mean over pages", ">=", 3.5),
    "fp_speedup_longest": ("hsd forward-pass speed-up on the longest documents (each, min)", ">=", 7.0),
    "mean_accepted_length": ("hsd mean accepted length (tokens per Stage 2 pass, all pages pooled)", ">=", 6.0),
    "hsd_over_page": ("hsd speed-up / page speed-up (mean over pages)", ">=", 1.3),
    "oracle_over_hsd": ("hsd-oracle speed-up / hsd speed-up (mean over pages)", "<=", 2.0),
    "wall_wins_multi_region": ("pages with >1 region where hsd beats ar in wall-clock (drafter included)", "all", None),
    "end_to_end_over_passes": ("hsd end-to-end speed-up / its pass speed-up, documents of several pages (ratio of "
                               "sums, drafting included)", ">=", 0.8),
}


def _mean(xs):
    xs = list(xs)
    return sum(xs) / len(xs) if xs else None


def _ratio(a, b):
    return a / b if b else 0.0


def method_names(result: dict) -> list[str]:
    return list(result["info"]["methods"])


def summarize(pages: list[dict], methods: list[str]) -> dict:
    """Aggregates of one group of pages, per method (see the module docstring)."""
    out = {}
    for m in methods:
        fp_r, wall_r, mal, ed, teds_ = [], [], [], [], []
        fp_sum = ar_fp_sum = wall_sum = ar_wall_sum = gen = s2 = dec = ar_dec = 0
        gpu = cpu = beside = 0.0
        errors = 0
        for p in pages:
            ar, r = p["methods"]["ar"], p["methods"].get(m)
            if r is None:
                continue
            if r.get("error"):
                errors += 1
            fp_r.append(_ratio(ar["forward_passes"], r["forward_passes"]))
            wall_r.append(_ratio(ar["wall_seconds"], r["wall_seconds"]))
            fp_sum += r["forward_passes"]
            ar_fp_sum += ar["forward_passes"]
            wall_sum += r["wall_seconds"]
            ar_wall_sum += ar["wall_seconds"]
            dec += r.get("decode_passes", 0)
            ar_dec += ar.get("decode_passes", 0)
            gpu += r.get("gpu_seconds") or 0.0
            cpu += r.get("decode_cpu_seconds") or 0.0
            beside += (r.get("background_drafting") or {}).get("draft_seconds") or 0.0
            mal.append(r["mean_accepted_length"])
            gen += r.get("generated_tokens", 0)
            s2 += r.get("stage2_passes", 0) or (r.get("stage1_passes", 0) if m.startswith("regions") else 0)
            if r.get("edit_distance") is not None:
                ed.append(r["edit_distance"])
            if r.get("teds") is not None:
                teds_.append(r["teds"])
        out[m] = {
            "pages": len(fp_r), "errors": errors,
            "fp_speedup_mean": _mean(fp_r), "fp_speedup_total": _ratio(ar_fp_sum, fp_sum),
            "decode_speedup_total": _ratio(ar_dec, dec),
            "wall_speedup_mean": _mean(wall_r), "wall_speedup_total": _ratio(ar_wall_sum, wall_sum),
            "forward_passes": fp_sum, "wall_seconds": wall_sum,
            "gpu_seconds": gpu, "decode_cpu_seconds": cpu, "engine_ms_per_pass": _ratio(1000.0 * cpu, fp_sum),
            "draft_beside_seconds": beside,
            "mean_accepted_length": _ratio(gen, s2), "mean_accepted_length_page_mean": _mean(mal),
            "edit_distance": _mean(ed), "teds": _mean(teds_), "teds_pages": len(teds_),
        }
    return out


def longest_documents(pages: list[dict], share: float = 0.25) -> list[str]:
    """The documents with the longest references (top ``share`` by reference length, at least one)."""
    size: dict[str, int] = defaultdict(int)
    for p in pages:
        size[p["doc"]] += p.get("reference_tokens") or p["reference_chars"]
    ranked = sorted(size, key=lambda d: -size[d])
    return ranked[:max(1, round(share * len(ranked)))]


def document_speedups(pages: list[dict], method: str) -> dict[str, float]:
    ar, m = defaultdict(int), defaultdict(int)
    for p in pages:
        if method in p["methods"]:
            ar[p["doc"]] += p["methods"]["ar"]["forward_passes"]
            m[p["doc"]] += p["methods"][method]["forward_passes"]
    return {d: _ratio(ar[d], m[d]) for d in ar}


def document_end_to_end(pages: list[dict], methods: list[str]) -> dict:
    """Each document's end-to-end seconds and passes per method, and hsd's (every method's) speed-ups
    over ``ar`` (module docstring): ``{"per_document": {doc: {...}}, "set": {m: ...},
    "multi_page": {m: ...}}``, the last two over all documents and over those of several pages."""
    docs: dict[str, dict] = {}
    for p in pages:
        d = docs.setdefault(p["doc"], {"pages": 0, "seconds": defaultdict(float), "passes": defaultdict(int),
                                       "walls": defaultdict(float), "runs": {}})
        d["pages"] += 1
        d["runs"].update(p.get("document_run_seconds") or {})
        for m, r in p["methods"].items():
            d["passes"][m] += r["forward_passes"]
            d["walls"][m] += r["wall_seconds"]
            d["seconds"][m] += r.get("charged_draft_seconds") or 0.0
    per_document = {}
    for name, d in docs.items():
        # a record without its run's seconds (an older bench.json): its pages' wall-clock adds up to it
        seconds = {m: d["seconds"][m] + d["runs"][m] if m in d["runs"] else d["walls"][m] for m in d["passes"]}
        per_document[name] = {"pages": d["pages"], "seconds": seconds, "passes": dict(d["passes"]),
                              "markdown_seconds": dict(d["walls"]),
                              "methods": {m: _end_to_end(seconds, d["passes"], d["walls"], m, [name], d["pages"])
                                          for m in methods if m != "ar" and m in seconds and "ar" in seconds}}

    def over(names):
        out = {}
        for m in methods:
            have = [n for n in names if m in per_document[n]["methods"]]
            if m == "ar" or not have:
                continue
            seconds = {k: sum(per_document[n]["seconds"][k] for n in have) for k in ("ar", m)}
            passes = {k: sum(per_document[n]["passes"][k] for n in have) for k in ("ar", m)}
            walls = {k: sum(per_document[n]["markdown_seconds"][k] for n in have) for k in ("ar", m)}
            out[m] = _end_to_end(seconds, passes, walls, m, have, sum(per_document[n]["pages"] for n in have))
        return out

    return {"per_document": per_document, "set": over(list(per_document)),
            "multi_page": over([n for n, d in per_document.items() if d["pages"] > 1])}


def _end_to_end(seconds: dict, passes: dict, walls: dict, m: str, documents: list[str], pages: int) -> dict:
    e2e, fp = _ratio(seconds["ar"], seconds[m]), _ratio(passes["ar"], passes[m])
    return {"documents": len(documents), "pages": pages, "ar_seconds": seconds["ar"], "seconds": seconds[m],
            "markdown_speedup": _ratio(walls["ar"], walls[m]),
            "ar_passes": passes["ar"], "passes": passes[m], "end_to_end_speedup": e2e, "pass_speedup": fp,
            "over_passes": _ratio(e2e, fp)}


def aggregate(result: dict) -> dict:
    pages, methods = result["pages"], method_names(result)
    kinds = sorted({p["kind"] for p in pages})
    longest = longest_documents(pages)
    agg = {
        "overall": summarize(pages, methods),
        "by_kind": {k: summarize([p for p in pages if p["kind"] == k], methods) for k in kinds},
        "longest_documents": {
            "documents": longest,
            "summary": summarize([p for p in pages if p["doc"] in longest], methods),
            "per_document": {m: {d: v for d, v in document_speedups(pages, m).items() if d in longest}
                             for m in methods},
        },
        "drafts": {"edit_distance": _mean(p["drafts"]["edit_distance"] for p in pages),
                   "teds": _mean(p["drafts"]["teds"] for p in pages if p["drafts"]["teds"] is not None)},
        "end_to_end": document_end_to_end(pages, methods),
        "pages": len(pages), "documents": len({p["doc"] for p in pages}),
    }
    human = [p["human_reference"] for p in pages if p.get("human_reference")]
    if human:  # the same pages replayed against their human references (``core.bench.human_reference``)
        agg["human_reference"] = {
            "pages": len(human),
            "model_output": summarize([p for p in pages if p.get("human_reference")], method_names(result)),
            "human": summarize(human, [m for m in human[0]["methods"]]),
        }
    if any("lossless" in p for p in pages):
        checked = [p for p in pages if "lossless" in p]
        agg["lossless"] = {"pages": len(checked), "identical": sum(1 for p in checked if p["lossless"])}
    agg["targets"] = check_targets(result, agg)
    return agg


def check_targets(result: dict, agg: dict) -> dict:
    """The speed targets, each ``{value, threshold, op, met, what}`` (None where a method is missing)."""
    o = agg["overall"]
    out = {}

    def put(key, value):
        what, op, thr = TARGETS_DOC[key]
        met = None
        if value is not None:
            met = value >= thr if op == ">=" else value <= thr if op == "<=" else value
        out[key] = {"what": what, "value": value, "op": op, "threshold": thr, "met": met}

    hsd = o.get("hsd")
    put("fp_speedup_mean", hsd and hsd["fp_speedup_mean"])
    per_doc = agg["longest_documents"]["per_document"].get("hsd")
    put("fp_speedup_longest", min(per_doc.values()) if per_doc else None)
    put("mean_accepted_length", hsd and hsd["mean_accepted_length"])
    page = o.get("page")
    put("hsd_over_page", hsd and page and _ratio(hsd["fp_speedup_mean"], page["fp_speedup_mean"]))
    oracle = o.get("hsd-oracle")
    put("oracle_over_hsd", hsd and oracle and _ratio(oracle["fp_speedup_mean"], hsd["fp_speedup_mean"]))
    multi = [p for p in result["pages"] if p["regions"] > 1 and "hsd" in p["methods"]]
    wins = [p for p in multi if p["methods"]["hsd"]["wall_seconds"] < p["methods"]["ar"]["wall_seconds"]]
    # Replay passes cost nothing: its wall-clock is the engine's Python time, no model's. The target is
    # about a real model (tiny on CPU): judged on real / replay-cost runs only.
    judged = result["info"].get("target") != "replay"
    out["wall_wins_multi_region"] = {
        "what": TARGETS_DOC["wall_wins_multi_region"][0], "value": f"{len(wins)}/{len(multi)}", "op": "all",
        "threshold": None, "met": (len(wins) == len(multi)) if multi and hsd and judged else None,
        "losing_pages": [f"{p['doc']} p{p['page']}" for p in multi if p not in wins],
    }
    several = agg["end_to_end"]["multi_page"].get("hsd")
    put("end_to_end_over_passes", several and several["over_passes"])
    if not judged:  # replay's clock reads the engine's Python alone
        out["end_to_end_over_passes"]["met"] = None
    return out


# --- Markdown ------------------------------------------------------------------------------------


def _f(v, digits=2, suffix=""):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    return f"{v:.{digits}f}{suffix}"


def _method_table(summary: dict, methods: list[str]) -> list[str]:
    lines = ["| method | pages | fwd-pass speed-up (mean / total) | decode speed-up (total) | wall speed-up "
             "(mean / total) | mean accepted length | edit distance | TEDS |",
             "|---|---|---|---|---|---|---|---|"]
    for m in methods:
        s = summary.get(m)
        if not s:
            continue
        err = f" ({s['errors']} errors)" if s["errors"] else ""
        lines.append(
            f"| {m} | {s['pages']}{err} | {_f(s['fp_speedup_mean'])}x / {_f(s['fp_speedup_total'])}x | "
            f"{_f(s['decode_speedup_total'])}x | {_f(s['wall_speedup_mean'])}x / {_f(s['wall_speedup_total'])}x | "
            f"{_f(s['mean_accepted_length'])} | {_f(s['edit_distance'], 3)} | "
            f"{_f(s['teds'], 3)}{'' if s['teds'] is None else ' (%d p)' % s['teds_pages']} |")
    return lines


def _simulated_gpu_table(summary: dict, methods: list[str], info: dict, pages: list[dict]) -> list[str]:
    """Wall-clock on the simulated GPU: what each method's clock read end to end, beside its passes,
    what of it the simulated passes were and what the engine itself cost per pass (the decoding
    thread's CPU time); then each page's passes before its drafts arrived."""
    L = ["", "## Simulated GPU", "",
         f"A simulation, not a GPU run: {info['target_detail']}. Every pass (prefills included) sleeps the "
         "cost model's time without holding the GIL. Each method converts each document in one document run "
         "(`core.run`, as `hsd convert` does): one thread renders and drafts the pages ahead of the decode "
         "(in a drafting process of lower priority, `core.drafters.process`), "
         "a page decodes without drafts until its drafts arrive; `ar` drafts nothing. A page's wall-clock is "
         "the run's seconds from the end of the page before (or the run's start) to the end of its own, so "
         "drafting, rendering and the engine's own work count wherever the decode waited for them. Engine "
         "per pass: the decoding thread's CPU time over its passes. End to end / passes: the wall-clock "
         "speed-up over the pass speed-up (1.0: drafting and engine entirely hidden); each document's: section "
         "Documents end to end.", "",
         "| method | pages | passes (speed-up, total) | wall seconds (speed-up mean / total) | end to end / passes "
         "| simulated GPU seconds | engine CPU per pass | drafting (s) |", "|---|---|---|---|---|---|---|---|"]
    for m in methods:
        s = summary.get(m)
        if not s:
            continue
        L.append(f"| {m} | {s['pages']} | {s['forward_passes']} ({_f(s['fp_speedup_total'])}x) | "
                 f"{s['wall_seconds']:.1f} ({_f(s['wall_speedup_mean'])}x / {_f(s['wall_speedup_total'])}x) | "
                 f"{_f(_ratio(s['wall_speedup_total'], s['fp_speedup_total']))} | "
                 f"{s['gpu_seconds']:.1f} | {s['engine_ms_per_pass']:.2f} ms | {s['draft_beside_seconds']:.1f} |")
    drafting = [m for m in methods if any("background_drafting" in p["methods"].get(m, {}) for p in pages)]
    if drafting:
        L += ["", "Passes before the page's drafts arrived, and in brackets before its first OCR lines did (its "
              "drafting seconds):", "",
              "| document | page | " + " | ".join(drafting) + " |", "|---|---|" + "---|" * len(drafting)]
        for p in pages:
            cells = []
            for m in drafting:
                r = p["methods"].get(m, {})
                d = (r.get("background_drafting") or {}).get("draft_seconds")
                before, lines = r.get("passes_before_drafts", "-"), r.get("passes_before_lines")
                if lines is not None and lines != before:
                    before = f"{before} [{lines}]"
                cells.append(f"{before} of {r.get('forward_passes', '-')}"
                             + (f" ({d:.1f} s)" if d is not None else ""))
            L.append(f"| {p['doc']} | {p['page']} | " + " | ".join(cells) + " |")
    return L


def _end_to_end_table(e2e: dict, methods: list[str]) -> list[str]:
    """Each document's end-to-end speed-up over ar beside its pass speed-up, and the set's."""
    shown = [m for m in methods if m != "ar" and m in e2e["set"]]
    if not shown:
        return []
    L = ["", "## Documents end to end", "",
         "Each document converted in one run per method, from the run's start to its end (its last page's "
         "drafts saved), every page counted, drafting included; beside it the pass speed-up over the same "
         "pages. End to end / passes: 1.0 when drafting and the engine's own work are all hidden behind the "
         "passes. To the last Markdown: the speed-up to the last page's Markdown (a page is done when its "
         "decode ends; its regions are saved when its drafts come).", "",
         "| document | pages | method | ar seconds | seconds | end-to-end speed-up | pass speed-up | end to end / "
         "passes | to the last Markdown |", "|---|---|---|---|---|---|---|---|---|"]

    def row(label, m, s):
        return (f"| {label} | {s['pages']} | {m} | {s['ar_seconds']:.1f} | {s['seconds']:.1f} | "
                f"{_f(s['end_to_end_speedup'])}x | {_f(s['pass_speedup'])}x | {_f(s['over_passes'])} | "
                f"{_f(s['markdown_speedup'])}x |")

    for name, d in e2e["per_document"].items():
        L += [row(name, m, d["methods"][m]) for m in shown if m in d["methods"]]
    for label, key in (("**set**", "set"), ("**documents of several pages**", "multi_page")):
        if key == "set" or e2e["multi_page"] != e2e["set"]:
            L += [row(f"{label} ({e2e[key][m]['documents']})", m, e2e[key][m]) for m in shown if m in e2e[key]]
    return L


def describe_load(info: dict) -> str:
    """One line: how many busy processes spun beside the run, and the machine's load average."""
    n, load = info.get("busy", 0), info.get("load_average") or {}

    def triple(x):
        return " / ".join(f"{v:.2f}" for v in x) if x else "-"

    during = [v for v in (load.get("documents") or {}).values() if v is not None]
    head = (f"busy {n}: {n} process{'es' if n != 1 else ''} spinning at the normal priority beside the timed runs, "
            "started and stopped by hsd bench" if n else "busy 0: no busy process started beside the run")
    return (head + f"; load average (1 / 5 / 15 min) {triple(load.get('start'))} at the start, "
            f"{triple(load.get('end'))} at the end"
            + (f", 1 min after each document {min(during):.2f}-{max(during):.2f}" if during else ""))


def _beside_table(h: dict, info: dict) -> list[str]:
    """The model-output replay beside the human-reference replay of the same pages and drafts."""
    L = ["", f"## Beside the human reference ({h['pages']} pages with one, same renders and drafts)", "",
         f"Human references from `{info.get('human_reference')}`.", "",
         "| replay target | method | fwd-pass speed-up (mean / total) | mean accepted length | ar passes | "
         "method passes |", "|---|---|---|---|---|---|"]
    for label, summary in ((describe(info.get("reference_kind", "human")), h["model_output"]),
                           ("target output = human reference", h["human"])):
        s = summary.get("hsd")
        if s:
            L.append(f"| {label} | hsd | {_f(s['fp_speedup_mean'])}x / {_f(s['fp_speedup_total'])}x | "
                     f"{_f(s['mean_accepted_length'])} | {summary['ar']['forward_passes']} | {s['forward_passes']} |")
    return L


def markdown_report(result: dict, agg: dict, plots: list[str] | None = None, command: str | None = None) -> str:
    info, methods = result["info"], method_names(result)
    L = [f"# HSD benchmark: {Path(info['corpus']).name}", ""]
    L.append(f"- target: **{info['target']}**, {info['target_detail']}; tokenizer: {info['tokenizer']}")
    if info["target"] != "real":
        L.append(f"- reference: **{describe(info.get('reference_kind', 'human'))}**")
    L.append(f"- drafter: {info['drafter']}; methods: {', '.join(methods)}")
    L.append(f"- {agg['pages']} pages of {agg['documents']} documents, every page counted; started {info['started']}; "
             f"machine: {info['machine']}")
    L.append(f"- machine load: {describe_load(info)}")
    if command:
        L.append(f"- command: `{command}`")
    beside = any("background_drafting" in m for p in result["pages"] for m in p["methods"].values())
    if info["target"] == "simulated-gpu":
        L.append("- drafting: ahead of each `page` / `hsd` decode in its document run (section Simulated GPU)")
    else:
        L.append("- drafting: " + ("on a thread beside each `page` / `hsd` decode, whose wall-clock is render + "
                                   "engine seconds (the engine's span the drafter's)" if beside else
                                   "before the decode, charged to `page` and `hsd` (not to `ar`)"))
    loading = sum(p.get("draft_load_seconds") or 0.0 for p in result["pages"])
    if loading >= 0.01:
        L.append(f"- drafter models loaded in {loading:.1f} s before the first page that needed them, not "
                 "charged to any page (the target's loading is not either)")
    if info["target"] != "real":
        L += ["", "The replay target's greedy output *is* the reference Markdown (for a region crop: the "
              "reference span that region covers). It stands for a reader exactly as accurate as the "
              "reference: these numbers show how the engine's acceptance behaves with real drafts of real "
              "documents, not how accurate any model is. Its one-hot logits leave nothing for the relaxed "
              "rule, so `tau < 1` equals `tau = 1` under replay."]
    L += ["", "## Targets", "", "| target | value | threshold | met |", "|---|---|---|---|"]
    for t in agg["targets"].values():
        thr = "all" if t["op"] == "all" else f"{t['op']} {t['threshold']}"
        met = {True: "yes", False: "**no**", None: "-"}[t["met"]]
        if t["met"] is None and t["value"] is not None and info["target"] == "replay":
            met = "n/a (replay passes cost nothing; judged on clocked targets)"
        L.append(f"| {t['what']} | {_f(t['value'])} | {thr} | {met} |")
    lose = agg["targets"]["wall_wins_multi_region"].get("losing_pages")
    if lose and agg["targets"]["wall_wins_multi_region"]["met"] is not None:
        L.append(f"\nPages where hsd is slower than ar in wall-clock: {', '.join(lose[:30])}"
                 + (" ..." if len(lose) > 30 else ""))
    if info["target"] == "simulated-gpu":
        L += _simulated_gpu_table(agg["overall"], methods, info, result["pages"])
    if info["target"] != "replay" and "end_to_end" in agg:
        L += _end_to_end_table(agg["end_to_end"], methods)
    L += ["", "## All pages", ""] + _method_table(agg["overall"], methods)
    d = agg["drafts"]
    L.append(f"\nDrafts alone: edit distance {_f(d['edit_distance'], 3)}, TEDS {_f(d['teds'], 3)}.")
    if "lossless" in agg:
        ll = agg["lossless"]
        L.append(f"\nLossless check (hsd at tau 1 token-identical to ar): {ll['identical']}/{ll['pages']} pages.")
    if "human_reference" in agg:
        L += _beside_table(agg["human_reference"], info)
    L += ["", "## Per document kind", "", "Forward-pass speed-up over ar (mean over pages) / wall-clock speed-up "
          "(mean) / mean accepted length.", ""]
    L.append("| kind | pages | " + " | ".join(m for m in methods if m != "ar") + " |")
    L.append("|---|---|" + "---|" * (len(methods) - 1))
    for kind, s in agg["by_kind"].items():
        cells = [f"{_f(s[m]['fp_speedup_mean'])}x / {_f(s[m]['wall_speedup_mean'])}x / {_f(s[m]['mean_accepted_length'])}"
                 for m in methods if m != "ar"]
        L.append(f"| {kind} | {s['ar']['pages']} | " + " | ".join(cells) + " |")
    ld = agg["longest_documents"]
    L += ["", f"## Longest documents ({', '.join(ld['documents'])})", ""] + _method_table(ld["summary"], methods)
    for m in ("hsd", "hsd-oracle", "page"):
        if m in ld["per_document"]:
            L.append(f"\n{m} per document (ratio of sums): "
                     + ", ".join(f"{k} {v:.2f}x" for k, v in ld["per_document"][m].items()))
    if plots:
        L += ["", "## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots]
    L += ["", "## Per page", "", "| document | page | ref tokens | regions (matched) | draft edit | "
          + " | ".join(f"{m} fp" for m in methods) + " | hsd mal |",
          "|---|---|---|---|---|" + "---|" * len(methods) + "---|"]
    for p in result["pages"]:
        hsd = p["methods"].get("hsd")
        L.append(f"| {p['doc']} | {p['page']} | {p.get('reference_tokens') or '-'} | {p['regions']} "
                 f"({p.get('matched_regions', '-')}) | {_f(p['drafts']['edit_distance'], 3)} | "
                 + " | ".join(str(p["methods"][m]["forward_passes"]) if m in p["methods"] else "-" for m in methods)
                 + f" | {_f(hsd and hsd['mean_accepted_length'])} |")
    return "\n".join(L) + "\n"


# --- plots ---------------------------------------------------------------------------------------


def make_plots(result: dict, agg: dict, out_dir: Path) -> list[str]:
    """Three small PNGs; returns their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    methods = [m for m in method_names(result) if m != "ar"]
    paths = []

    def save(fig, ax, name: str) -> None:
        if ax is not None:
            ax.legend(fontsize=7)
        fig.tight_layout()
        paths.append(str(out_dir / name))
        fig.savefig(paths[-1], dpi=80)
        plt.close(fig)

    # 1. speed-up per document kind
    kinds = list(agg["by_kind"]) + ["all"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8), sharey=False)
    width = 0.8 / max(1, len(methods))
    for ax, key, title in ((axes[0], "fp_speedup_mean", "forward-pass speed-up over ar"),
                           (axes[1], "wall_speedup_mean", "wall-clock speed-up over ar (drafter incl.)")):
        for k, m in enumerate(methods):
            vals = [(agg["by_kind"][kd] if kd != "all" else agg["overall"])[m][key] or 0 for kd in kinds]
            ax.bar([i + k * width for i in range(len(kinds))], vals, width, label=m)
        ax.axhline(1.0, color="k", lw=0.6)
        ax.set_xticks([i + width * (len(methods) - 1) / 2 for i in range(len(kinds))])
        ax.set_xticklabels(kinds, rotation=35, ha="right", fontsize=7)
        ax.set_title(title, fontsize=9)
    save(fig, axes[0], "speedup_by_kind.png")

    # 2. accepted-length histogram (tokens per page-level pass)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for m in methods:
        hist: dict[int, int] = defaultdict(int)
        for p in result["pages"]:
            for g, c in (p["methods"].get(m, {}).get("gains") or {}).items():
                hist[int(g)] += c
        if not hist:
            continue
        xs = sorted(hist)
        ax.step(xs, [hist[x] for x in xs], where="mid", label=m)
    ax.set_yscale("log")
    ax.set_xlabel("tokens gained per page-level pass (accepted + bonus)")
    ax.set_ylabel("passes")
    save(fig, ax, "accepted_length_hist.png")

    # 3. forward passes against output length
    fig, ax = plt.subplots(figsize=(6, 4))
    for m in ["ar"] + methods:
        xs = [p["methods"]["ar"]["generated_tokens"] for p in result["pages"] if m in p["methods"]]
        ys = [p["methods"][m]["forward_passes"] for p in result["pages"] if m in p["methods"]]
        ax.scatter([max(1, x) for x in xs], [max(1, y) for y in ys], s=8, label=m, alpha=0.7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("output length (ar tokens)")
    ax.set_ylabel("forward passes (prefills included)")
    save(fig, ax, "passes_vs_length.png")
    return paths


def write_outputs(result: dict, out_dir: str | Path, command: str | None = None) -> dict:
    """``bench.json`` (config, info, per-page records, aggregates), ``report.md`` and the plots."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    agg = aggregate(result)
    plots = make_plots(result, agg, out)
    (out / "bench.json").write_text(json.dumps(dict(result, aggregate=agg, command=command), indent=1,
                                               ensure_ascii=False, default=str), encoding="utf-8")
    (out / "report.md").write_text(markdown_report(result, agg, plots, command), encoding="utf-8")
    return agg
