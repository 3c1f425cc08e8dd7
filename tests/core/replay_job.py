"""A page job on the replay stand-in (no model weights): what the tests of the stages that read one
page build their job from."""

from __future__ import annotations

from PIL import Image

from core.bench.replay import ReplayTarget, ReplayTokenizer, base_tokenizer
from core.drafters.background import DraftJob
from core.engine import EngineConfig
from core.page_job import PageImage, PageJob, PageRegions


def replay_target() -> ReplayTarget:
    """The replay stand-in with the tiny tokenizer."""
    return ReplayTarget(ReplayTokenizer(base_tokenizer("tiny")))


def replay_page_job(regions, mode="hsd", **config) -> PageJob:
    """A job for a blank page on a new replay target; ``regions`` is a finished region list or a
    ``DraftJob`` still drafting. The regions drafted so far are taken in before it returns."""
    target = replay_target()
    drafting = DraftJob.finished(regions) if isinstance(regions, list) else regions
    job = PageJob(EngineConfig(mode=mode, **config), target, PageImage(Image.new("RGB", (200, 100)), 0.5, 3),
                  PageRegions(drafting, target.encode))
    job.regions.poll(0)
    return job
