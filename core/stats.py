"""Statistics files: per page, per region and totals of one conversion (``--stats FILE.json``); and
durations as people read them."""

from __future__ import annotations

from core.results import PageResult


def document_totals(results: list[PageResult]) -> dict:
    ok = [r for r in results if not r.error]
    tokens = sum(r.stats.generated_tokens for r in ok)
    decode_passes = sum(r.stats.stage2_passes or r.stats.stage1_passes for r in ok)
    seconds: dict[str, float] = {}
    for r in ok:
        for k, v in r.stats.seconds.items():
            seconds[k] = seconds.get(k, 0.0) + v
    return {
        "pages": len(results),
        "failed_pages": [r.page for r in results if r.error],
        "forward_passes": sum(r.stats.forward_passes for r in ok),
        "prefill_passes": sum(r.stats.prefill_passes for r in ok),
        "generated_tokens": tokens,
        "mean_accepted_length": round(tokens / decode_passes, 4) if decode_passes else 0.0,
        "seconds": {k: round(v, 4) for k, v in seconds.items()},
    }


def document_stats(input_path: str, output_path: str, settings: dict, results: list[PageResult]) -> dict:
    pages = []
    for r in results:
        d = r.to_dict()
        d.pop("markdown", None)
        pages.append(d)
    return {"file": input_path, "output": output_path, "settings": settings,
            "totals": document_totals(results), "pages": pages}


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
