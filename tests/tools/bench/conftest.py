"""The benchmark's synthetic corpus, shared with tests/core/bench (the timelines replay it)."""

from tests.core.bench.conftest import synthetic_corpus  # noqa: F401
