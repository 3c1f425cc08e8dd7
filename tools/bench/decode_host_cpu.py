"""The decode's own host CPU a pass, by phase, on a replayed corpus.

    python -m tools.bench.decode_host_cpu CORPUS [--docs a,b] [--drafts-cache DIR] [--out FILE.json]
                                                 [--compact-ratio R]

Runs ``hsd bench CORPUS --target replay --methods hsd`` (Qwen tokens unless ``--tokenizer``) with the decode's phases timed
by the decoding thread's CPU clock (``time.thread_time``): each phase's time is its own, the phases
it calls left out, so the phases add up to the whole pass, and the admissions between passes
(``admit``: Stage 1's newcomers, their crops and drafts). ``target`` is the replay target's forward
and prefill, which stand for the model and are no part of hsd's own cost; everything else is hsd's. Only the
``hsd`` method's runs are timed (the benchmark runs ``ar`` beside it).

``--drafts-cache``: each page's drafts are pickled there the first time and read back after, so that
two versions of the decode compare on the same drafts without drafting the scans twice. The JSON
holds per phase the CPU milliseconds a pass, the passes, and a digest of every page's output tokens
(two versions decode alike when the digests and passes agree).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import pickle
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path


class PhaseClock:
    """CPU seconds of the decoding thread per phase, each phase's own (nested phases subtracted)."""

    def __init__(self):
        self.on = False  # only hsd's runs are timed (``hsd bench`` always runs ar beside)
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._threads = threading.local()  # per thread: its stack of [phase, start, seconds of nested phases]
        self._replaced: list[tuple[object, str, object]] = []  # what ``restore`` puts back

    def _stack(self) -> list[list]:
        """The calling thread's phases (a page's drafts may be built on another thread than the decode's)."""
        stack = getattr(self._threads, "stack", None)
        if stack is None:
            stack = self._threads.stack = []
        return stack

    def replace(self, owner, attr: str, new) -> None:
        """``owner.attr = new`` until ``restore``."""
        self._replaced.append((owner, attr, getattr(owner, attr)))
        setattr(owner, attr, new)

    def restore(self) -> None:
        for owner, attr, old in reversed(self._replaced):
            setattr(owner, attr, old)
        self._replaced = []

    def wrap(self, owner, attr: str, phase: str) -> None:
        inner = getattr(owner, attr)

        @functools.wraps(inner)
        def timed(*args, **kwargs):
            if not self.on:
                return inner(*args, **kwargs)
            stack = self._stack()
            frame = [phase, time.thread_time(), 0.0]
            stack.append(frame)
            try:
                return inner(*args, **kwargs)
            finally:
                stack.pop()
                spent = time.thread_time() - frame[1]
                self.seconds[phase] += spent - frame[2]
                self.calls[phase] += 1
                if stack:
                    stack[-1][2] += spent

        self.replace(owner, attr, timed)


def instrument(clock: PhaseClock) -> None:
    from core.bench import replay
    from core.speculative import decode, page_drafts, proposers, row_caches, textmatch

    clock.wrap(decode.SpeculativeDecoder, "_pass", "pass (rest: policy, loop)")
    # between passes, on the decoding thread too: newcomers' crops, prefill and drafts (Stage 1's regions)
    clock.wrap(decode, "_admit", "admit (rest: crops, drafts)")
    clock.wrap(page_drafts.PageDrafts, "__init__", "admit: page drafts")
    clock.wrap(decode.SpeculativeDecoder, "_keep_path", "keep path")
    clock.wrap(decode, "verify_greedy", "verify")
    for name in ("TokenNgramProposer", "TextProposer", "MisreadProposer", "OpeningProposer",
                 "NextRegionProposer", "OutputNgramProposer", "UnionProposal", "NoDrafts"):
        clock.wrap(getattr(proposers, name), "propose", f"propose: {name}")
    clock.wrap(proposers.OutputTail, "text", "propose: output tail decode")
    clock.wrap(proposers.OutputTail, "written", "propose: output tail decode")
    clock.wrap(textmatch.TextMatcher, "set_text", "drafts: text index")
    clock.wrap(page_drafts.PageDrafts, "rejoin", "drafts: rejoin (encode)")
    clock.wrap(page_drafts.PageDrafts, "grow", "drafts: grow")
    clock.wrap(page_drafts.PageDrafts, "refine", "drafts: refine")
    for attr in ("forward", "end_pass", "keep", "tidy", "join"):
        clock.wrap(row_caches.EagerRows, attr, f"cache: {attr}")
    clock.wrap(row_caches, "_compact", "cache: compact")
    clock.wrap(replay.ReplayTarget, "forward", "target (replay; not hsd)")
    for attr in ("prefill", "prefill_batch"):
        clock.wrap(replay.ReplayTarget, attr, "target: prefill (replay; not hsd)")


def compact_at(clock: PhaseClock, ratio: float) -> None:
    """Every decode's eager cache compacted at ``ratio`` (the share of columns a compaction would drop)."""
    from core.speculative import decode

    made = decode.row_caches
    clock.replace(decode, "row_caches", lambda target, rows, cache, valid, _ratio: made(target, rows, cache, valid,
                                                                                        ratio))


def cache_drafts(folder: Path, clock: PhaseClock) -> None:
    """Each page's drafts pickled in ``folder`` once, read back after (``hsd bench`` drafts first)."""
    from core import page_pipeline
    from core.bench import runner

    folder.mkdir(parents=True, exist_ok=True)
    drafted_fresh = runner.render_and_draft

    def file_of(page) -> Path:
        key = f"{page.document.path}:{page.index}"
        return folder / (hashlib.sha1(key.encode()).hexdigest() + ".pickle")

    def render_and_draft(page, dpi, drafter, background=False):
        path = file_of(page)
        if path.is_file():
            regions, seconds, error, lines = pickle.loads(path.read_bytes())
            return page_pipeline.DraftedPage(page.number, page.width, page.height, None, _Fixed(regions, error, lines),
                                             seconds)
        drafted = drafted_fresh(page, dpi, drafter, background=background)
        d = drafted.drafts
        path.write_bytes(pickle.dumps((d.result(), drafted.seconds, d.error, list(d.early_lines()))))
        return drafted

    def prepare(drafter, page):
        if not file_of(page).is_file():
            prepare_fresh(drafter, page)

    prepare_fresh = runner.prepare_drafter
    clock.replace(runner, "render_and_draft", render_and_draft)
    clock.replace(runner, "prepare_drafter", prepare)


class _Fixed:
    def __init__(self, regions, error, lines):
        self._regions, self.error, self._lines = regions, error, lines

    def result(self):
        return self._regions

    def early_lines(self):
        return self._lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus")
    ap.add_argument("--docs", default=None)
    ap.add_argument("--drafts-cache", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--tokenizer", default="qwen", help="replay token granularity (hsd bench's --tokenizer)")
    ap.add_argument("--compact-ratio", type=float, default=None,
                    help="the eager cache's compaction threshold instead of tuning.COMPACT_HOLE_FRACTION")
    args = ap.parse_args(argv)

    from core.bench import runner

    clock = PhaseClock()
    try:
        return _measure(args, clock)
    finally:
        clock.restore()


def _measure(args, clock: PhaseClock) -> int:
    from core.bench import runner

    instrument(clock)
    if args.compact_ratio is not None:
        compact_at(clock, args.compact_ratio)
    if args.drafts_cache:
        cache_drafts(Path(args.drafts_cache), clock)
    digests = {}
    compare = runner._compare_methods

    def keep_outputs(rec, methods, outputs, texts, replay):
        digests[f"{rec['doc']} p{rec['page']}"] = hashlib.sha1(repr(outputs.get("hsd")).encode()).hexdigest()[:16]
        return compare(rec, methods, outputs, texts, replay)

    clock.replace(runner, "_compare_methods", keep_outputs)
    run_fresh = runner.run_document

    def run_document(pdf, config, *rest, **kwargs):
        clock.on = config.mode == "hsd"
        try:
            return run_fresh(pdf, config, *rest, **kwargs)
        finally:
            clock.on = False

    clock.replace(runner, "run_document", run_document)
    cfg = runner.BenchConfig(corpus=args.corpus, target="replay", methods="hsd", tokenizer=args.tokenizer,
                             docs=args.docs.split(",") if args.docs else None, human_reference=None)
    result = runner.run_bench(cfg, log=lambda s: None)
    pages = result["pages"]
    passes = {f"{p['doc']} p{p['page']}": p["methods"]["hsd"]["forward_passes"] for p in pages}
    decode_passes = sum(p["methods"]["hsd"].get("decode_passes", 0) for p in pages)
    hsd_ms = sum(s for k, s in clock.seconds.items() if not k.startswith("target")) * 1000
    report = {
        "pages": len(pages), "passes": sum(passes.values()), "decode_passes": decode_passes,
        "hsd_ms_per_pass": hsd_ms / max(1, decode_passes),
        "phases_ms_per_pass": {k: round(1000 * s / max(1, decode_passes), 4)
                               for k, s in sorted(clock.seconds.items(), key=lambda kv: -kv[1])},
        "compactions": clock.calls.get("cache: compact", 0),
        "calls": dict(clock.calls), "page_passes": passes, "page_outputs": digests,
    }
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text)
    print(f"{len(pages)} pages, {decode_passes} decode passes, hsd host CPU {report['hsd_ms_per_pass']:.3f} ms a pass, "
          f"{report['compactions']} compactions")
    for k, v in report["phases_ms_per_pass"].items():
        print(f"  {v:8.3f}  {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
