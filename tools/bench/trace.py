"""Pass-by-pass trace of one page under the replay target: where do the passes go?

    python -m tools.bench.trace CORPUS DOC [--page N] [--method hsd] [--drafter auto] [--tokenizer auto]

Prints the stage breakdown, then every page-level pass as ``[gained/proposed] text`` (gained = tokens
the pass added, the bonus token included; proposed = tree nodes verified, root included), and a
summary of where passes gaining one token happen (no proposal vs a rejected proposal). Under replay
the output is the reference, so its tokens, cut by the gains, show exactly what each pass wrote.
As in the benchmark, the document's earlier pages are converted first with the same engine (what it
learned there, notation and output history, serves the traced page); ``--alone`` converts the page
by itself.

    python -m tools.bench.trace CORPUS --causes [--docs PREFIX,...] [--method hsd]

converts every page of the corpus (documents in order, as the benchmark does) and charges each
page-level pass to a cause (``tools.bench.causes``): formulas, tables, markup and style, text no draft
holds, text the drafts hold; one line per page and the corpus's table.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from core.bench.corpus import (load_corpus, oracle_regions, prepare_reference, region_references, region_spans,
                               split_reference)
from core.bench.runner import make_drafter, parse_methods, splitting_text
from core.engine import Engine, EngineConfig


def trace_page(corpus, doc_name, page_index=0, method="hsd", drafter="auto", tokenizer="auto", dpi=144,
               out=sys.stdout, alone=False) -> dict:
    from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
    from core.documents import open_document

    doc = load_corpus(corpus, [doc_name])[0]
    m = parse_methods(method)[-1]
    tok = ReplayTokenizer(base_tokenizer(tokenizer))
    target = ReplayTarget(tok)
    target.start_document()
    engine = Engine(EngineConfig(mode=m.mode, tau=m.tau, max_new_tokens=16384), target=target)
    engine.start_document(doc.name)
    dr, _ = make_drafter(drafter)
    with open_document(doc.pdf) as d:
        drafted, refs = _drafted_with_references(d, dr, doc)
        for i in ([page_index] if alone else range(page_index + 1)):
            ref = refs[i]
            res, regions = _replay_page(engine, target, m, d.page(i), drafted[i], ref, dpi)
    s = res.stats
    print(f"{doc.name} p{page_index + 1} {method}: {s.generated_tokens} tokens, {s.forward_passes} passes "
          f"(prefill {s.prefill_passes}, stage1 {s.stage1_passes}, stage2 {s.stage2_passes}), "
          f"{len(regions)} regions", file=out)
    for i, (r, st) in enumerate(zip(regions, res.region_stats)):
        if st.verified:
            print(f"  region {i} {r.label}: draft {st.drafted_tokens} tok, accepted {st.accepted_tokens}, "
                  f"output {st.output_tokens}, {st.forward_passes} passes", file=out)
    kind = "region" if m.mode == "regions" else "page"
    log = [(g, q) for k, g, q, _ in target.pass_log if k == kind]
    ids = tok.encode(ref)
    pos, parts = 0, []
    ones = Counter()
    for g, q in log:
        parts.append(f"[{g}/{q}]{tok.decode(ids[pos:pos + g])!r}")
        if g == 1:
            ones["no proposal" if q == 1 else "proposal rejected"] += 1
        pos += g
    if kind == "page":
        print(" ".join(parts), file=out)
    hist = Counter(g for g, _ in log)
    print(f"passes gaining 1 token: {dict(ones)}; gains histogram: {dict(sorted(hist.items()))}", file=out)
    return {"stats": s.to_dict(), "log": log, "one_token": dict(ones)}


def corpus_causes(corpus, docs=None, method="hsd", drafter="auto", tokenizer="auto", dpi=144,
                  out=sys.stdout) -> dict:
    """Every page of ``corpus`` (``docs``: name prefixes), each page-level pass charged to its cause."""
    from tools.bench.causes import CAUSES, add, markdown_table, page_causes
    from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
    from core.documents import open_document

    m = parse_methods(method)[-1]
    kind = "region" if m.mode == "regions" else "page"
    tok = ReplayTokenizer(base_tokenizer(tokenizer))
    target = ReplayTarget(tok)
    dr, _ = make_drafter(drafter)
    total, pages, rows = {}, 0, []
    print("| document | page | tokens | Stage 2 passes | " + " | ".join(CAUSES) + " |", file=out)
    print("|---|---|---|---|" + "---|" * len(CAUSES), file=out)
    for doc in load_corpus(corpus, docs):
        target.start_document()
        engine = Engine(EngineConfig(mode=m.mode, tau=m.tau, max_new_tokens=16384), target=target)
        engine.start_document(doc.name)
        with open_document(doc.pdf) as d:
            drafted, refs = _drafted_with_references(d, dr, doc)
            for i in range(d.page_count):
                ref = refs[i]
                res, regions = _replay_page(engine, target, m, d.page(i), drafted[i], ref, dpi)
                gains = target.gains(kind, final=res.stats.generated_tokens if kind == "page" else None)
                causes = page_causes(ref, [r.text for r in regions], tok.encode(ref), gains, tok.decode)
                add(total, causes)
                pages += 1
                rows.append({"doc": doc.name, "page": i + 1, "causes": causes, "stats": res.stats.to_dict()})
                print(f"| {doc.name} | {i + 1} | {res.stats.generated_tokens} | {len(gains)} | "
                      + " | ".join(f"{causes[c].get('passes', 0)} ({causes[c].get('gained', 0)})" for c in CAUSES)
                      + " |", file=out, flush=True)
    print("\nCells: passes (tokens written).\n", file=out)
    print("\n".join(markdown_table(total, pages)), file=out)
    return {"total": {c: dict(v) for c, v in total.items()}, "pages": rows}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tools.bench.trace", description=__doc__.split("\n\n")[0])
    p.add_argument("corpus")
    p.add_argument("doc", nargs="?")
    p.add_argument("--causes", action="store_true", help="every page of the corpus, passes charged to causes")
    p.add_argument("--docs", default=None, help="with --causes: comma-separated document name prefixes")
    p.add_argument("--page", type=int, default=1)
    p.add_argument("--method", default="hsd")
    p.add_argument("--drafter", default="auto")
    p.add_argument("--tokenizer", default="auto")
    p.add_argument("--alone", action="store_true", help="convert the page alone, not after its document's earlier pages")
    a = p.parse_args(argv)
    if a.causes:
        corpus_causes(a.corpus, a.docs.split(",") if a.docs else None, a.method, a.drafter, a.tokenizer)
        return 0
    if not a.doc:
        p.error("give a DOC to trace, or --causes")
    trace_page(a.corpus, a.doc, a.page - 1, a.method, a.drafter, a.tokenizer, alone=a.alone)
    return 0


def _drafted_with_references(document, drafter, doc) -> tuple[list, list[str]]:
    """Every page's regions, and the corpus reference split into pages along them."""
    drafted = [list(drafter.draft(document.page(i))) for i in range(document.page_count)]
    refs = split_reference(prepare_reference(doc.reference), [splitting_text(r) for r in drafted])
    return drafted, refs


def _replay_page(engine, target, method, page, regions, ref: str, dpi: int):
    """Convert ``page`` with the replay target reading ``ref`` (its regions their spans of it, or
    with oracle drafts the spans themselves); returns the result and the regions used."""
    spans = region_spans(ref, regions)
    if method.oracle:
        regions = oracle_regions(ref, regions, spans)
        target.set_page(ref, [r.text for r in regions])
    else:
        target.set_page(ref, region_references(ref, regions, spans))
    return engine.convert_image(page.render(dpi), regions, page.width, page.height, page.index + 1), regions


if __name__ == "__main__":
    sys.exit(main())
