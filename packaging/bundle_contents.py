"""What goes into the one-folder bundle, as plain lists and functions (read by ``hsd.spec``, checked by
``tests/packaging``). Nothing here imports PyInstaller.

The spec calls ``hidden_imports()`` (modules that are only ever imported by name at run time),
``data_packages()`` and ``dependency_data_packages()`` (packages whose non-Python files are needed at
run time), ``runtime_distributions()`` (whose metadata is copied), ``EXCLUDED_MODULES`` and
``drop_path()`` (files left out of the folder).
"""

from __future__ import annotations

import fnmatch
import re

#: The model families HSD supports (``core.targets.profiles.FAMILY_MODULES``). transformers imports a
#: family's config, model, processor and image processor by name at run time, so the analysis cannot
#: see them; each family's packages are listed explicitly.
FAMILIES = ("qwen2_5_vl", "qwen3_vl", "hunyuan_vl", "paddleocr_vl", "glm_ocr")

#: Tokenizer classes real checkpoints name in tokenizer_config.json besides their family's own.
EXTRA_TOKENIZER_PACKAGES = ("qwen2", "llama")

#: Packages whose data files (models, yaml configs, fonts, ...) the bundle needs at run time.
#: latex2mathml reads its symbol table (``unimathsymbols.txt``) from its package folder, python-docx its
#: blank document and styles (``docx/templates``).
DATA_PACKAGES = ("rapidocr", "rapid_table", "rapid_layout", "pymupdf", "tokenizers", "transformers", "latex2mathml",
                 "docx")

#: The distribution the bundle is built from, and the extras whose requirements it ships.
PROJECT = "hsd-studio"
BUNDLED_EXTRAS = ("app",)

#: Runtime distributions whose PyInstaller hooks collect their data files themselves, selectively
#: (torch without C++ headers, Qt without the modules the app does not use, opencv's own layout):
#: collecting every file of theirs would undo that. Their metadata is still copied.
HOOK_COLLECTED = ("torch", "pyside6-essentials", "pyside6-addons", "shiboken6", "opencv-python",
                  "opencv-python-headless", "numpy", "pillow")

#: File patterns never taken as data from the dependencies: shared libraries come in as binaries
#: through the analysis (with their own dependencies), sources through the analysis or not at all.
DEPENDENCY_DATA_EXCLUDES = ("**/__pycache__", "**/*.pyi", "**/*.so", "**/*.so.*", "**/*.dylib", "**/*.dll",
                            "**/*.pyd", "**/*.lib", "**/*.a", "**/*.h", "**/*.hpp", "**/*.c", "**/*.cpp",
                            "**/tests/**", "**/test/**")

#: Never imported by the app or the CLI, but reachable through optional imports of the libraries
#: (transformers, torch, rapidocr guard them): leaving them out keeps the folder smaller. The
#: ``paddle`` drafter is not bundled (PaddleOCR is an optional extra of several GB).
EXCLUDED_MODULES = (
    # other Qt bindings and the Qt modules the app does not use
    "PyQt5", "PyQt6", "PySide2", "tkinter", "_tkinter",
    "PySide6.QtQml", "PySide6.QtQuick", "PySide6.QtQuickWidgets", "PySide6.QtQuickControls2",
    "PySide6.QtWebEngineCore", "PySide6.QtWebEngineWidgets", "PySide6.QtWebChannel", "PySide6.QtWebSockets",
    "PySide6.QtMultimedia", "PySide6.QtMultimediaWidgets", "PySide6.QtVirtualKeyboard",
    "PySide6.Qt3DCore", "PySide6.Qt3DRender", "PySide6.Qt3DExtras", "PySide6.QtCharts",
    "PySide6.QtDataVisualization", "PySide6.QtGraphs", "PySide6.QtPdf", "PySide6.QtPdfWidgets",
    "PySide6.QtDesigner", "PySide6.QtHelp", "PySide6.QtSql", "PySide6.QtTest", "PySide6.QtBluetooth",
    "PySide6.QtNetworkAuth", "PySide6.QtPositioning", "PySide6.QtLocation", "PySide6.QtSensors",
    "PySide6.QtSerialPort", "PySide6.QtSpatialAudio", "PySide6.QtTextToSpeech", "PySide6.QtUiTools",
    "PySide6.QtOpenGL", "PySide6.QtOpenGLWidgets", "PySide6.QtSvgWidgets",
    # scientific and notebook stacks that transformers/torch only probe for
    "matplotlib", "pandas", "pyarrow", "scipy", "sklearn", "IPython", "jupyter_client", "notebook", "ipykernel",
    "tensorboard", "tensorflow", "jax", "flax", "triton", "torchvision", "torchaudio", "datasets",
    "accelerate", "deepspeed", "ray", "paddle", "paddleocr", "paddlex",
    # requests' optional pyOpenSSL support (the standard ssl module serves HTTPS)
    "urllib3.contrib.pyopenssl", "cryptography", "OpenSSL",
    # test and dev tools
    "pytest", "_pytest", "hypothesis", "pytestqt", "IPython", "setuptools", "pip",
    # (torch.testing._internal stays: torch imports parts of it, down to .distributed, at run time)
    "torch.utils.tensorboard",
    "transformers.commands", "transformers.cli",
)

#: Files dropped from the collected binaries and data (glob patterns on the path inside the folder).
DROPPED_FILES = (
    # torch: C++ test programs and libraries, headers, CMake files, protoc (torch_shm_manager stays:
    # ``import torch`` checks that it exists)
    "torch/bin/*", "torch/test/*", "torch/include/*", "torch/share/*", "torch/lib/*test*.so*", "torch/lib/*test*.dll",
    "torch/lib/libbackend_with_compiler*", "torch/lib/libaoti_custom_ops*",
    "torch/lib/*.a", "torch/lib/*.lib",
    "torch/_inductor/codegen/*.h", "torch/_inductor/codegen/*.cpp",
    # Qt: QML, Quick and other modules' libraries and plugins (pulled in by a plugin's dependencies)
    "*Qt6Qml*", "*Qt6Quick*", "*Qt6WebEngine*", "*Qt6VirtualKeyboard*", "*Qt6Multimedia*", "*Qt63D*",
    "*Qt6Pdf*", "*Qt6Charts*", "*Qt6Designer*",
    "PySide6/Qt/qml/*", "PySide6/qml/*", "PySide6/Qt/plugins/qmltooling/*", "PySide6/plugins/qmltooling/*",
    "*/platforminputcontexts/*virtualkeyboard*", "*/multimedia/*", "*/sceneparsers/*", "*/renderers/*",
    "*/geometryloaders/*", "*/position/*", "*/sensors/*", "*/texttospeech/*", "*/webview/*",
    # opencv: the GUI build's Qt 5 and its plugins (the bundle uses opencv-python-headless)
    "cv2/qt/*", "*libQt5*",
    # the build machine's CUDA toolkit runtime, found through a ctypes probe (a CUDA torch brings its own)
    "libcudart.so",
)

#: Files kept although a pattern of ``DROPPED_FILES`` matches them.
KEPT_FILES = ("torch/bin/torch_shm_manager*",)

#: Qt platform plugins the bundle must hold (desktop on Linux: xcb and wayland; headless: offscreen).
REQUIRED_QT_PLATFORMS = {"linux": ("xcb", "offscreen"), "darwin": ("cocoa", "offscreen"),
                         "win32": ("windows", "offscreen")}


def _normalise(path: str) -> str:
    return path.replace("\\", "/")


def drop_path(dest: str) -> bool:
    """Whether a collected file (its path inside the folder) is left out."""
    dest = _normalise(dest)
    if any(fnmatch.fnmatch(dest, pattern) for pattern in KEPT_FILES):
        return False
    return any(fnmatch.fnmatch(dest, pattern) for pattern in DROPPED_FILES)


def transformers_model_packages(families=FAMILIES) -> list[str]:
    """``transformers.models.X`` packages the families need: their own, and those of every class the
    auto mappings (config, model, processor, image/video processor, tokenizer) or our profiles name."""
    import transformers
    from transformers.models.auto import configuration_auto, modeling_auto, processing_auto
    from transformers.models.auto import image_processing_auto, tokenization_auto

    mappings = [configuration_auto.CONFIG_MAPPING_NAMES, modeling_auto.MODEL_MAPPING_NAMES,
                modeling_auto.MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES, processing_auto.PROCESSOR_MAPPING_NAMES,
                image_processing_auto.IMAGE_PROCESSOR_MAPPING_NAMES, tokenization_auto.TOKENIZER_MAPPING_NAMES]
    try:
        from transformers.models.auto import video_processing_auto

        mappings.append(video_processing_auto.VIDEO_PROCESSOR_MAPPING_NAMES)
    except ImportError:
        pass
    model_types = set()
    for family in families:
        # sub-configs (hunyuan_vl_text, qwen3_vl_vision, ...) are model types of their own
        model_types.update(t for t in configuration_auto.CONFIG_MAPPING_NAMES
                           if t == family or t.startswith(family + "_"))
    class_names: set[str] = set()
    for mapping in mappings:
        for model_type in model_types:
            class_names.update(_flatten(mapping.get(model_type)))
    class_names.update(_profile_class_names(families))
    packages = {configuration_auto.model_type_to_module_name(t) for t in model_types}
    packages.update(EXTRA_TOKENIZER_PACKAGES)
    class_to_module = getattr(transformers, "_class_to_module", {})
    for name in class_names:
        module = class_to_module.get(name)
        if module is None:
            try:
                module = getattr(transformers, name).__module__.removeprefix("transformers.")
            except Exception:
                continue
        if module.startswith("models."):
            packages.add(module.split(".")[1])
    return sorted(f"transformers.models.{p}" for p in packages)


def _flatten(value) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = value.values()
    return [v for item in value for v in _flatten(item)]


def _profile_class_names(families) -> set[str]:
    """Processor classes our profiles fall back to (e.g. GLM-OCR uses the GLM-4.6V processor)."""
    try:
        from core.targets.profiles import get_profile
    except ImportError:
        return set()
    names = set()
    for family in families:
        try:
            fallback = get_profile(family).fallback_processor
        except Exception:
            continue
        if fallback:
            names.add(fallback)
    return names


def hidden_imports(collect_submodules) -> list[str]:
    """Modules imported only by name: our own (commands, drafters, profiles are loaded with
    ``importlib``), transformers' generic modules and the families' packages.

    ``collect_submodules`` is PyInstaller's (passed in so this module stays importable without it).
    """
    names = collect_submodules("core") + collect_submodules("app")
    names += collect_submodules(
        "transformers",
        filter=lambda name: not name.startswith(("transformers.models.", "transformers.commands",
                                                 "transformers.cli", "transformers.kernels")),
    )
    names += collect_submodules("transformers.models.auto")
    for package in transformers_model_packages():
        names += collect_submodules(package)
    names += ["rapidocr", "rapid_table", "rapid_layout", "onnxruntime", "pymupdf", "markdown_it",
              "mdit_py_plugins.dollarmath", "rapidfuzz", "tqdm", "psutil",
              # the sanitiser of model output, and the formula typesetter the Markdown view loads lazily
              "nh3", "latex2mathml", "latex2mathml.converter",
              # the DOCX export (imported when a Word file is written) and its XML library
              "docx", "lxml.etree"]
    return sorted(set(names))


def data_packages() -> list[str]:
    """``DATA_PACKAGES`` that are installed (rapid_layout is only used by the OCR drafter)."""
    import importlib.util

    return [p for p in DATA_PACKAGES if importlib.util.find_spec(p) is not None]


def _normalise_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_distributions(root: str = PROJECT, extras=BUNDLED_EXTRAS) -> list[str]:
    """Every installed distribution the bundled programs depend on: ``root`` with ``extras`` and,
    recursively, what each requirement asks for (markers evaluated for this Python and platform).

    A library can read files of any distribution below it at run time (its data, or its version from
    the metadata), so the spec collects both for this whole closure rather than for a fixed list.
    """
    from importlib import metadata

    from packaging.requirements import Requirement

    found: dict[str, set[str]] = {}
    pending = [(root, set(extras))]
    while pending:
        name, wanted_extras = pending.pop()
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional requirement that is not installed
        key = _normalise_name(dist.metadata["Name"])
        if key in found and wanted_extras <= found[key]:
            continue
        found[key] = found.get(key, set()) | wanted_extras
        for line in dist.requires or []:
            requirement = Requirement(line)
            if requirement.marker is not None and not any(
                    requirement.marker.evaluate({"extra": extra}) for extra in (found[key] or {""})):
                continue
            pending.append((requirement.name, set(requirement.extras)))
    return sorted(found)


def distribution_packages(name: str) -> list[str]:
    """The top-level import packages (folders with Python code) a distribution installs."""
    from importlib import metadata

    packages = set()
    for file in metadata.distribution(name).files or []:
        parts = file.parts
        if len(parts) > 1 and parts[0].isidentifier() and file.suffix == ".py":
            packages.add(parts[0])
    return sorted(packages)


def dependency_data_packages(distributions=None) -> list[str]:
    """Packages of the runtime distributions whose non-Python files the spec collects: every one but
    those a PyInstaller hook collects selectively (``HOOK_COLLECTED``) and those left out of the bundle."""
    if distributions is None:
        distributions = runtime_distributions()
    skipped = {_normalise_name(n) for n in HOOK_COLLECTED} | {_normalise_name(PROJECT)}
    packages = set()
    for name in distributions:
        if _normalise_name(name) in skipped:
            continue
        own = distribution_packages(name)
        if not any(_excluded(p) for p in own):  # setuptools is left out with its _distutils_hack
            packages.update(own)
    return sorted(packages)


def _excluded(module: str) -> bool:
    return any(module == e or module.startswith(e + ".") for e in EXCLUDED_MODULES)
