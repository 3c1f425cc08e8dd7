"""Where the OCR drafter's ONNX models run: the user's accelerator where onnxruntime has one, else the CPU.

``choose_providers(device)`` picks onnxruntime execution providers: with ``device="auto"`` the best
accelerator this onnxruntime build offers (CUDA; DirectML on Windows; CoreML on macOS), with the CPU
behind it for the operators the accelerator lacks, and a one-line note naming the choice; with
``device="cpu"``, or where no accelerator is offered, the CPU alone and no note (nothing changes).
The accelerators come with optional packages (``pip install "hsd-studio[gpu]"``, see the README).

``make_session(model_path, choice)`` opens a model with that choice. An accelerator that is listed
but cannot run (a CUDA build without the CUDA libraries, a driver too old) does not stop the drafts:
the model opens on the CPU and the returned choice says so in one note; later models opened with the
returned choice go straight to the CPU.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable, Sequence

from core.errors import HSDError, HSDWarning

CPU = "CPUExecutionProvider"
#: ``--ocr-device`` values: "auto" (the best accelerator, else the CPU), "cpu" (the CPU only).
DEVICES = ("auto", "cpu")
#: Accelerators in the order preferred: (onnxruntime provider, the platform its package is built
#: for (None: any), the name a user knows it by).
ACCELERATORS = (
    ("CUDAExecutionProvider", None, "CUDA"),
    ("DmlExecutionProvider", "win32", "DirectML"),
    ("CoreMLExecutionProvider", "darwin", "CoreML"),
)
#: The optional packages that bring an accelerator (pyproject's ``gpu`` and ``cuda`` extras), and the
#: provider each offers. They share the module ``onnxruntime`` with the CPU package: where the CPU
#: package was installed over one, the module offers the CPU alone.
GPU_PACKAGES = {"onnxruntime-gpu": "CUDAExecutionProvider", "onnxruntime-directml": "DmlExecutionProvider"}


@dataclass(frozen=True)
class ProviderChoice:
    """onnxruntime execution providers in the order to try (the CPU last), and the line to tell the
    user about them (None: the CPU, as always)."""

    providers: list[str] = field(default_factory=lambda: [CPU])
    note: str | None = None

    @property
    def accelerated(self) -> bool:
        """Whether a provider other than the CPU is asked for."""
        return any(p != CPU for p in self.providers)


def available_providers() -> list[str]:
    """The execution providers this onnxruntime build offers ([] where onnxruntime is not installed)."""
    try:
        import onnxruntime
    except ImportError:
        return []
    return list(onnxruntime.get_available_providers())


def installed_gpu_packages() -> list[str]:
    """Those of ``GPU_PACKAGES`` that are installed."""
    from importlib.metadata import PackageNotFoundError, distribution

    found = []
    for name in GPU_PACKAGES:
        try:
            distribution(name)
        except PackageNotFoundError:
            continue
        found.append(name)
    return found


def choose_providers(device: str = "auto", available: Sequence[str] | None = None,
                     platform: str | None = None, gpu_packages: Sequence[str] | None = None) -> ProviderChoice:
    """The providers for ``device`` ("auto" or "cpu", ``DEVICES``). ``available``: the providers
    onnxruntime offers (default: ask it); ``platform``: ``sys.platform``'s value (default: this
    machine's); ``gpu_packages``: the installed ``GPU_PACKAGES`` (default: look). Where a GPU package
    is installed but its provider is not offered, the CPU it is, with a note saying how to repair
    the install. An unknown ``device`` raises HSDError naming the choices."""
    if device not in DEVICES:
        raise HSDError(f"unknown OCR device {device!r}; choose one of: {', '.join(DEVICES)}")
    if device == "cpu":
        return ProviderChoice([CPU])
    offered = set(available_providers() if available is None else available)
    platform = sys.platform if platform is None else platform
    for provider, built_for, known_as in ACCELERATORS:
        if provider in offered and (built_for is None or platform.startswith(built_for)):
            return ProviderChoice([provider, CPU], f"OCR drafter on {known_as} (onnxruntime {provider}); "
                                                   "--ocr-device cpu keeps it on the CPU")
    for package in installed_gpu_packages() if gpu_packages is None else gpu_packages:
        if package in GPU_PACKAGES and GPU_PACKAGES[package] not in offered:
            return ProviderChoice([CPU], f"OCR drafter on the CPU: {package} is installed but onnxruntime offers no "
                                         f"{GPU_PACKAGES[package]} (the CPU package was installed over it; "
                                         f"pip install --force-reinstall --no-deps {package})")
    return ProviderChoice([CPU])


def make_session(model_path, choice: ProviderChoice, options=None,
                 create: Callable | None = None):
    """``(session, choice)``: an onnxruntime session on ``model_path`` with ``choice``'s providers,
    and the choice in effect. Where the accelerator fails to open the model, or onnxruntime quietly
    put it on the CPU alone, the model runs on the CPU and the returned choice is the CPU with a note
    saying why (pass it on to the next model: it goes straight to the CPU, and the user is told
    once). ``options``: ``onnxruntime.SessionOptions`` (threads, ...); ``create``: what opens a
    session (default ``onnxruntime.InferenceSession``)."""
    import onnxruntime

    create = onnxruntime.InferenceSession if create is None else create
    if not choice.accelerated:
        return create(str(model_path), sess_options=options, providers=[CPU]), choice
    if "DmlExecutionProvider" in choice.providers:
        # DirectML runs neither memory patterns nor parallel execution (onnxruntime's DirectML notes).
        options = onnxruntime.SessionOptions() if options is None else options
        options.enable_mem_pattern = False
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
    accelerator = choice.providers[0]
    try:
        with warnings.catch_warnings():
            # onnxruntime warns of a provider it lacks and goes on without it: told below, in one note
            warnings.simplefilter("ignore")
            opened = create(str(model_path), sess_options=options, providers=list(choice.providers))
    except Exception as exc:  # noqa: BLE001 -- any failure of the accelerator: the CPU still drafts
        reason = " ".join(str(exc).split())[:160] or type(exc).__name__
        return create(str(model_path), sess_options=options, providers=[CPU]), _fell_back(accelerator, reason)
    if accelerator not in opened.get_providers():
        return opened, _fell_back(accelerator, "onnxruntime could not start it")
    return opened, choice


def _fell_back(accelerator: str, reason: str) -> ProviderChoice:
    return ProviderChoice([CPU], f"OCR drafter on the CPU: {accelerator} failed ({reason})")


def announce(choice: ProviderChoice) -> None:
    """Tell the user ``choice``'s note, where it has one (an ``HSDWarning``: one line on the command
    line, a notice in the app)."""
    if choice.note:
        warnings.warn(HSDWarning(choice.note), stacklevel=2)
