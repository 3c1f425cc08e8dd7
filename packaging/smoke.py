"""Smoke test of the built bundle: does it start without Python, convert, and match ``hsd convert``?

    python packaging/smoke.py dist/hsd-studio [--sample PDF] [--keep DIR]
    python packaging/smoke.py --source            # the same checks on the source tree (tests use it)

Run it with the Python HSD Studio is installed in: the reference output comes from the unbundled
``python -m core.cli convert``. Checks, in order:

1. ``hsd --version`` runs.
2. ``hsd draft SAMPLE --json`` writes byte for byte the regions the unbundled ``hsd draft`` writes.
3. ``hsd tiny-model DIR --arch hunyuan_vl`` writes a tiny random model with the bundle itself.
4. The bundled ``hsd convert`` of the sample (text-layer drafts, HSD, a few tokens per page) gives
   byte for byte the Markdown (and figure files) of the unbundled one.
5. ``hsd-studio`` opens its window offscreen, converts the sample and exits 0 (``--exit-when-done``);
   its exported Markdown is again byte for byte the reference.
6. Every supported family (tiny random models of each) loads and converts one page.
7. When the source has the OCR drafter: the same comparison with ``--drafter rapidocr`` (the
   bundled RapidOCR models, onnxruntime and opencv).

Checks that do not need each other's results run at the same time (a check that needs the tiny
model waits for check 3, the app's for check 4's reference), and so do the programs within a check
(the reference and the bundled conversion, the families): ``PROGRAMS_AT_ONCE`` programs at most.
The bundle runs with PYTHONPATH and PYTHONHOME removed, offline (HF_HUB_OFFLINE=1) and offscreen.
Exit code 0 when every check passed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SAMPLE = ROOT / "resources" / "sample.pdf"
ARCH = "hunyuan_vl"
#: Every family the bundle must load (transformers imports their code by name, so a missing module
#: only shows when a model of that family loads).
FAMILIES = ("hunyuan_vl", "qwen2_5_vl", "qwen3_vl", "paddleocr_vl", "glm_ocr")
#: Programs running at once (the checks' and the references'): each is mostly one core's work, and
#: more than the cores would only add memory.
PROGRAMS_AT_ONCE = max(2, min(4, os.cpu_count() or 2))
_program_slots = threading.BoundedSemaphore(PROGRAMS_AT_ONCE)


@dataclass
class Settings:
    """What both sides convert with (the CLI flags and the app's settings file say the same)."""

    max_new_tokens: int = 60
    drafter: str = "textlayer"
    mode: str = "hsd"
    dpi: int = 144
    pages: str = ""
    timeout: float = 1800.0

    def cli_flags(self, drafter: str | None = None) -> list[str]:
        flags = ["--device", "cpu", "--drafter", drafter or self.drafter, "--mode", self.mode,
                 "--dpi", str(self.dpi), "--max-new-tokens", str(self.max_new_tokens), "-q"]
        return flags + (["--pages", self.pages] if self.pages else [])

    def studio_ini(self, model: Path, cache: Path) -> str:
        # QSettings ini: values with a slash or a colon are quoted
        return (f'[conversion]\nmodel="{model.as_posix()}"\ndevice=cpu\ndrafter={self.drafter}\nmode={self.mode}\n'
                f"tau=1\ndpi={self.dpi}\npages={self.pages}\nmax_new_tokens={self.max_new_tokens}\n\n"
                f'[General]\ncache_dir="{cache.as_posix()}"\n')


@dataclass
class Check:
    name: str
    ok: bool
    seconds: float
    detail: str = ""


@dataclass
class Programs:
    """How to start ``hsd`` and ``hsd-studio`` under test, and the reference ``hsd``."""

    hsd: list[str]
    studio: list[str]
    reference: list[str] = field(default_factory=lambda: [sys.executable, "-m", "core.cli"])
    env: dict = field(default_factory=dict)

    @classmethod
    def bundle(cls, folder: Path) -> "Programs":
        exe = ".exe" if sys.platform == "win32" else ""
        return cls(hsd=[str(folder / f"hsd{exe}")], studio=[str(folder / f"hsd-studio{exe}")], env=bundle_env())

    @classmethod
    def source(cls) -> "Programs":
        env = bundle_env()
        env["PYTHONPATH"] = str(ROOT)
        return cls(hsd=[sys.executable, "-m", "core.cli"], studio=[sys.executable, "-m", "app.main"], env=env)


def bundle_env() -> dict:
    """The environment of the programs under test: no Python paths, offline, offscreen, quiet."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env.update(QT_QPA_PLATFORM="offscreen", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def reference_env() -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def make_sample(path: Path) -> Path:
    """A two-page born-digital PDF (headings, paragraphs, a list, a ruled table) when the repository's
    ``resources/sample.pdf`` is absent."""
    import pymupdf

    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 80), "HSD Studio Smoke Test", fontsize=22, fontname="hebo")
    page.insert_textbox(pymupdf.Rect(56, 110, 539, 300),
                        "Speculative decoding lets a large model check many tokens in one forward pass. "
                        "A cheap drafter proposes the text and the model keeps the longest prefix it agrees with.",
                        fontsize=10.5, fontname="helv")
    page = doc.new_page(width=595, height=842)
    page.insert_text((56, 80), "2. A Small Table", fontsize=14, fontname="hebo")
    for r, row in enumerate([["Drafter", "Input"], ["textlayer", "PDF text"], ["rapidocr", "page image"]]):
        for c, cell in enumerate(row):
            x0, y0 = 56 + 130 * c, 100 + 20 * r
            page.draw_rect(pymupdf.Rect(x0, y0, x0 + 130, y0 + 20), color=(0, 0, 0), width=0.6)
            page.insert_text((x0 + 5, y0 + 14), cell, fontsize=10.5, fontname="helv")
    doc.save(str(path))
    doc.close()
    return path


def compare_outputs(expected_md: Path, actual_md: Path) -> list[str]:
    """Differences between two conversions: the Markdown bytes and the ``NAME_images/`` folders."""
    problems = []
    if not actual_md.exists():
        return [f"{actual_md} was not written"]
    if not expected_md.exists():
        return [f"{expected_md} was not written"]
    a, b = expected_md.read_bytes(), actual_md.read_bytes()
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        problems.append(f"{actual_md.name} differs from {expected_md} at byte {at} "
                        f"({len(b)} vs {len(a)} bytes): {b[max(0, at - 20):at + 40]!r}")
    images_a = expected_md.with_name(expected_md.stem + "_images")
    images_b = actual_md.with_name(actual_md.stem + "_images")
    files_a = {p.relative_to(images_a).as_posix(): p for p in images_a.rglob("*") if p.is_file()} if images_a.is_dir() else {}
    files_b = {p.relative_to(images_b).as_posix(): p for p in images_b.rglob("*") if p.is_file()} if images_b.is_dir() else {}
    if set(files_a) != set(files_b):
        problems.append(f"figure files differ: {sorted(set(files_a) ^ set(files_b))}")
    problems += [f"figure {name} differs" for name in sorted(set(files_a) & set(files_b))
                 if files_a[name].read_bytes() != files_b[name].read_bytes()]
    return problems


def _run(command: list[str], env: dict, timeout: float, log: Path) -> subprocess.CompletedProcess:
    with open(log, "ab") as out:
        out.write(("$ " + " ".join(command) + "\n").encode())
        out.flush()
        try:
            with _program_slots:
                done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      timeout=timeout, cwd=log.parent)
        except subprocess.TimeoutExpired as exc:
            out.write(exc.output or b"")
            return subprocess.CompletedProcess(command, 124, exc.output or b"")
        out.write(done.stdout + f"[exit {done.returncode}]\n".encode())
    return done


def _side_by_side(log: Path, *jobs) -> list:
    """Run each ``job(part_log)`` (a function running programs of its own) at the same time (their
    programs take their turns with every other check's, ``PROGRAMS_AT_ONCE`` at most). Returns their
    results in order; each job's log is appended to ``log`` in order afterwards, so that it reads as
    if they had run one after another."""
    parts = [log.with_name(f"{log.stem}.{n}{log.suffix}") for n in range(len(jobs))]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(lambda job, part: job(part), jobs, parts))
    with open(log, "ab") as out:
        for part in parts:
            if part.exists():
                out.write(part.read_bytes())
                part.unlink()
    return results


def _tail(done: subprocess.CompletedProcess, lines: int = 6) -> str:
    text = (done.stdout or b"").decode(errors="replace").strip().splitlines()
    return f"exit {done.returncode}: " + " | ".join(text[-lines:])


def run_checks(programs: Programs, sample: Path, work: Path, settings: Settings = Settings(),
               ocr: bool | None = None, app: bool = True, families: bool = True) -> list[Check]:
    """Every check, in order (each runs as soon as the checks it needs have passed); the checks that
    need the tiny model are left out when it could not be built."""
    work.mkdir(parents=True, exist_ok=True)
    log = work / "smoke.log"

    def check(name, fn, part: Path) -> Check:
        start = time.monotonic()
        try:
            problems = fn(part)
        except Exception as exc:  # a check that crashes is a failed check, the others still run
            problems = [f"{type(exc).__name__}: {exc}"]
        done = Check(name, not problems, time.monotonic() - start, "; ".join(problems))
        print(f"smoke: {'ok  ' if not problems else 'FAIL'} {name} ({done.seconds:.0f} s)"
              + (f": {done.detail}" if problems else ""), flush=True)
        return done

    def version(log: Path):
        done = _run(programs.hsd + ["--version"], programs.env, settings.timeout, log)
        return [] if done.returncode == 0 and b"hsd " in done.stdout else [_tail(done)]

    def draft(log: Path):
        ref, out = work / "reference-draft.json", work / "bundle-draft.json"
        done = _run(programs.reference + ["draft", str(sample), "--json", str(ref)], reference_env(),
                    settings.timeout, log)
        if done.returncode != 0:
            return ["reference: " + _tail(done)]
        if programs.hsd == programs.reference:
            return []
        done = _run(programs.hsd + ["draft", str(sample), "--json", str(out)], programs.env, settings.timeout, log)
        if done.returncode != 0:
            return [_tail(done)]
        if not out.exists():
            return [f"{out} was not written"]
        return [] if out.read_bytes() == ref.read_bytes() else [f"{out.name} differs from {ref.name}"]

    model = work / "tiny-model"

    def tiny_model(log: Path):
        done = _run(programs.hsd + ["tiny-model", str(model), "--arch", ARCH], programs.env, settings.timeout, log)
        if done.returncode != 0:
            return [_tail(done)]
        return [] if (model / "config.json").exists() else [f"no config.json in {model}"]

    def convert(drafter: str):
        def run(log: Path):
            ref = work / f"reference-{drafter}" / f"{sample.stem}.md"
            out = work / f"bundle-{drafter}" / f"{sample.stem}.md"
            flags = ["--model", str(model)] + settings.cli_flags(drafter)
            def reference(part: Path) -> subprocess.CompletedProcess:
                return _run(programs.reference + ["convert", str(sample), "-o", str(ref)] + flags,
                            reference_env(), settings.timeout, part)

            def bundled(part: Path) -> subprocess.CompletedProcess:
                return _run(programs.hsd + ["convert", str(sample), "-o", str(out)] + flags,
                            programs.env, settings.timeout, part)

            if programs.hsd == programs.reference:  # --source: the program under test is the reference
                done = reference(log)
                return [] if done.returncode == 0 else ["reference: " + _tail(done)]
            done_ref, done = _side_by_side(log, reference, bundled)
            if done_ref.returncode != 0:
                return ["reference: " + _tail(done_ref)]
            if done.returncode != 0:
                return [_tail(done)]
            return compare_outputs(ref, out)
        return run

    def studio(log: Path):
        ini = work / "studio.ini"
        ini.write_text(settings.studio_ini(model, work / "studio-cache"), encoding="utf-8")
        export = work / "studio-export"
        export.mkdir(exist_ok=True)
        done = _run(programs.studio + ["--settings", str(ini), "--exit-when-done", "--export-dir", str(export),
                                       str(sample)], programs.env, settings.timeout, log)
        if done.returncode != 0:
            return [_tail(done)]
        return compare_outputs(work / f"reference-{settings.drafter}" / f"{sample.stem}.md",
                               export / f"{sample.stem}.md")

    def one_family(arch):
        def run(part: Path) -> list[str]:
            folder = model if arch == ARCH else work / f"tiny-{arch}"
            if arch != ARCH:
                done = _run(programs.hsd + ["tiny-model", str(folder), "--arch", arch], programs.env,
                            settings.timeout, part)
                if done.returncode != 0:
                    return [f"{arch}: tiny-model: {_tail(done, 2)}"]
            out = work / f"family-{arch}" / f"{sample.stem}.md"
            done = _run(programs.hsd + ["convert", str(sample), "-o", str(out), "--model", str(folder),
                                        "--device", "cpu", "--drafter", settings.drafter, "--pages", "1",
                                        "--dpi", "72", "--max-new-tokens", "8", "-q"],
                        programs.env, settings.timeout, part)
            return [] if done.returncode == 0 and out.exists() else [f"{arch}: convert: {_tail(done, 2)}"]
        return run

    def every_family(log: Path):
        return [problem for problems in _side_by_side(log, *map(one_family, FAMILIES)) for problem in problems]

    if ocr is None:
        ocr = (ROOT / "core" / "drafters" / "rapidocr.py").exists()
    # (key, name, check, the key of the check whose success it needs), in the order they are reported
    plan = [("version", "hsd --version", version, None),
            ("draft", "hsd draft writes the regions of the unbundled hsd draft", draft, None),
            ("model", f"hsd tiny-model --arch {ARCH}", tiny_model, None),
            ("convert", f"hsd convert --drafter {settings.drafter} matches the unbundled hsd convert",
             convert(settings.drafter), "model")]
    if app:
        plan.append(("studio", "hsd-studio offscreen converts, exits 0, exports the same Markdown", studio,
                     "convert"))
    if families:
        plan.append(("families", f"every family ({', '.join(FAMILIES)}): hsd tiny-model and hsd convert one page",
                     every_family, "model"))
    if ocr:
        plan.append(("ocr", "hsd convert --drafter rapidocr matches the unbundled hsd convert", convert("rapidocr"),
                     "model"))
    parts = {key: log.with_name(f"{log.stem}-{key}{log.suffix}") for key, *_ in plan}

    def when_ready(key, name, fn, needs, futures) -> Check | None:
        if needs is not None:
            needed = futures[needs].result()
            if needed is None or needs == "model" and not needed.ok:
                return None  # nothing to check without the tiny model
            if not needed.ok:
                return Check(name, False, 0.0, "skipped: no reference Markdown")
        return check(name, fn, parts[key])

    futures: dict = {}
    with ThreadPoolExecutor(max_workers=len(plan)) as pool:
        for key, name, fn, needs in plan:  # a check is submitted after the one it needs
            futures[key] = pool.submit(when_ready, key, name, fn, needs, futures)
    with open(log, "ab") as out:  # the log reads as if the checks had run one after another
        for part in parts.values():
            if part.exists():
                out.write(part.read_bytes())
                part.unlink()
    return [done for done in (futures[key].result() for key, *_ in plan) if done is not None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bundle", nargs="?", type=Path, help="the bundle folder (dist/hsd-studio)")
    parser.add_argument("--source", action="store_true", help="check the source tree instead of a bundle")
    parser.add_argument("--sample", type=Path, default=None, help=f"document to convert (default: {DEFAULT_SAMPLE})")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    parser.add_argument("--max-new-tokens", type=int, default=Settings.max_new_tokens)
    parser.add_argument("--pages", default="")
    parser.add_argument("--no-ocr", action="store_true", help="skip the RapidOCR check")
    parser.add_argument("--one-family", action="store_true", help=f"skip loading the families other than {ARCH}")
    args = parser.parse_args(argv)
    if args.source == (args.bundle is not None):
        parser.error("give either a bundle folder or --source")
    if args.bundle is not None and not args.bundle.is_dir():
        parser.error(f"{args.bundle} is not a folder; build it with python packaging/build.py")
    programs = Programs.source() if args.source else Programs.bundle(args.bundle.resolve())
    settings = Settings(max_new_tokens=args.max_new_tokens, pages=args.pages)
    with tempfile.TemporaryDirectory(prefix="hsd-smoke-") as tmp:
        work = (args.keep or Path(tmp)).resolve()
        sample = args.sample or DEFAULT_SAMPLE
        if not sample.exists():
            print(f"smoke: {sample} is missing; converting a generated sample instead", flush=True)
            work.mkdir(parents=True, exist_ok=True)
            sample = make_sample(work / "sample.pdf")
        start = time.monotonic()
        checks = run_checks(programs, sample.resolve(), work, settings, ocr=False if args.no_ocr else None,
                            families=not args.one_family)
        failed = [c for c in checks if not c.ok]
        print(f"smoke: {len(checks) - len(failed)}/{len(checks)} checks passed in {time.monotonic() - start:.0f} s"
              + (f"; log: {work / 'smoke.log'}" if args.keep else ""), flush=True)
        if failed and not args.keep:
            print((work / "smoke.log").read_text(errors="replace")[-4000:], file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
