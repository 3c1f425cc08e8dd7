"""Text for the generated scan set (``tools.bench.scan_set``): sentences, headings, table cells.

Everything comes from the word lists below and a ``random.Random``, so a seed gives the same text on
every machine and Python version (no data file, no network). The sentences are grammatical
templates over a small vocabulary: they read like administrative, scientific or news prose, which
is what a layout and an OCR model see; their meaning does not matter to a drafter.
"""

from __future__ import annotations

import random

_NOUNS = ("committee agency board council survey report study method model sample region market budget "
          "policy program network system process measure result analysis province district school hospital "
          "station harbour railway library museum court office company factory farm river valley bridge "
          "treaty licence permit standard schedule record archive estimate rate index period season "
          "department ministry authority commission panel review framework protocol estate surface").split()
_VERBS = ("reviewed approved examined reported measured estimated extended reduced increased published "
          "announced described proposed adopted confirmed requested observed recorded compared replaced "
          "issued revised completed prepared supported delivered considered established").split()
_ADJS = ("annual regional national public final new revised technical local federal average initial "
         "principal additional current previous general special remaining central northern southern "
         "eastern western seasonal statistical economic environmental municipal provisional").split()
_ADVS = "carefully recently quickly formally largely partly jointly briefly mainly".split()
_PLACES = ("Ashford Bellmont Carrow Dunmore Elstree Fairhaven Glenrock Harwick Ironbridge Kestwick "
           "Lindale Marlow Northby Oakhurst Pendle Queensbury Redmoor Stanton Thornbury Upton").split()
_NAMES = ("A. Morgan|B. Patel|C. Okafor|D. Lindqvist|E. Moreau|F. Tanaka|G. Rossi|H. Novak|I. Haddad|"
          "J. Fischer|K. Nakamura|L. Duarte|M. Kowalski|N. Andersen|O. Ibrahim|P. Laurent").split("|")
_MONTHS = "January February March April May June July August September October November December".split()
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday".split()


def _plural(noun: str) -> str:
    return noun[:-1] + "ies" if noun.endswith("y") and noun[-2] not in "aeiou" else noun + "s"


def english_sentence(rng: random.Random) -> str:
    """One English sentence of 8-30 words."""
    n1, n2, n3 = rng.sample(_NOUNS, 3)
    a1, a2 = rng.sample(_ADJS, 2)
    v1, v2 = rng.sample(_VERBS, 2)
    place = rng.choice(_PLACES)
    number = rng.choice([str(rng.randint(2, 98)), f"{rng.randint(1, 9)}.{rng.randint(0, 9)} percent",
                         f"{rng.randint(1, 12)} {_plural(n3)}"])
    forms = [
        f"The {a1} {n1} {v1} the {a2} {n2} of {place} in {rng.choice(_MONTHS)} {rng.randint(1951, 2024)}.",
        f"In {place}, the {n1} {rng.choice(_ADVS)} {v1} {number} and {v2} the {a1} {n2}.",
        f"According to the {a1} {n1}, the {n2} was {v1} by {number} during the {a2} period.",
        f"Each {n1} {v1} under the {a1} {n2} must be {v2} before the {n3} takes effect.",
        f"The {n1} {v1} that the {a1} {_plural(n2)} of {place} had been {v2} with the {a2} {n3}.",
        f"Further details of the {a1} {n1} are {v1} in the {n2} of the {a2} {n3}.",
        f"Following the {a1} {n1}, {number} were {v1} and the {n2} was {v2} accordingly.",
    ]
    return rng.choice(forms)


def english_paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 5)) -> str:
    return " ".join(english_sentence(rng) for _ in range(rng.randint(*sentences)))


def english_heading(rng: random.Random) -> str:
    n1, n2 = rng.sample(_NOUNS, 2)
    return rng.choice([f"{rng.choice(_ADJS).title()} {n1.title()}", f"{n1.title()} and {n2.title()}",
                       f"The {rng.choice(_ADJS).title()} {n1.title()} of {rng.choice(_PLACES)}",
                       f"{rng.choice(_ADJS).title()} {_plural(n1).title()}"])


def english_item(rng: random.Random) -> str:
    return rng.choice([f"{rng.choice(_ADJS).title()} {n} {rng.choice(_VERBS)} on schedule" for n in _NOUNS]
                      + [f"Review of the {rng.choice(_ADJS)} {rng.choice(_NOUNS)}",
                         f"{rng.randint(2, 40)} {_plural(rng.choice(_NOUNS))} in {rng.choice(_PLACES)}"])


def person(rng: random.Random) -> str:
    return rng.choice(_NAMES)


def place(rng: random.Random) -> str:
    return rng.choice(_PLACES)


def date(rng: random.Random, weekday: bool = False) -> str:
    text = f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}, {rng.randint(1952, 2024)}"
    return f"{rng.choice(_DAYS)}, {text}" if weekday else text


def table_rows(rng: random.Random, rows: int, columns: int) -> list[list[str]]:
    """A header row and ``rows`` data rows: a label column, then numbers."""
    head = [rng.choice(["Item", "Region", "Category", "Station", "District"])]
    head += rng.sample(["2019", "2020", "2021", "2022", "2023", "Total", "Change", "Share", "Mean", "Count"],
                       columns - 1)
    labels = rng.sample([p for p in _PLACES] + [n.title() for n in _NOUNS], rows)
    body = [[label] + [rng.choice([f"{rng.randint(1, 9999):,}", f"{rng.uniform(0, 100):.1f}",
                                   f"{rng.uniform(-9, 9):+.1f}%"]) for _ in range(columns - 1)]
            for label in labels]
    return [head] + body


# --- Chinese and Japanese ----------------------------------------------------------------------

_ZH_SUBJECTS = "委员会 研究小组 地方政府 有关部门 该公司 专家组 市场监管局 学校 医院 研究人员 统计局 工作组".split()
_ZH_VERBS = "发布了 审议了 完成了 提出了 调整了 公布了 分析了 修订了 推进了 加强了 评估了 部署了".split()
_ZH_OBJECTS = ("年度报告 发展规划 实施方案 管理办法 调查结果 预算草案 技术标准 工作计划 改革措施 监测数据 "
               "服务体系 基础设施 环境指标 人才政策 科研项目 安全制度").split()
_ZH_CLAUSES = ("根据最新统计 在过去一年中 为了提高效率 经过多次讨论 按照有关规定 与去年同期相比 "
               "在各方的支持下 截至目前 从长远来看 针对存在的问题").split()
_ZH_TAILS = ("取得了明显成效 得到了广泛认可 进一步完善了制度 有效降低了成本 推动了地区发展 "
             "提高了服务质量 增长了百分之十二 保持了稳定增长 引起了社会关注").split()


def chinese_sentence(rng: random.Random) -> str:
    return (f"{rng.choice(_ZH_CLAUSES)}，{rng.choice(_ZH_SUBJECTS)}{rng.choice(_ZH_VERBS)}"
            f"{rng.choice(_ZH_OBJECTS)}，{rng.choice(_ZH_TAILS)}。")


def chinese_paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 5)) -> str:
    return "".join(chinese_sentence(rng) for _ in range(rng.randint(*sentences)))


def chinese_heading(rng: random.Random) -> str:
    return rng.choice(["关于", "", "加强", "推进"]) + rng.choice(_ZH_OBJECTS) + rng.choice(["的说明", "", "工作", "概况"])


_JA_SUBJECTS = "委員会 研究チーム 市役所 担当部署 同社 専門家 図書館 大学 病院 調査班".split()
_JA_OBJECTS = "年次報告書 事業計画 調査結果 予算案 技術基準 作業手順 改善策 観測データ 利用規約 安全対策".split()
_JA_VERBS = "を発表しました を見直しました をまとめました を公開しました を検討しています を承認しました".split()
_JA_CLAUSES = "昨年度に続き 今回の調査では 関係者によると 地域の要望を受けて 新しい制度のもとで 前回と比べて".split()
_JA_TAILS = "利用者は増えています 費用は大きく減りました 今後も改善が続きます 手続きは簡単になりました".split()


def japanese_sentence(rng: random.Random) -> str:
    return rng.choice([
        f"{rng.choice(_JA_CLAUSES)}、{rng.choice(_JA_SUBJECTS)}は{rng.choice(_JA_OBJECTS)}{rng.choice(_JA_VERBS)}。",
        f"{rng.choice(_JA_SUBJECTS)}によると、{rng.choice(_JA_TAILS)}。",
        f"{rng.choice(_JA_OBJECTS)}については、{rng.choice(_JA_CLAUSES)}{rng.choice(_JA_TAILS)}。",
    ])


def japanese_paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 5)) -> str:
    return "".join(japanese_sentence(rng) for _ in range(rng.randint(*sentences)))


def japanese_heading(rng: random.Random) -> str:
    return rng.choice(_JA_OBJECTS) + rng.choice(["について", "の概要", "", "の見直し"])


def mixed_sentence(rng: random.Random) -> str:
    """Chinese with Latin terms and numbers, as technical Chinese text is written."""
    term = rng.choice(["GPU", "API", "Python 3.12", "PDF", "OCR", "5G", "LED", "CPU", "HTTP/2", "AI"])
    return (f"{rng.choice(_ZH_CLAUSES)}，{rng.choice(_ZH_SUBJECTS)}在 {term} 方面{rng.choice(_ZH_VERBS)}"
            f"{rng.choice(_ZH_OBJECTS)}，效率提高了 {rng.randint(5, 95)}%。")


def mixed_paragraph(rng: random.Random, sentences: tuple[int, int] = (2, 4)) -> str:
    return "".join(mixed_sentence(rng) for _ in range(rng.randint(*sentences)))


# --- German, for the old typeface ----------------------------------------------------------------

_DE_NOUNS = ("Gesellschaft Regierung Verwaltung Bürger Stadt Gemeinde Versammlung Schule Kirche Handel "
             "Verordnung Zeitung Nachricht Obrigkeit Freiheit Vernunft Pflicht Ordnung Landschaft").split()
_DE_VERBS = "beschloss verkündete prüfte erklärte bestätigte veröffentlichte verlangte berichtete".split()
_DE_ADJS = "neue alte öffentliche allgemeine königliche städtische ganze gemeine".split()


def german_sentence(rng: random.Random) -> str:
    n1, n2 = rng.sample(_DE_NOUNS, 2)
    return rng.choice([
        f"Die {rng.choice(_DE_ADJS)} {n1} {rng.choice(_DE_VERBS)} im Jahre {rng.randint(1700, 1899)} die {n2}.",
        f"Man {rng.choice(_DE_VERBS)}, daß die {n1} der {n2} mit großer Sorgfalt zu folgen habe.",
        f"In der {n1} zu {rng.choice(_PLACES)} wurde die {rng.choice(_DE_ADJS)} {n2} verlesen.",
        f"Es ist die {n1}, welche die {n2} bewahrt und dem Volke dient.",
    ])


#: Umlauts as the blackletter face draws them (its letters carry no dots): the old "ae" spelling.
_NO_UMLAUT = str.maketrans({"ä": "ae", "ö": "oe", "ü": "ue", "Ä": "Ae", "Ö": "Oe", "Ü": "Ue"})


def german_paragraph(rng: random.Random, sentences: tuple[int, int] = (3, 6)) -> str:
    return " ".join(german_sentence(rng) for _ in range(rng.randint(*sentences))).translate(_NO_UMLAUT)


def german_heading(rng: random.Random) -> str:
    return f"Von der {rng.choice(_DE_ADJS).title()}n {rng.choice(_DE_NOUNS)}".translate(_NO_UMLAUT)
