"""Arguments shared by the sub-commands, and the checks that run before any work.

Everything here answers without torch, transformers or a model (``device_present`` imports torch,
and runs only right before a model would load anyway), so a mistyped value is one line at once.
"""

from __future__ import annotations

import argparse
import os
import re
import sys

from core.errors import HSDError

#: Where ``hsd convert`` and ``hsd draft`` read the password of encrypted PDFs (a command-line
#: argument is visible to every user of the machine in the process list).
PASSWORD_ENV = "HSD_PASSWORD"

#: Device names the loader passes to torch: cpu, cuda, cuda:N, mps, xpu, xpu:N.
_DEVICE = re.compile(r"(cpu|cuda|mps|xpu)(:\d{1,3})?")


def whole_number(low: int, high: int, what: str):
    """An argparse ``type`` accepting a whole number from ``low`` to ``high`` (one-line errors)."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{what} must be between {low} and {high}, got {number}")
        return number
    return parse


def page_range(value: str) -> str:
    """``--pages``: a range is checked against the document when it is opened; an empty one is an
    error at once (it names no page; leaving ``--pages`` out means every page)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("empty page range; name pages such as 1-3,7, or leave --pages out "
                                         "for every page")
    return value


def dpi_value(value: str) -> int:
    """``--dpi``: a render resolution that gives a readable page (36-1200)."""
    return whole_number(36, 1200, "dpi")(value)


def threshold(value: str) -> float:
    """``--tau``: an acceptance threshold above 0 and at most 1."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not 0.0 < number <= 1.0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"tau must be above 0 and at most 1, got {value}")
    return number


def device_name(value: str) -> str:
    """``--device``: cpu, cuda, cuda:N, mps, xpu or xpu:N (spelled as torch spells them)."""
    if not _DEVICE.fullmatch(value):
        shown = value if value.isprintable() and len(value) <= 40 else repr(value[:40])
        raise argparse.ArgumentTypeError(f"{shown!s} is not a device; use cpu, cuda, cuda:N or mps")
    return value


def device_present(device: str | None) -> None:
    """``HSDError`` when ``device`` names an accelerator this machine does not have (``cuda:99``,
    ``cuda`` on a machine without one). Imports torch: call it right before the model loads."""
    if not device or device.startswith("cpu"):
        return
    import torch

    kind, _, index = device.partition(":")
    backend = {"cuda": getattr(torch, "cuda", None), "xpu": getattr(torch, "xpu", None),
               "mps": getattr(torch.backends, "mps", None)}.get(kind)
    if backend is None or not backend.is_available():
        raise HSDError(f"--device {device}: this machine has no usable {kind.upper()} device "
                       f"(torch {torch.__version__}); use --device cpu or leave --device out")
    count = backend.device_count() if hasattr(backend, "device_count") else 1
    if index and int(index) >= count:
        raise HSDError(f"--device {device}: this machine has {count} {kind.upper()} device"
                       f"{'' if count == 1 else 's'} ({kind}:0{f' to {kind}:{count - 1}' if count > 1 else ''})")


def add_rotate_argument(parser) -> None:
    """``--rotate auto|off``: show sideways and upside-down pages upright (``Page.turn``)."""
    from core import tuning

    parser.add_argument("--rotate", choices=("auto", "off"), default=tuning.DEFAULT_ROTATE,
                        help="auto: a page whose text runs sideways or upside down (a landscape slide "
                             "drawn turned, a scan fed in upside down) is turned upright for the model "
                             "and the drafter, in every mode; off: pages as the file draws them "
                             f"(default {tuning.DEFAULT_ROTATE})")


def add_engine_argument(parser) -> None:
    """``--engine eager|fast``: how the model's passes run (``core.targets.fast_pass``)."""
    from core import tuning

    parser.add_argument("--engine", choices=("eager", "fast"), default=tuning.DEFAULT_ENGINE,
                        help="eager: transformers' own passes; fast: a static cache, a few fixed pass "
                             "widths and compiled passes (compiling is a step of loading the model, "
                             f"minutes on a CPU) (default {tuning.DEFAULT_ENGINE})")


def add_ocr_arguments(parser) -> None:
    """``--ocr-workers N`` and ``--ocr-device auto|cpu``: how many workers read an OCR drafter's
    lines and where its models run (``core.drafters.drafter_spec``)."""
    from core.drafters.accelerators import DEVICES

    parser.add_argument("--ocr-workers", type=whole_number(1, 256, "--ocr-workers"), default=None, metavar="N",
                        help="workers reading the OCR drafters' text lines (default: one a core; the drafting "
                             "process runs at a lower priority, so the model's decode keeps its core)")
    parser.add_argument("--ocr-device", choices=DEVICES, default="auto",
                        help="where the OCR drafters' models run: auto, the GPU onnxruntime offers (CUDA; "
                             "DirectML on Windows; CoreML on macOS; pip install \"hsd-studio[gpu]\"), else the "
                             "CPU; cpu: the CPU only (default auto)")


def add_review_argument(parser) -> None:
    """``--review FILE.html|FILE.json``: where the model departed from the page's text
    (``core.review``), written once the run ends."""
    parser.add_argument("--review", default=None, metavar="FILE",
                        help="write the places where the model departs from the page's text (words no draft "
                             "held, draft words it left out or changed) to FILE.html or FILE.json")


def gpu_memory(value: str):
    """``--max-gpu-memory``: ``12GiB``, ``12GB``, ``800MiB``, ``80%`` (``core.hardware.parse_memory``)."""
    from core.hardware import parse_memory

    try:
        return parse_memory(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_gpu_memory_argument(parser) -> None:
    """``--max-gpu-memory AMOUNT``: the model loads and decodes within it, or says why it cannot."""
    parser.add_argument("--max-gpu-memory", type=gpu_memory, default=None, metavar="AMOUNT",
                        help="the most GPU memory the model may take, weights and decoding together: 12GiB, "
                             "12GB, 800MiB or 80%% of the GPU; a model whose weights leave no room under it is "
                             "refused before loading, a page that would need more fails alone (default: no cap)")


def add_password_arguments(parser) -> None:
    """``--password`` / ``--ask-password`` (and the environment variable their help names)."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--ask-password", action="store_true",
                       help="ask for the password of encrypted PDFs (not shown; read from standard input "
                            f"when it is not a terminal); or set {PASSWORD_ENV}")
    group.add_argument("--password", default=None, metavar="PW",
                       help=f"password of encrypted PDFs; other users see it in the process list, so prefer "
                            f"the environment variable {PASSWORD_ENV} or --ask-password")


#: The longest password ``--ask-password`` reads from a pipe (more is no password: ``< /dev/zero``
#: would otherwise be read as one line until memory runs out).
MAX_PASSWORD_BYTES = 4096


def resolve_password(args) -> None:
    """Fill ``args.password`` from the prompt (``--ask-password``) or ``HSD_PASSWORD``; an explicit
    ``--password`` wins over the environment."""
    if getattr(args, "ask_password", False):
        args.password = _ask_password()
        where = "--ask-password"
    elif getattr(args, "password", None) is None:
        args.password = os.environ.get(PASSWORD_ENV) or None
        where = PASSWORD_ENV
    else:
        where = "--password"
    if args.password is not None:
        try:
            args.password.encode("utf-8")
        except UnicodeEncodeError:  # bytes that are not UTF-8 reach Python as lone surrogates
            raise HSDError(f"{where}: the password is not UTF-8 text; PDF passwords are read as UTF-8") from None


def _ask_password() -> str:
    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        return getpass.getpass("password of the encrypted PDF: ", stream=sys.stderr)
    stream = getattr(sys.stdin, "buffer", None) if sys.stdin is not None else None
    if stream is None:
        line = sys.stdin.readline(MAX_PASSWORD_BYTES + 1).encode("utf-8", "surrogateescape") \
            if sys.stdin is not None else b""
    else:
        line = stream.readline(MAX_PASSWORD_BYTES + 1)
    if not line:
        raise HSDError("--ask-password: nothing to read on standard input")
    if len(line) > MAX_PASSWORD_BYTES and not line.endswith(b"\n"):
        raise HSDError(f"--ask-password: standard input holds no password line of at most {MAX_PASSWORD_BYTES} "
                       "bytes")
    try:
        return line.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise HSDError("--ask-password: the password read from standard input is not UTF-8 text; PDF passwords "
                       "are read as UTF-8") from None



def check_document(path, password: str | None = None, pages: str | None = None) -> None:
    """An input's checks before any model: the import-free ones first (a mistyped name is one
    line before PyMuPDF loads), then ``core.documents.check_document`` (opens it; says when it is
    damaged or ``pages`` does not fit it)."""
    from core.inputs import check_input

    check_input(path)
    from core.documents import check_document as open_and_check

    open_and_check(path, password, pages)
