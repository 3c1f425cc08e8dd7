"""User-facing error types.

Everything a user can cause (a bad file, a missing model, a bad option) raises a subclass of
``HSDError`` whose message is one readable sentence. The CLI and the app print that message and
never a traceback.
"""


class HSDError(Exception):
    """Base class of every error whose message is meant for the user."""


class HSDWarning(UserWarning):
    """Something the user should know that does not stop the job (a drafter working with less
    than it could, say). The CLI prints it as one ``hsd: warning:`` line."""


class DocumentError(HSDError):
    """A document could not be opened or read."""


class UnsupportedFileError(DocumentError):
    """The file is not a PDF or a supported image (or is a folder, or does not exist)."""


class CorruptDocumentError(DocumentError):
    """The file claims a supported type but cannot be parsed."""


class EncryptedDocumentError(DocumentError):
    """The PDF needs a password, or the password given is wrong."""


class EmptyDocumentError(DocumentError):
    """The document has no pages."""


class PageRangeError(HSDError):
    """A page range such as ``1-3,7`` is malformed or outside the document."""


class DrafterUnavailableError(HSDError):
    """A drafter cannot run here (not installed, or not configured)."""


class ModelLoadError(HSDError):
    """A target model could not be found or loaded."""


class CancelledError(HSDError):
    """The user cancelled the job."""


def one_line(text) -> str:
    """``text`` as one line of a message: every character that is not printable (a newline or
    carriage return in a file name, a terminal escape, a bidirectional override, a byte that is not
    UTF-8) written as Python writes it in a string literal (``\\n``, ``\\x1b``, ``\\u202e``), so
    a name can never forge a second ``hsd:`` line or change what the terminal shows."""
    text = str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)
