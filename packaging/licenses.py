"""The third-party licences of what the bundle ships, gathered from the installed distributions.

HSD Studio is AGPL-3.0-or-later because it links PyMuPDF (AGPL-3.0 or a commercial licence from
Artifex). A bundle redistributes every library it holds, so it must carry their licence texts too:
``third_party_notice()`` writes one file listing each distribution the bundle holds, its version,
its declared licence and the licence files its wheel ships (LICENSE, COPYING, NOTICE, ...).

Nothing here imports PyInstaller; ``hsd.spec`` calls it and ``tests/packaging`` checks it.
"""

from __future__ import annotations

import re
from importlib import metadata

#: The distributions the bundle holds (their Python code or native libraries), by their PyPI names.
#: transformers' and torch's own dependencies are listed so that their notices travel too.
BUNDLED_DISTRIBUTIONS = (
    "pymupdf", "torch", "transformers", "tokenizers", "safetensors", "huggingface-hub", "numpy", "pillow",
    "rapidocr", "onnxruntime", "rapid-table", "rapid-layout", "opencv-python-headless", "rapidfuzz", "tqdm",
    "psutil", "pyside6-essentials", "shiboken6", "markdown-it-py", "mdit-py-plugins", "mdurl", "nh3",
    "latex2mathml", "regex", "pyyaml", "filelock", "fsspec", "jinja2", "markupsafe", "sympy", "mpmath",
    "networkx", "typing-extensions", "packaging", "requests", "urllib3", "certifi", "idna",
    "charset-normalizer", "shapely", "omegaconf", "colorlog", "protobuf", "flatbuffers", "coloredlogs",
    "humanfriendly", "python-docx", "lxml",
)

_LICENSE_FILE = re.compile(r"(^|/)(LICEN[CS]E|COPYING|NOTICE|AUTHORS)[^/]*$", re.IGNORECASE)


def declared_license(dist: metadata.Distribution) -> str:
    """The licence a distribution declares: its SPDX expression, else its License field, else its
    classifiers (several packages only fill one of the three)."""
    meta = dist.metadata
    expression = meta.get("License-Expression")
    if expression:
        return expression.strip()
    field = (meta.get("License") or "").strip()
    if field and len(field) < 200 and "\n" not in field:
        return field
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or []
                   if c.startswith("License ::")]
    if classifiers:
        return "; ".join(classifiers)
    return "see the licence text below" if field else "not declared"


def license_texts(dist: metadata.Distribution) -> list[tuple[str, str]]:
    """``(file name, text)`` of each licence file the distribution ships."""
    texts = []
    for file in dist.files or ():
        name = str(file)
        if not _LICENSE_FILE.search(name) or name.endswith((".py", ".pyc")):
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if text and text.strip():
            texts.append((name, text.strip()))
    return texts


def third_party_notice(names=BUNDLED_DISTRIBUTIONS) -> str:
    """The text of ``THIRD_PARTY_LICENSES.txt``: one section per installed distribution of ``names``."""
    sections = ["Third-party software in this bundle of HSD Studio (AGPL-3.0-or-later; see LICENSE).",
                "Each section names a distribution, its version and declared licence, then its licence files."]
    for name in sorted(set(names), key=str.lower):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        header = f"{dist.metadata['Name']} {dist.version}: {declared_license(dist)}"
        body = [header, "=" * len(header)]
        texts = license_texts(dist)
        if not texts:
            body.append("(the installed distribution ships no licence file; its declared licence is above)")
        for file_name, text in texts:
            body += [f"--- {file_name} ---", text]
        sections.append("\n".join(body))
    return "\n\n\n".join(sections) + "\n"
