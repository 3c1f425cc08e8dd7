"""A model folder's small files and its chat template, checked before they can take unbounded memory.

A model folder is untrusted input. Its tokenizer and processor files are read whole by transformers
(a 1 GB ``tokenizer.json`` took 5.7 GB), so each is refused past a size no real one comes near,
before anything reads it. Its chat template is a program: transformers renders it in jinja2's
sandbox, which bounds what it may touch but not how long it loops or how much it writes (nested
``range(100000)`` loops took 5 GB). Every prompt HSD sends is fixed, so each one is rendered once
at load time in a sandbox that counts loop steps and written characters; a template that runs past
either is refused, and the renders that follow, with the same prompts, are bounded by the same.
"""

from __future__ import annotations

from pathlib import Path

from core import tuning
from core.errors import ModelLoadError

#: Files read whole when a tokenizer or processor loads, and the largest real one of each kind:
#: tokenizer.json / vocab files of the biggest vocabularies are 20-35 MB.
TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model",
                   "sentencepiece.bpe.model", "added_tokens.json")
#: ... and small JSON or template files: a few KB each.
SMALL_FILES = ("tokenizer_config.json", "special_tokens_map.json", "preprocessor_config.json",
               "processor_config.json", "video_preprocessor_config.json", "generation_config.json",
               "chat_template.jinja", "chat_template.json")


def _mib(size: int) -> str:
    return f"{size / (1 << 20):,.0f} MiB"


def check_file_sizes(name: str, folder: Path) -> None:
    """``ModelLoadError`` naming the first tokenizer or processor file of ``folder`` larger than any
    real one (``tuning.MAX_TOKENIZER_FILE_BYTES``, ``tuning.MAX_MODEL_SMALL_FILE_BYTES``), from its
    size alone: nothing is read."""
    for names, limit in ((TOKENIZER_FILES, tuning.MAX_TOKENIZER_FILE_BYTES),
                         (SMALL_FILES, tuning.MAX_MODEL_SMALL_FILE_BYTES)):
        for file_name in names:
            try:
                size = (folder / file_name).stat().st_size
            except OSError:
                continue
            if size > limit:
                raise ModelLoadError(f"model {name!r} cannot be used: its {file_name} is {_mib(size)}, "
                                     f"far larger than any real one (at most {_mib(limit)})")


class TemplateRunsWithoutBound(Exception):
    """A chat template looped or wrote past the bounds of ``render_bounded``."""


def _bounded_environment(steps: int, chars: int):
    """transformers' sandbox for chat templates, with ``range``, ``*`` and ``**`` counted against
    ``steps`` items and ``chars`` characters."""
    import json
    from datetime import datetime

    import jinja2
    from jinja2 import nodes
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    budget = {"steps": steps}

    def spend(n: int) -> None:
        budget["steps"] -= n
        if budget["steps"] < 0:
            raise TemplateRunsWithoutBound(f"more than {steps:,} loop steps")

    def bounded_range(*args):
        items = range(*args)
        spend(len(items))
        return items

    class Generation(Extension):
        """``{% generation %}``: transformers marks assistant text with it; here it only renders."""

        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

        def _render(self, caller):
            return caller()

    class Bounded(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**"})

        def call_binop(self, context, operator, left, right):
            if operator == "**":
                if isinstance(right, int) and abs(right) > 64:
                    raise TemplateRunsWithoutBound("a power past 64")
                return left ** right
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(count, int):
                    if len(seq) * count > chars:
                        raise TemplateRunsWithoutBound(f"a repetition past {chars:,} items")
                    spend(max(count, 0))
            return left * right

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    env = Bounded(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    env.globals.update(range=bounded_range, raise_exception=raise_exception, dict=dict,
                       strftime_now=lambda fmt: datetime.now().strftime(fmt))
    return env, spend


def render_bounded(template: str, variables: dict, steps: int | None = None, chars: int | None = None) -> str:
    """``template`` rendered with ``variables``; ``TemplateRunsWithoutBound`` once it has taken more
    than ``steps`` loop steps (``range`` items, repetitions, written pieces) or written more than
    ``chars`` characters (``tuning.CHAT_TEMPLATE_STEPS``, ``tuning.CHAT_TEMPLATE_CHARS``)."""
    steps = tuning.CHAT_TEMPLATE_STEPS if steps is None else steps
    chars = tuning.CHAT_TEMPLATE_CHARS if chars is None else chars
    env, spend = _bounded_environment(steps, chars)
    out, written = [], 0
    for piece in env.from_string(template).generate(**variables):
        spend(1)
        written += len(piece)
        if written > chars:
            raise TemplateRunsWithoutBound(f"more than {chars:,} characters")
        out.append(piece)
    return "".join(out)


def check_chat_template(name: str, processor, profile) -> None:
    """``ModelLoadError`` when the processor's chat template, rendered for each prompt HSD sends
    (the page and each kind of region), runs past ``render_bounded``'s bounds. A template this
    sandbox cannot read (a syntax of its own) is left to transformers, which says what is wrong."""
    from core.targets.profiles.base import CHART_LABELS, FORMULA_LABELS, TABLE_LABELS

    tokenizer = getattr(processor, "tokenizer", processor)
    template = getattr(processor, "chat_template", None) or getattr(tokenizer, "chat_template", None)
    templates = list(template.values()) if isinstance(template, dict) else [template]
    special = {k: v for k, v in getattr(tokenizer, "special_tokens_map", {}).items() if isinstance(v, str)}
    prompts = [profile.prompt("page")] + [profile.prompt("region", label) for label in
                                          ("text", *TABLE_LABELS, *FORMULA_LABELS, *CHART_LABELS)]
    for text in templates:
        if not isinstance(text, str):
            continue
        for prompt in dict.fromkeys(prompts):
            variables = dict(special, messages=profile.messages(prompt), add_generation_prompt=True)
            try:
                render_bounded(text, variables)
            except TemplateRunsWithoutBound as exc:
                raise ModelLoadError(f"model {name!r} cannot be used: its chat template runs without bound "
                                     f"({exc})") from None
            except Exception:  # noqa: BLE001 - transformers reports a template it cannot render
                return
