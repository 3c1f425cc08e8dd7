"""How long the decode's thread waited for a core while it decoded, per method, on the simulated GPU.

    python -m tools.bench.decode_core_wait DIR [--gpu-pass-ms 5] [--methods ar,hsd] [--docs a,b]
                                                [--json OUT.json]

Runs ``hsd bench DIR --target simulated-gpu --tokenizer qwen`` (its documents converted as
documents, the drafter beside the decode) and, around each page's decode
(``core.bench.document_run.ReplayDecoder.decode_image``), reads the decoding thread's time spent
runnable but not running (Linux's ``/proc/thread-self/schedstat``, its second field: the
scheduler's run delay). Reports per decode mode (``ar``, ``hsd``) that wait and the thread's CPU
seconds, per method the pages' passes and wall seconds, and the machine's load as the run starts
and ends. Where the drafter's
threads hold every core when the decode wakes between passes, the wait grows with the passes;
``tuning.OCR_LEAVE_DECODE_CORE`` leaves the decode a core. To compare two settings run it from two
trees, one after the other on an idle machine (the drafting process imports its own ``tuning``, so
a setting is changed in the tree, not here). Linux only; elsewhere the wait reads 0.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path


def run_delay() -> float:
    """Seconds the calling thread has waited for a core so far (0 where the system does not say)."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def simulated_gpu_run(args) -> tuple[dict, tuple, tuple]:
    """``hsd bench`` of ``args.dir`` on the simulated GPU (``args``: ``gpu_pass_ms``, ``methods``,
    ``docs``), quietly: its result and the load averages before and after."""
    from core.bench import runner

    load0 = os.getloadavg()
    cfg = runner.BenchConfig(corpus=args.dir, target="simulated-gpu", methods=args.methods, tokenizer="qwen",
                             docs=args.docs.split(",") if args.docs else None, gpu_pass_ms=args.gpu_pass_ms)
    result = runner.run_bench(cfg, log=lambda s: None)
    return result, load0, os.getloadavg()


def simulated_gpu_parser(description: str) -> argparse.ArgumentParser:
    """The arguments of a ``simulated_gpu_run``: the set's folder, the pass cost, the methods, the
    documents, and a JSON file for the report."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("dir")
    parser.add_argument("--gpu-pass-ms", type=float, default=5.0)
    parser.add_argument("--methods", default="ar,hsd")
    parser.add_argument("--docs", default=None)
    parser.add_argument("--json", type=Path)
    return parser


def main(argv=None) -> int:
    parser = simulated_gpu_parser(__doc__.split("\n\n")[0])
    args = parser.parse_args(argv)
    if not Path(args.dir).is_dir():
        print(f"{args.dir}: no such folder")
        return 2

    from core import tuning
    from core.bench import document_run

    waits: dict[str, float] = defaultdict(float)
    cpu: dict[str, float] = defaultdict(float)
    decode = document_run.ReplayDecoder.decode_image

    def timed(self, page, *rest, **kwargs):
        wait0, cpu0 = run_delay(), time.thread_time()
        try:
            return decode(self, page, *rest, **kwargs)
        finally:
            waits[self.config.mode] += run_delay() - wait0
            cpu[self.config.mode] += time.thread_time() - cpu0

    document_run.ReplayDecoder.decode_image = timed
    try:
        result, load0, load1 = simulated_gpu_run(args)
    finally:
        document_run.ReplayDecoder.decode_image = decode
    pages = result["pages"]
    report = {"setting": {"OCR_LEAVE_DECODE_CORE": tuning.OCR_LEAVE_DECODE_CORE}, "pages": len(pages),
              "load": [round(load0[0], 2), round(load1[0], 2)],
              "decode": {mode: {"core_wait_seconds": round(waits[mode], 3), "cpu_seconds": round(cpu[mode], 3)}
                         for mode in sorted(waits)},
              "methods": {}}
    for name in args.methods.split(","):
        runs = [p["methods"].get(name, {}) for p in pages]
        report["methods"][name] = {"passes": sum(r.get("forward_passes", 0) for r in runs),
                                   "wall_seconds": round(sum(r.get("wall_seconds", 0.0) for r in runs), 3)}
    print(f"{len(pages)} pages, OCR_LEAVE_DECODE_CORE={tuning.OCR_LEAVE_DECODE_CORE}, "
          f"load {report['load'][0]} -> {report['load'][1]}")
    for mode, d in report["decode"].items():
        print(f"  decode {mode:8s} waited for a core {d['core_wait_seconds']:8.2f} s, its CPU {d['cpu_seconds']:8.2f} s")
    for name, m in report["methods"].items():
        print(f"  method {name:8s} passes {m['passes']}, pages' wall {m['wall_seconds']:.2f} s")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
