"""Built-in training text for the tiny models' tokenizer.

Document-parser output in miniature: English prose, Markdown structure, LaTeX formulas and HTML tables,
so that a byte-level BPE trained on it has merges for the strings a real page produces.
"""

from __future__ import annotations

_PROSE = """\
The quarterly report shows that revenue increased by 12 percent compared with the previous year.
Operating costs remained stable, while investment in research and development grew steadily.
In this paper we propose a method for parsing scanned documents into structured text.
The results indicate that the model generalises well to unseen layouts and languages.
Figure 3 illustrates the distribution of page types in the evaluation set.
Table 2 lists the accuracy of each system on tables, formulas and reading order.
All measurements were taken at room temperature and repeated three times.
Please refer to the appendix for the complete list of parameters and hyper-parameters.
The committee approved the budget for the next fiscal year on 14 March 2024.
Section 4.1 describes the experimental setup; Section 4.2 discusses the limitations.
"""

_MARKDOWN = """\
# Introduction

## 2. Related Work

### 3.1 Data collection

- first item of the list
- second item with **bold** and *italic* text
1. numbered step one
2. numbered step two

> A quoted remark from the original source.

`inline code` and a [link](https://example.org/page).

| Name | Value | Unit |
|------|-------|------|
| mass | 12.5 | kg |
| time | 3.2 | s |
"""

_LATEX = r"""
$$E = mc^{2}$$
$$\int_{0}^{\infty} e^{-x^{2}} \, dx = \frac{\sqrt{\pi}}{2}$$
$$\sum_{i=1}^{n} x_{i} = \alpha + \beta \cdot \gamma$$
The loss is $\mathcal{L}(\theta) = -\log p_{\theta}(y \mid x)$ for each sample.
$$\mathbf{A} = \begin{pmatrix} a_{11} & a_{12} \\ a_{21} & a_{22} \end{pmatrix}$$
$$f(x) = \left\{ \begin{array}{ll} x^{2} & x \geq 0 \\ -x & x < 0 \end{array} \right.$$
where $\lambda \in [0, 1]$ and $\sigma^{2}$ is the variance.
"""

_HTML = """\
<table><tr><td>Year</td><td>Revenue</td><td>Profit</td></tr>
<tr><td>2022</td><td>1,204</td><td>310</td></tr>
<tr><td>2023</td><td>1,352</td><td>344</td></tr>
<tr><td colspan="2">Total</td><td>654</td></tr></table>
<table><thead><tr><th>Model</th><th>Score</th></tr></thead><tbody><tr><td>A</td><td>88.4</td></tr></tbody></table>
"""

#: About 4 kB of text; the trainer sees it a few times over so that frequent merges dominate.
TOKENIZER_TRAINING_TEXT: list[str] = [_PROSE, _MARKDOWN, _LATEX, _HTML] * 4
