"""Every tunable of the engine and of HSD's scheduler, each with what it means.

None of these changes the output at tau = 1: they decide how much is proposed, which regions are
verified on their crops, and how state is kept, so they move speed (forward passes, seconds) only.
``docs/tuning.md`` gives each one's trade-off and how its value was measured. Options a user sets
(``EngineConfig``, ``ProposalConfig``) take their defaults from here.
"""

from __future__ import annotations

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

# --- proposals (``core.speculative.matching.ProposalConfig``) -------------------------------------

#: Shortest output suffix looked up in the drafts, in tokens.
MIN_NGRAM = 3
#: Longest suffix looked up (the window grows while hits disagree on what follows).
MAX_NGRAM = 10
#: Draft tokens proposed along one continuation before the adaptive length takes over.
MAX_CHAIN = 64
#: Shortest continuation after repeated rejections.
MIN_BUDGET = 4
#: Longest continuation, reached by doubling after proposals accepted in full.
MAX_BUDGET = 256
#: Nodes of one draft tree, root included.
MAX_NODES = 128
#: Continuations merged into one tree.
MAX_BRANCHES = 8
#: Depth of the 1-gram fallback tree (no suffix of ``MIN_NGRAM`` tokens matched).
FALLBACK_DEPTH = 15
#: Branches of the 1-gram fallback tree.
FALLBACK_BRANCHES = 4
#: Tokens per pass a batch's rows share, in units of ``MAX_BUDGET`` (rows are padded to the widest).
BATCH_BUDGETS = 2
#: Tokens of a union tree's every continuation placed before any is extended further.
UNION_HEAD = 4
#: Output tokens the text matcher re-reads to find where the output is in the text drafts.
TEXT_TAIL_TOKENS = 64
#: Characters of text draft read per token of budget (a continuation is cut to the budget after).
TEXT_CHARS_PER_TOKEN = 8
#: Shortest and longest normalised tail the text matcher looks up, in characters.
TEXT_MIN_CHARS, TEXT_MAX_CHARS = 6, 48
#: Text draft positions the matcher follows per lookup.
TEXT_MAX_HITS = 8
#: The page's opening (``OpeningProposer``): proposed while the output is shorter than this many
#: tokens, from the first this many regions of the reading order (the model may skip a running
#: header or a page number), each continuation at most ``OPENING_TOKENS`` tokens long.
OPENING_WINDOW, OPENING_REGIONS, OPENING_TOKENS = 24, 4, 32
#: At the end of a region (``NextRegionProposer``): the openings of this many regions the output
#: has not written yet, each at most ``OPENING_TOKENS`` tokens long; a region counts as written
#: when its first ``NEXT_OPENING_CHARS`` normalised characters are in the output; the output may
#: already hold ``NEXT_STARTED`` normalised characters of the next region (the ending pass's bonus).
NEXT_REGIONS, NEXT_OPENING_CHARS, NEXT_STARTED = 4, 8, 2
#: Longest unit, in tokens, that the output n-gram proposer repeats past the output's end.
REPEAT_UNIT_TOKENS = 12
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
