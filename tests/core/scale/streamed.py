"""What a run's events tell, whatever the machine's speed."""

from core.events import TextAppended


def streamed(events) -> tuple[list, dict[int, str]]:
    """Every event but the streamed text, in order, and each page's streamed text joined: how that
    text is cut into events follows the clock (``core.page_job.TextStream``), what it says does not."""
    text: dict[int, str] = {}
    for e in events:
        if isinstance(e, TextAppended):
            text[e.page] = text.get(e.page, "") + e.text
    return [e for e in events if not isinstance(e, TextAppended)], text
