"""HunyuanOCR (HunYuanVL): xdrope with four position axes; text positions carry no offset after the image.

Prompts are the document-parsing, formula and table instructions of the HunyuanOCR model card. As
transformers' model doc and the official transformers script do: eager attention, the PIL image
processor, no system message. On a CPU, sdpa instead: measured on the tiny model (two cores) it gave
the same tokens, its prefill 0.39-0.44 s against eager's 0.49-0.66 s and 150 AR tokens 4.1-4.4 s
against 4.6 s (docs/models.md). Output goes through the official scripts' post-filter (a runaway
repeated tail is cut to one copy). Stop ids: eos 120007 (<｜hy_Assistant｜>) and eod 120020.
"""

from dataclasses import dataclass

from core.targets.profiles.base import Profile
from core.targets.profiles.postprocess import trim_trailing_repeats


@dataclass(frozen=True)
class HunyuanProfile(Profile):
    def postprocess(self, text: str) -> str:
        return trim_trailing_repeats(text)


PROFILE = HunyuanProfile(
    family="hunyuan_vl",
    rope_axes=4,
    page_prompt=(
        "提取文档图片中正文的所有信息用markdown格式表示，其中页眉、页脚部分忽略，表格用html格式表达，"
        "文档中公式用latex格式表示，按照阅读顺序组织进行解析。"
    ),
    text_prompt="提取图中的文字。",
    table_prompt="把图中的表格解析为HTML。",
    formula_prompt="识别图片中的公式，用LaTeX格式表示。",
    page_max_pixels=2048 * 2048,
    stop_tokens=("<｜hy_Assistant｜>", "<｜hy_place▁holder▁no▁2｜>"),
    attn_implementation="eager",
    cpu_attn_implementation="sdpa",
    image_backend="pil",
)
