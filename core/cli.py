"""The ``hsd`` command line.

Each sub-command lives in its own module under ``core/commands/`` and exposes
``register(subparsers)`` (adds its parser and sets ``func``). This module only wires them together
and turns user-facing errors into one line on stderr with a non-zero exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from contextlib import contextmanager

# Sub-command modules, in the order they appear in ``hsd --help``, by command name.
COMMANDS = {"draft": "draft", "convert": "convert", "export": "export", "tiny-model": "tiny_model", "bench": "bench"}
COMMAND_MODULES = list(COMMANDS.values())


class _Parser(argparse.ArgumentParser):
    """argparse with its errors as one ``hsd: error:`` line (the usage is one ``--help`` away)."""

    def error(self, message: str):
        from core.errors import one_line

        self.exit(2, f"hsd: error: {one_line(message)} (see '{one_line(self.prog)} --help')\n")


def build_parser(only: str | None = None, brief: bool = False) -> argparse.ArgumentParser:
    """The ``hsd`` parser; ``only``: register just that command (what a run of it needs, so that
    its errors come before other commands' imports); ``brief``: each command by its one-line
    ``SUMMARY`` only, for ``hsd --help``, ``--version`` and a mistyped command (no command's
    libraries are imported)."""
    from core import __version__

    parser = _Parser(
        prog="hsd",
        description="Convert PDFs and page images to Markdown with a document VLM, "
        "accelerated by Hierarchical Speculative Decoding.",
    )
    parser.add_argument("--version", action="version", version=f"hsd {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command, name in COMMANDS.items():
        if only is None or command == only:
            module = importlib.import_module(f"core.commands.{name}")
            if brief:
                sub.add_parser(command, help=module.SUMMARY)
            else:
                module.register(sub)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The sub-command named on the command line, when it is the first argument (``hsd convert
    ...``); None for ``hsd --help``, ``hsd --version`` and anything argparse should explain."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _plain_warnings() -> None:
    """Our own warnings (``HSDWarning``) as one ``hsd: warning:`` line each, without the source line
    Python prints; other libraries' warnings keep Python's format."""
    import warnings

    from core.errors import HSDWarning, one_line

    default = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, HSDWarning):
            print(f"hsd: warning: {one_line(message)}", file=file or sys.stderr)
        else:
            default(message, category, filename, lineno, file, line)

    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    from core.api import quiet_libraries

    quiet_libraries()
    _closed_streams()
    _tolerant_streams()
    _plain_warnings()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_of(argv)
    parser = build_parser(only=command, brief=command is None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    with stop_signals() as stop:
        return _run(args, stop)


def _run(args, stop: "StopSignals") -> int:
    """The command, with every way it can end as one line on stderr and an exit code."""
    import os

    from core.errors import HSDError, one_line

    try:
        return int(args.func(args) or 0)
    except HSDError as exc:
        print(f"hsd: error: {one_line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("hsd: stopped", file=sys.stderr)
        StopSignals.said = True
        return stop.exit_code()
    except MemoryError:
        print("hsd: error: out of memory", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # `hsd draft x.pdf | head`: the reader left; not an error worth a message.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except OSError as exc:
        # Disk full, permission denied, ...: one line, no traceback.
        print(one_line(f"hsd: error: {exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")), file=sys.stderr)
        return 2
    except Exception as exc:  # a bug: still one line (HSD_DEBUG=1 shows the traceback)
        if os.environ.get("HSD_DEBUG"):
            raise
        text = one_line(" ".join(str(exc).split())[:300])
        print(f"hsd: internal error: {type(exc).__name__}: {text} (set HSD_DEBUG=1 for details)",
              file=sys.stderr)
        return 3


class StopSignals:
    """Ctrl-C and SIGTERM while a command runs: the first stops it the way Ctrl-C does (a
    ``KeyboardInterrupt``, so the command keeps what it finished and says so in one line); any
    later one ends the process at once, silently, whatever it is doing then (closing files,
    torch's teardown): its line has been said, and every file hsd writes is whole or absent."""

    #: Set once the line of a stop ("hsd: stopped ...") is on stderr: a later signal adds none.
    said = False

    def __init__(self):
        self.signal: int | None = None
        self._previous: dict[int, object] = {}

    def exit_code(self) -> int:
        """128 + the signal that stopped the command (130 for Ctrl-C, 143 for SIGTERM)."""
        import signal

        return 128 + (self.signal or signal.SIGINT)

    def handle(self, signum, frame) -> None:
        import os

        if self.signal is not None:
            if not StopSignals.said:  # the first signal's line was not said yet: this one is the line
                try:
                    os.write(2, b"\nhsd: cancelled\n")
                except OSError:
                    pass
            os._exit(128 + self.signal)
        self.signal = signum
        raise KeyboardInterrupt

    def install(self) -> None:
        import signal

        StopSignals.said = False
        for signum in (signal.SIGINT, signal.SIGTERM):
            try:
                self._previous[signum] = signal.signal(signum, self.handle)
            except ValueError:  # not the main thread (a library calling main): leave signals alone
                return

    def uninstall(self) -> None:
        """Put the previous handlers back, unless a signal stopped the command: then the process is
        ending, and a second signal must still end it at once."""
        import signal

        if self.signal is None:
            for signum, previous in self._previous.items():
                signal.signal(signum, previous)


@contextmanager
def stop_signals():
    stop = StopSignals()
    stop.install()
    try:
        yield stop
    finally:
        stop.uninstall()


class _ClosedOutput:
    """Standard output when the caller closed it (``hsd draft x.pdf >&-``): a write fails as a
    reader that left does, so the command ends quietly with 141 (``BrokenPipeError``)."""

    def write(self, text: str) -> int:
        import errno

        raise BrokenPipeError(errno.EPIPE, "standard output is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        return 1

    def isatty(self) -> bool:
        return False


def _closed_streams() -> None:
    """Descriptors 0-2 that the caller closed are opened on the null device: otherwise the next
    file hsd opens would take the number, and whatever a library prints would land in it. Python
    then has no ``sys.stdout`` (or ``sys.stderr``): standard output fails as a closed pipe does,
    and messages for a closed standard error go nowhere."""
    import os

    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            null = os.open(os.devnull, os.O_RDWR)
            if null != fd:
                os.dup2(null, fd)
                os.close(null)
    if sys.stdout is None:
        sys.stdout = _ClosedOutput()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")


def _tolerant_streams() -> None:
    """File names that are not UTF-8 reach messages and JSON as lone surrogates; a strict UTF-8
    stream (a UTF-8 locale's stdout, a capturing wrapper) would raise on them. Write them as
    \\udcXX escapes instead (in JSON output that is the same string)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError, OSError):
            pass


def entry() -> None:
    """The ``hsd`` program: ``main``, then the process's exit. After a stop (Ctrl-C, SIGTERM: exit
    130 or 143) it leaves at once: its line is said and every file is whole, so torch's teardown
    need not run, and Python cannot turn the status into a death by SIGINT (which it does when the
    interrupt passed through code run by ``exec`` while a library was being imported)."""
    code = main()
    if code in (130, 143):
        import os

        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
