"""Where the decode thread's wall goes beyond its passes, and what else in its process held the
interpreter lock meanwhile, per method, on the simulated GPU.

    python -m tools.bench.decode_gil DIR [--gpu-pass-ms 5] [--methods ar,hsd] [--docs a,b]
                                         [--render-process on|off] [--json OUT.json]

Runs ``hsd bench DIR --target simulated-gpu --tokenizer qwen`` (each document in one document run,
the drafter beside the decode). Around each page's decode (``ReplayDecoder.decode_image``) on the
decoding thread: its wall, its CPU (``time.thread_time``: the engine's own work), its wait for a
core (Linux's ``/proc/thread-self/schedstat``, the run delay) and the simulated GPU's sleeps it
asked for (the passes). What is left of the wall is time the thread was blocked but neither
asleep in a pass nor runnable: waiting for the interpreter lock (and each sleep's timer slack,
some 0.05-0.1 ms a pass: the sleeps are counted beside it). Its waits for its pages
(``DraftAhead.next``: a document's first page, and the later ones) are counted apart.

Beside it, the calls that hold the lock for long in the decode's process are timed on every other
thread while a method's document runs (each call's own time, nested timed calls left out): a scan
page's turn (``orientation.page_turn``: an ink profile, OCR where the ink cannot tell), the page's
render for the decode (``core.page_pipeline.render``, its turn left out), a text-layer check, a
figure crop, the drafting process's answers read (``ProcessDrafter._receive``, the lock free while
it waits). ``--render-process on`` renders and turns the decode's pages in the rendering process
(``tuning.RENDER_PROCESS``; read in this process only). Linux for the core wait; elsewhere it reads 0.
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import defaultdict
from pathlib import Path

from tools.bench.decode_core_wait import run_delay, simulated_gpu_parser, simulated_gpu_run

#: (module, owner attribute path, label) of the calls timed on the threads beside the decode.
HOLDERS = (
    ("core.drafters.orientation", "page_turn", "page turn"),
    ("core.draft_ahead", "render", "render for the decode"),
    ("core.documents", "text_layer_is_usable", "text-layer check"),
    ("core.documents", "Page.render_region", "figure crop"),
    ("core.drafters.process", "ProcessDrafter._receive", "drafting answers (lock free while waiting)"),
    ("core.drafters.render_process", "RenderProcess._ask", "rendering process answers (lock free while waiting)"),
)


class CallClock:
    """Wall and CPU seconds of the wrapped calls per (method, label), each call's own: the time of
    timed calls nested in it is left out."""

    def __init__(self):
        self.method: str | None = None  # the method whose document run is on
        self.wall: dict = defaultdict(float)
        self.cpu: dict = defaultdict(float)
        self.calls: dict = defaultdict(int)
        self._local = threading.local()
        self._undo: list = []

    def wrap(self, module_name: str, path: str, label: str) -> None:
        import importlib

        owner = importlib.import_module(module_name)
        *parents, attr = path.split(".")
        for name in parents:
            owner = getattr(owner, name)
        original = getattr(owner, attr)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            if self.method is None or threading.current_thread().name == "hsd-decode":
                return original(*args, **kwargs)
            stack = getattr(self._local, "stack", None)
            if stack is None:
                stack = self._local.stack = []
            stack.append([0.0, 0.0])  # the nested calls' wall and CPU
            w0, c0 = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                wall, cpu = time.perf_counter() - w0, time.thread_time() - c0
                nested_wall, nested_cpu = stack.pop()
                key = (self.method, label)
                self.wall[key] += wall - nested_wall
                self.cpu[key] += cpu - nested_cpu
                self.calls[key] += 1
                if stack:
                    stack[-1][0] += wall
                    stack[-1][1] += cpu

        setattr(owner, attr, timed)
        self._undo.append((owner, attr, original))

    def restore(self) -> None:
        for owner, attr, original in reversed(self._undo):
            setattr(owner, attr, original)
        self._undo.clear()


class SleepCounter:
    """The simulated GPU's ``time`` module as it sees it, counting the sleeps asked for per thread."""

    def __init__(self, real):
        self._real = real
        self.asked: dict[int, float] = defaultdict(float)
        self.sleeps: dict[int, int] = defaultdict(int)

    def sleep(self, seconds: float) -> None:
        ident = threading.get_ident()
        self.asked[ident] += seconds
        self.sleeps[ident] += 1
        self._real.sleep(seconds)

    def __getattr__(self, name):
        return getattr(self._real, name)


def main(argv=None) -> int:
    parser = simulated_gpu_parser(__doc__.split("\n\n")[0])
    parser.add_argument("--render-process", choices=("on", "off"), default=None)
    args = parser.parse_args(argv)
    if not Path(args.dir).is_dir():
        print(f"{args.dir}: no such folder")
        return 2

    from core import tuning
    from core import draft_ahead
    from core.bench import document_run, runner, simulated_gpu

    if args.render_process is not None:
        tuning.RENDER_PROCESS = args.render_process == "on"
    parts: dict = defaultdict(lambda: defaultdict(float))
    clock = CallClock()
    sleeps = SleepCounter(simulated_gpu.time)
    decode, next_page, run_document = (document_run.ReplayDecoder.decode_image, draft_ahead.DraftAhead.next,
                                       runner.run_document)

    def timed_decode(self, page, *rest, **kwargs):
        ident, part = threading.get_ident(), parts[self.config.mode]
        asked0, sleeps0 = sleeps.asked[ident], sleeps.sleeps[ident]
        wait0, cpu0, wall0 = run_delay(), time.thread_time(), time.perf_counter()
        try:
            return decode(self, page, *rest, **kwargs)
        finally:
            part["wall"] += time.perf_counter() - wall0
            part["cpu"] += time.thread_time() - cpu0
            part["core wait"] += run_delay() - wait0
            part["passes asked"] += sleeps.asked[ident] - asked0
            part["sleeps"] += sleeps.sleeps[ident] - sleeps0

    def timed_next(self):
        first, wall0 = not self._asked, time.perf_counter()
        try:
            return next_page(self)
        finally:
            if clock.method is not None:
                parts[clock.method]["first page" if first else "next page"] += time.perf_counter() - wall0

    def method_run(pdf, config, *rest, **kwargs):
        clock.method = config.mode
        try:
            return run_document(pdf, config, *rest, **kwargs)
        finally:
            clock.method = None

    document_run.ReplayDecoder.decode_image = timed_decode
    draft_ahead.DraftAhead.next = timed_next
    runner.run_document = method_run
    simulated_gpu.time = sleeps
    for holder in HOLDERS:
        clock.wrap(*holder)
    try:
        result, load0, load1 = simulated_gpu_run(args)
    finally:
        clock.restore()
        simulated_gpu.time = sleeps._real
        runner.run_document = run_document
        draft_ahead.DraftAhead.next = next_page
        document_run.ReplayDecoder.decode_image = decode
    report = summary(result, args.methods.split(","), parts, clock, load0, load1, tuning.RENDER_PROCESS)
    print_report(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


def summary(result: dict, methods: list[str], parts: dict, clock: CallClock, load0, load1,
            render_process: bool) -> dict:
    pages = result["pages"]
    report = {"render_process": render_process, "pages": len(pages),
              "load": [round(load0[0], 2), round(load1[0], 2)], "methods": {}}
    for name in methods:
        runs = [p["methods"].get(name, {}) for p in pages]
        mode = name.split("-")[0]
        part = parts.get(mode, {})
        blocked = part.get("wall", 0.0) - part.get("cpu", 0.0) - part.get("core wait", 0.0) - part.get("passes asked", 0.0)
        held = {label: {"calls": clock.calls[(m, label)], "wall_seconds": round(clock.wall[(m, label)], 3),
                        "cpu_seconds": round(clock.cpu[(m, label)], 3)}
                for (m, label) in list(clock.calls) if m == mode}
        report["methods"][name] = {
            "passes": sum(r.get("forward_passes", 0) for r in runs),
            "pages_wall_seconds": round(sum(r.get("wall_seconds", 0.0) for r in runs), 3),
            "document_run_seconds": round(sum(p.get("document_run_seconds", {}).get(name, 0.0) for p in pages), 3),
            "decode": {key: round(value, 3) for key, value in part.items()},
            "decode_blocked_beyond_passes": round(blocked, 3),
            "beside": held,
            "documents": documents(pages, name)}
    return report


def documents(pages: list[dict], name: str) -> dict:
    """Per document: its run's seconds and its pages' passes under method ``name``."""
    out: dict = {}
    for p in pages:
        doc = out.setdefault(p["doc"], {"seconds": 0.0, "passes": 0})
        doc["seconds"] = round(doc["seconds"] + p.get("document_run_seconds", {}).get(name, 0.0), 3)
        doc["passes"] += p["methods"].get(name, {}).get("forward_passes", 0)
    return out


def print_report(report: dict) -> None:
    print(f"{report['pages']} pages, rendering process {'on' if report['render_process'] else 'off'}, "
          f"load {report['load'][0]} -> {report['load'][1]}")
    for name, m in report["methods"].items():
        d = m["decode"]
        print(f"  {name}: passes {m['passes']}, documents {m['document_run_seconds']:.2f} s; the decode thread: "
              f"wall {d.get('wall', 0):.2f} s = passes asked {d.get('passes asked', 0):.2f} ({d.get('sleeps', 0):.0f} "
              f"sleeps) + CPU {d.get('cpu', 0):.2f} + core wait {d.get('core wait', 0):.2f} + blocked otherwise "
              f"(interpreter lock, timer slack) {m['decode_blocked_beyond_passes']:.2f}; waited for "
              f"a document's first page {d.get('first page', 0):.2f}, a later page {d.get('next page', 0):.2f}")
        for label, h in sorted(m["beside"].items(), key=lambda kv: -kv[1]["wall_seconds"]):
            print(f"      beside: {label:50s} {h['calls']:5d} calls, wall {h['wall_seconds']:7.2f} s, "
                  f"CPU {h['cpu_seconds']:7.2f} s")
        print("      documents: " + ", ".join(f"{doc} {d['seconds']:.1f} s / {d['passes']} passes"
                                              for doc, d in m["documents"].items()))


if __name__ == "__main__":
    raise SystemExit(main())
