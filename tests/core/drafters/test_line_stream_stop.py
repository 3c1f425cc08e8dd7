"""A page's reading stopped mid-way (``line_stream.PageReads``'s ``stopped``): its decode ended, so
no further line is read; the lines read are kept, the rest are left unread; a document's first
page still learns the document's script from its whole sample (``core.drafters.squeeze``)."""

from __future__ import annotations

import pytest

from core import tuning
from core.drafters.line_stream import PageReads
from core.drafters.squeeze import SqueezePolicy
from tests.core.drafters.test_squeeze import ScriptedRecognizer, page


class OneByOne:
    """A reader that yields each line as it reads it (as the pipeline's workers do) and counts
    the lines it was asked to read and those it read."""

    def __init__(self, texts):
        self.inner = ScriptedRecognizer(texts)
        self.read = 0
        self.closed = False

    def __call__(self, crops):
        try:
            for crop in crops:
                self.read += 1
                yield self.inner([crop])[0]
        finally:
            self.closed = True


@pytest.fixture(autouse=True)
def chunks_of_four(monkeypatch):
    monkeypatch.setattr(tuning, "EARLY_LINES_FIRST", 2)
    monkeypatch.setattr(tuning, "EARLY_LINES_CHUNK", 4)


def stopped_once_told(crops, reader, wanted: set[int] | None = None, told: list | None = None) -> PageReads:
    """``crops``' reads by ``reader``, stopped once their first chunk is told (the page's decode
    ends then), the stop wanting the lines ``wanted`` read all the same where given; the lines
    told are added to ``told``."""
    stop = {"now": False}

    def tell(lines):
        if told is not None:
            told.extend(lines)
        stop["now"] = True

    want = (lambda known: wanted) if wanted is not None else None
    return PageReads(crops, reader, tell=tell, stopped=lambda: stop["now"] and (want or True))


def test_a_stop_keeps_the_lines_read_and_leaves_the_rest_unread():
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reader, told = OneByOne(texts), []
    reads = stopped_once_told(crops, reader, told=told)
    reads.read(list(range(12)), 1.0)
    assert reads.cut
    assert reads.texts[:2] == [texts[1], texts[2]] and reads.texts[2:] == [None] * 10
    assert reads.unread() == list(range(2, 12))
    assert told == [(0, texts[1]), (1, texts[2])]
    # the reader's pending lines were dropped: at most the line it had in hand beyond the chunk
    assert reader.closed and reader.read <= 3
    assert reads.factors == [1.0] * 12
    # a later read of the same page reads nothing
    reads.read([5, 6], 1.0)
    assert reads.texts[5:7] == [None, None] and reader.read <= 3


def test_without_a_stop_the_page_is_read_whole_and_nothing_is_unread():
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reads = PageReads(crops, OneByOne(texts), stopped=lambda: False)
    reads.read(list(range(12)), 1.0)
    assert not reads.cut and reads.unread() == []
    assert reads.texts == [texts[t] for t in range(1, 13)]


def test_a_stop_before_the_first_line_leaves_the_page_unread():
    """The decode ended before the recogniser began (while the page was detected): no line is read."""
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reader = OneByOne(texts)
    reads = PageReads(crops, reader, stopped=lambda: True)
    reads.read(list(range(12)), 1.0)
    assert reads.cut and reads.unread() == list(range(12)) and reader.read == 0


def test_the_whole_first_read_is_not_cut_and_the_next_one_is():
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reads = PageReads(crops, OneByOne(texts), stopped=lambda: True, whole_first=True)
    reads.read(list(range(6)), 1.0)
    assert not reads.cut and reads.texts[:6] == [texts[t] for t in range(1, 7)]
    reads.read(list(range(6, 12)), 1.0)
    assert reads.cut and reads.unread() == list(range(6, 12))


@pytest.mark.parametrize("cjk", [True, False])
def test_a_first_page_stopped_at_once_learns_the_documents_script_from_its_sample(cjk):
    """The decode of a document's first page ends before its OCR reads a line: the sample of six
    lines is read whole, the rest of the page not at all, and the document's script is the
    sample's: a CJK document's next page is read squeezed, a Latin one's at full width."""
    crops, texts = page(range(1, 21), latin=set() if cjk else set(range(1, 21)))
    reader = OneByOne(texts)
    policy = SqueezePolicy()
    reads = PageReads(crops, reader, tell=lambda lines: None, stopped=lambda: True, whole_first=True)
    policy.read_page(reads)
    assert reads.cut and len(reads.unread()) == 14
    assert sum(text is not None for text in reads.texts) == 6
    assert policy.learned and policy.squeeze_next is cjk and policy.squeezed_lines == 0
    # no line left unread counts as read squeezed, and none was read at another width than its own
    assert all(factor == 1.0 for factor in reads.factors)
    # the next page follows the learned script
    inner = ScriptedRecognizer(texts)
    policy.read_page(PageReads(crops, inner))
    widths = [width for call in inner.calls for _, width in call]
    full = [crop.shape[1] for crop in crops]
    assert len(inner.calls) == 1 and (sorted(widths) < sorted(full) if cjk else sorted(widths) == sorted(full))


def test_a_squeezed_page_stopped_keeps_what_it_read_squeezed():
    """A CJK document's later page, read squeezed, stopped after its first chunk: the lines read
    keep their squeezed reading; the lines not read are not read again at full width."""
    crops, texts = page(range(1, 13))
    policy = SqueezePolicy()
    policy.read_page(PageReads(crops, ScriptedRecognizer(texts)))  # learns the document is CJK
    assert policy.squeeze_next
    reads = stopped_once_told(crops, OneByOne(texts))
    policy.read_page(reads)
    read = [i for i, text in enumerate(reads.texts) if text is not None]
    assert len(read) == 2 and reads.unread() == [i for i in range(12) if i not in read]
    assert all(reads.factors[i] < 1.0 and reads.squeezed[i] for i in read)
    assert all(reads.factors[i] == 1.0 and not reads.squeezed[i] for i in reads.unread())
    assert policy.squeeze_next  # the lines read were dense


def test_a_stop_that_wants_lines_reads_those_and_no_other_and_tells_none():
    """A stop that still wants some lines (a figure's, and the text before it): they are read in
    one more call after the stop, not told; the other lines stay unread."""
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reader, told = OneByOne(texts), []
    reads = stopped_once_told(crops, reader, wanted={9, 10}, told=told)
    reads.read(list(range(12)), 1.0)
    assert reads.cut and reads.wanted == {9, 10}
    assert reads.texts[9:11] == [texts[10], texts[11]]
    assert reads.unread() == [i for i in range(2, 12) if i not in (9, 10)]
    assert told == [(0, texts[1]), (1, texts[2])]  # the lines read for the figure are not told
    assert reader.read <= 3 + 2


def test_a_stop_is_asked_again_with_what_its_lines_said_until_it_wants_no_line_unread():
    """The text before a figure is known only once read: the stop names the last line first, then,
    that line read, the one before it; it is never asked to read a line twice."""
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    asked = []

    def want(known):
        asked.append([i for i, text in enumerate(known) if text is not None])
        return {11} if known[11] is None else {11, 7}

    reader = OneByOne(texts)
    reads = PageReads(crops, reader, stopped=lambda: want)
    reads.read(list(range(12)), 1.0)
    assert reads.cut and reader.read == 2
    assert [i for i, text in enumerate(reads.texts) if text is not None] == [7, 11]
    assert asked == [[], [11], [7, 11]]
    # a later read of the page reads the wanted lines no more, and no other
    reads.read(list(range(12)), 1.0)
    assert reader.read == 2


def squeezed_page_read_whole_and_stopped(reader_class, wanted: set[int]) -> tuple:
    """A CJK document's later page, two of its lines Latin (read again at full width), read whole
    and read by a ``reader_class`` stopped once its first chunk is told, the stop wanting the
    lines ``wanted``: ``(whole reads, stopped reads, the stopped read's reader)``."""
    crops, texts = page(range(1, 13), latin={4, 9})
    whole_policy, stopped_policy = SqueezePolicy(), SqueezePolicy()
    for policy in (whole_policy, stopped_policy):
        policy.read_page(PageReads(crops, ScriptedRecognizer(texts)))  # learns the document is CJK
    whole = PageReads(crops, ScriptedRecognizer(texts))
    whole_policy.read_page(whole)
    reader = reader_class(texts)
    stopped = stopped_once_told(crops, reader, wanted=wanted)
    stopped_policy.read_page(stopped)
    return whole, stopped, reader


def test_a_squeezed_page_stopped_reads_the_wanted_lines_at_the_widths_a_whole_read_gives_them():
    """A CJK document's later page: the lines a stop still wants are read squeezed and, where a
    whole read reads them again at full width, read again too: their readings are a whole read's."""
    wanted = {3, 8, 10}
    whole, stopped, reader = squeezed_page_read_whole_and_stopped(OneByOne, wanted)
    assert stopped.cut and not wanted & set(stopped.unread())
    assert any(whole.factors[i] == 1.0 for i in wanted) and any(whole.factors[i] < 1.0 for i in wanted)
    for i in wanted:
        assert (stopped.texts[i], stopped.factors[i], stopped.squeezed[i]) == \
            (whole.texts[i], whole.factors[i], whole.squeezed[i])
    # each wanted line read once squeezed, and again at full width only where the whole read did
    reads_of = [tag - 1 for call in reader.inner.calls for tag, _ in call]
    assert all(reads_of.count(i) == (2 if whole.factors[i] == 1.0 else 1) for i in wanted)


class ReadAhead:
    """A reader whose threads have read every crop it is handed before the first is taken (as the
    pipeline's ``LineReads`` may, its threads ahead of a slow listener): ``close`` hands back the
    reads not taken; ``hold`` and ``release`` are counted."""

    def __init__(self, texts):
        self.inner = ScriptedRecognizer(texts)
        self.holds = self.releases = 0

    def __call__(self, crops):
        reader = self

        class Reads:
            def __init__(self):
                self.lines = reader.inner(list(crops)) if crops else []
                self.taken = 0

            def __iter__(self):
                return self

            def __next__(self):
                if self.taken >= len(self.lines):
                    raise StopIteration
                self.taken += 1
                return self.lines[self.taken - 1]

            def hold(self):
                reader.holds += 1

            def release(self):
                reader.releases += 1

            def close(self):
                return {at: line for at, line in enumerate(self.lines) if at >= self.taken}

        return Reads()

    def tags_read(self) -> list[int]:
        return [tag - 1 for call in self.inner.calls for tag, _ in call]


def test_the_lines_read_ahead_of_a_stop_are_taken_for_its_wanted_lines_not_read_again():
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reader = ReadAhead(texts)
    reads = stopped_once_told(crops, reader, wanted={9, 10})
    reads.read(list(range(12)), 1.0)
    assert reads.cut and reads.wanted == {9, 10}
    assert reads.texts[9:11] == [texts[10], texts[11]]
    assert reads.unread() == [i for i in range(2, 12) if i not in (9, 10)]
    assert sorted(reader.tags_read()) == list(range(12))  # each line once: those wanted were read ahead
    # the reader was held while the stop was decided, and let go where it went on
    assert reader.holds == 1 and reader.releases == 0


def test_a_stop_not_heeded_lets_the_reader_go_on():
    crops, texts = page(range(1, 13), latin=set(range(1, 13)))
    reader = ReadAhead(texts)
    reads = PageReads(crops, reader, tell=lambda lines: None, stopped=lambda: False)
    reads.read(list(range(12)), 1.0)
    assert not reads.cut and reads.texts == [texts[t] for t in range(1, 13)]
    assert reader.holds == reader.releases == 3  # asked before each chunk after the first


def test_a_squeezed_line_read_ahead_is_taken_only_at_the_width_it_was_read():
    """A CJK page read squeezed, stopped: a wanted line read ahead squeezed is taken for its
    squeezed reading; where a whole read reads it again at full width, that is read anew."""
    wanted = {3, 8, 10}
    whole, stopped, reader = squeezed_page_read_whole_and_stopped(ReadAhead, wanted)
    assert stopped.cut and not wanted & set(stopped.unread())
    for i in wanted:
        assert (stopped.texts[i], stopped.factors[i], stopped.squeezed[i]) == \
            (whole.texts[i], whole.factors[i], whole.squeezed[i])
    reads_of = reader.tags_read()
    # every line read once squeezed (ahead); a wanted line read again only at full width
    assert all(reads_of.count(i) == (2 if i in wanted and whole.factors[i] == 1.0 else 1) for i in range(12))
