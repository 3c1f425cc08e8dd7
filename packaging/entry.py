"""Entry point of both executables in the bundle: ``hsd-studio`` starts the app, ``hsd`` the CLI.

One script for both lets the two executables share one analysis (and so one build of the library
folder); the executable's name picks the program.
"""

import multiprocessing
import os
import sys


def _program() -> str:
    name = os.path.splitext(os.path.basename(sys.executable if getattr(sys, "frozen", False) else sys.argv[0]))[0]
    return "studio" if "studio" in name.lower() else "cli"


if __name__ == "__main__":
    multiprocessing.freeze_support()  # a library that starts worker processes re-enters here
    if _program() == "studio":
        from app.main import main
    else:
        from core.cli import main
    sys.exit(main())
