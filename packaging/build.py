"""Build the one-folder bundle ``dist/hsd-studio/`` (``hsd-studio`` and ``hsd``) and smoke-test it.

    python packaging/build.py [--skip-smoke] [--dist DIR] [--work DIR]

Run it with the Python that has HSD Studio installed with its app extra
(``pip install -e ".[app]"``) and PyInstaller (``pip install "pyinstaller>=6.10"``); the bundle is
for the machine it is built on (same OS and CPU architecture). It needs no network, except once
when the installed opencv is the GUI build (see ``headless_opencv``).

Exit code: 0 when the bundle was built and its smoke test passed.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PACKAGING = Path(__file__).resolve().parent
ROOT = PACKAGING.parent
SPEC = PACKAGING / "hsd.spec"
BUNDLE_NAME = "hsd-studio"


def check_environment() -> list[str]:
    """What is missing for a build, as messages (empty: ready)."""
    problems = []
    if sys.version_info < (3, 11):
        problems.append(f"Python 3.11 or newer is needed (this is {sys.version.split()[0]})")
    for module, hint in (("PyInstaller", 'pip install "pyinstaller>=6.10"'),
                         ("PySide6", 'pip install -e ".[app]"'), ("markdown_it", 'pip install -e ".[app]"'),
                         ("torch", "pip install torch"), ("transformers", "pip install -e ."),
                         ("pymupdf", "pip install -e ."), ("rapidocr", "pip install -e .")):
        if importlib.util.find_spec(module) is None:
            problems.append(f"{module} is not installed: {hint}")
    return problems


def opencv_is_gui_build() -> bool:
    """Whether the installed ``cv2`` is opencv-python (with Qt 5 and FFmpeg) rather than the headless build.

    rapid-table asks for opencv-python and rapidocr for opencv-python-headless; both install into ``cv2/``
    and the last one wins. The GUI build would bring a second Qt into the bundle (about 150 MB).
    """
    spec = importlib.util.find_spec("cv2")
    if spec is None or spec.origin is None:
        return False
    return (Path(spec.origin).parent / "qt").is_dir()


def headless_opencv(work: Path) -> Path | None:
    """A folder holding opencv-python-headless (same version as the installed cv2) to put ahead of
    site-packages for the build, or None when the installed cv2 is headless already."""
    if not opencv_is_gui_build():
        return None
    from importlib.metadata import version

    target = work / "cv2-headless"
    wanted = version("opencv-python")
    marker = target / f".opencv-python-headless-{wanted}"
    if not marker.exists():
        print(f"build: the installed cv2 is the GUI build; fetching opencv-python-headless=={wanted} "
              f"into {target} for the bundle (the environment is not changed)", flush=True)
        shutil.rmtree(target, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
                        f"opencv-python-headless=={wanted}"], check=True)
        marker.touch()
    return target


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def largest_parts(bundle: Path, count: int = 12) -> list[tuple[str, int]]:
    """The biggest first-level items of the library folder (what the bundle's size is made of)."""
    internal = bundle / "_internal"
    parts = [(p.name, folder_size(p) if p.is_dir() else p.stat().st_size) for p in internal.iterdir()
             if not p.is_symlink()] if internal.is_dir() else []
    return sorted(parts, key=lambda item: -item[1])[:count]


def executable(bundle: Path, name: str) -> Path:
    return bundle / (name + ".exe" if sys.platform == "win32" else name)


def build(dist: Path, work: Path) -> Path:
    """Run PyInstaller on the spec; returns the bundle folder."""
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    overlay = headless_opencv(work)
    paths = ([str(overlay)] if overlay else []) + [str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    command = [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level", "WARN",
               "--distpath", str(dist), "--workpath", str(work / "pyinstaller"), str(SPEC)]
    print("build:", " ".join(command), flush=True)
    subprocess.run(command, check=True, env=env, cwd=ROOT)
    return dist / BUNDLE_NAME


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist", help="where the bundle goes (default: dist/)")
    parser.add_argument("--work", type=Path, default=ROOT / "build", help="scratch folder (default: build/)")
    parser.add_argument("--skip-smoke", action="store_true", help="build only")
    args = parser.parse_args(argv)
    problems = check_environment()
    if problems:
        for problem in problems:
            print(f"build: {problem}", file=sys.stderr)
        return 2
    start = time.monotonic()
    try:
        bundle = build(args.dist.resolve(), args.work.resolve())
    except subprocess.CalledProcessError as exc:
        print(f"build: failed ({exc})", file=sys.stderr)
        return 1
    minutes = (time.monotonic() - start) / 60
    print(f"build: {bundle} ({folder_size(bundle) / 2**20:.0f} MiB) in {minutes:.1f} min", flush=True)
    print("build: largest parts: " + ", ".join(f"{name} {size / 2**20:.0f} MiB" for name, size in largest_parts(bundle)))
    for name in ("hsd-studio", "hsd"):
        if not executable(bundle, name).exists():
            print(f"build: {executable(bundle, name)} is missing", file=sys.stderr)
            return 1
    if args.skip_smoke:
        return 0
    smoke = subprocess.run([sys.executable, str(PACKAGING / "smoke.py"), str(bundle)], cwd=ROOT)
    return smoke.returncode


if __name__ == "__main__":
    sys.exit(main())
