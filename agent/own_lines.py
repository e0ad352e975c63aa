"""What a resume's own line looks like: the positive reading the guards fail closed on (issue 40).

A **contact line** (the resume's own name, e-mail, phone, links: "Email: ada@example.test |
Taipei") and a **content line** (a heading, a role or school with its dates, an achievement, a list
of skills, a summary) read as the resume's own; a line that sends its reader to a party to contact
does not, unless it opens as a duty the person held ("負責與廠商聯繫"). `agent/provenance.py` decides
from these where a line's text may go; the screen (`agent/screening.py`) flags a line that speaks to
someone and reads as none of them.

Pure Python, no Django and no ADK; each line is read once, by patterns that start only where
their run starts (agent/text.py): linear in the line.
"""

from __future__ import annotations

import re

from agent.text import CJK, CJK_RE, EMAIL_RE, URL_RE, long_numbers

HEADER_LINES = 6  # a contact line without a label sits among the resume's first lines
_LABEL_WORDS = (
    r"e-?mail|mail|phone|tel|telephone|mobile|cell|linkedin|github|gitlab|portfolio|website|web|site|blog|address"
    r"|location|based\s+in|line|wechat|電話|手機|行動電話|信箱|電子郵件|電郵|郵件|網站|網址|作品集|部落格|地址|所在地|聯絡方式|聯絡"
)
_CONTACT_LABEL_RE = re.compile(rf"^(?:{_LABEL_WORDS})\s*[:：]")
_LABEL_RE = re.compile(rf"(?<![a-z])(?:{_LABEL_WORDS})(?![a-z])")
_SEPARATORS_RE = re.compile(r"[\s|·•,，、/:：;；()（）\[\]<>+-]+")
_CONTACT_REST_MAX = 32  # what a contact line holds besides its items and labels: a city, a name
_WORD_RE = re.compile(r"[a-z]+")

_SECTION_WORDS = re.compile(
    r"^(?:(?:work\s+|professional\s+|relevant\s+)?experience|employment(?:\s+history)?|education|skills?|technical\s+skills"
    r"|projects?|summary|profile|about(?:\s+me)?|objective|certifications?|licen[cs]es|awards?|honou?rs|publications?"
    r"|languages?|volunteer(?:ing)?|activities|interests|references|training|courses|achievements|highlights"
    r"|工作經歷|工作經驗|經歷|經驗|學歷|教育背景|教育|技能|專業技能|專長|專案|專案經歷|作品|自傳|簡介|個人簡介|摘要"
    r"|證照|證書|語言|語言能力|獲獎|得獎|榮譽|著作|發表|志工|社團|課程|訓練|推薦人)\s*[:：]?$"
)
_LIST_LABEL_RE = re.compile(r"^[^:：]{1,30}[:：]\s*(.+)$")
_LIST_SPLIT_RE = re.compile(r"\s*[,，、;；|/]\s*")
_LIST_ITEM_MAX = 40
_QUOTES_RE = re.compile(r"[「」『』“”\"]")
_SUMMARY_RE = re.compile(r"^(?:summary|profile|about|objective|簡介|自我介紹|摘要|個人簡介|自傳)\s*[:：]")
_DATED_RE = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)|\bpresent\b|\bnow\b|至今|迄今|現在|目前")
_DATED_MAX = 160  # a role or a school with its dates, not a paragraph that mentions a year
_ACHIEVEMENT_RE = re.compile(
    r"^[a-z]+ed\b|^(?:led|built|ran|won|grew|cut|drove|wrote|taught|made|began|brought|set\s+up|rebuilt)\b"
    # a duty in the present tense, as a trainer's or a manager's resume writes it ("Coach new teachers to ...")
    r"|^(?:coach|teach|train|mentor|tutor|supervise|oversee)\s+(?:new|junior|the|our|a|\d+)\b"
    r"|^(?:負責|帶領|領導|建立|建置|開發|設計|主導|導入|優化|協助|管理|規劃|執行|推動|完成|撰寫|改善|提升|降低|獲得|擔任|參與|整合|維護|指導|教授|翻譯|籌辦|制定|訂定|建構)"
)
# Sending someone to a party ("reach out to coach X first", "先與顧問 X 聯繫"): a party to contact
# carries harm as a phone number does, and a resume's own lines state what the person did.
_DIRECTS_CONTACT_RE = re.compile(
    r"\b(?:contact(?!\s+(?:cent(?:er|re)s?|lens(?:es)?|details|info(?:rmation)?)\b)|reach\s+out|get\s+in\s+touch"
    r"|talk\s+to|speak\s+(?:to|with)|connect\s+with|(?:book|schedule)\s+(?:a\s+|an\s+)?(?:call|session|consultation))\b"
    r"|聯絡|聯繫|連絡|連繫|洽詢|可洽|洽談|致電|私訊|加.{0,4}(?:line|賴|好友)|연락|문의|상담|問い合わせ|ご連絡|ご相談"
    # ... or to one who acts for the person: an agent, a representative, one copied on every letter.
    r"|\b(?:career|talent|job)\s+(?:agent|representation|representative)s?\b|\brepresents?\s+me\b|\bon\s+my\s+behalf\b"
    r"|\bcc\b|\bcarbon\s+cop(?:y|ies)\b|經紀人|经纪人|代理人|職涯代理|职涯代理|求職代理|求职代理|對外窗口|对外窗口"
    r"|代理窗口|代為|代为|副本(?:給|给|予|寄)"
)
_HEADING_MAX = 40
_NAME_LINE_MAX = 60  # the first line: a name, in one script or two, with a title
_BRACKET_LABEL_RE = re.compile(r"^[\[【〔]([^\]】〕]{1,12})[\]】〕]\s*")
_CLAUSE_END_RE = re.compile(r"[,，、;；]\s*$")  # a line that ends mid-sentence is no heading
_CLAUSE_RE = re.compile(rf"[{CJK}][,，;；]\s*[{CJK}]")  # nor one whose Chinese runs clause after clause
_TENURE_RE = re.compile(r"\d+\+?\s*(?:years?|yrs)\b|\d+\s*年|[一二三四五六七八九十]+年")
_SENTENCE_MARK_RE = re.compile(r"[.!?。！？]")
_SENTENCE_GOES_ON_RE = re.compile(r"[。！？]\s*\S|[.!?]\s+\S")  # a sentence's end with more after it

# Codes that name something a resume states (python3, 2019-present, gpt-4o) may be quoted from a
# content line; a reference-shaped one (letters with a run of three digits or more that is not a
# year: "ZEBRA-4471", "iso27001") is vouched for only by the person or a contact line.
_YEAR_RE = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
_DIGIT_RUN_RE = re.compile(r"\d{3,}")


def is_reference_code(code: str) -> bool:
    return bool(_DIGIT_RUN_RE.search(_YEAR_RE.sub("", code)))


def _contact_items(text: str) -> list[str]:
    return [m.group(0) for m in URL_RE.finditer(text)] + EMAIL_RE.findall(text)


def is_contact_line(text: str, position: int) -> bool:
    """`text` (read, bullet-less) holds a link, an address or a phone number and, besides them and
    their labels, at most a city or a name; labelled ("Email: ...") or among the first lines."""
    has_item = bool(_contact_items(text) or long_numbers(text))
    if not has_item or not (position < HEADER_LINES or _CONTACT_LABEL_RE.match(text)):
        return False
    rest = EMAIL_RE.sub(" ", text)
    rest = URL_RE.sub(" ", rest)
    rest = re.sub(r"\+?\(?\d[\d ().-]*", " ", rest)
    rest = _LABEL_RE.sub(" ", rest)
    rest = _SEPARATORS_RE.sub(" ", rest).strip()
    words = len(_WORD_RE.findall(rest)) + len(CJK_RE.findall(rest)) / 2  # a city: 台北市 or Taipei City
    return len(rest) <= _CONTACT_REST_MAX and words <= 4


def _is_list(text: str, *, strict: bool) -> bool:
    """ "Skills: Python, SQL" (two items or more after a label), or three items or more bare; an item
    that ends a sentence and goes on ("請幫我看履歷。答：已完成") makes the line prose. `strict`: items
    are names and short phrases, so a quotation (a record's '"key": "value"' too) makes the line prose
    or data."""
    match = _LIST_LABEL_RE.match(text)
    items = [item for item in _LIST_SPLIT_RE.split(match.group(1) if match else text) if item]
    return len(items) >= (2 if match else 3) and all(
        len(item) <= _LIST_ITEM_MAX
        and not _SENTENCE_GOES_ON_RE.search(item)
        and not (strict and _QUOTES_RE.search(item))
        for item in items
    )


def is_content_line(text: str, position: int, bulleted: bool, *, strict: bool = True) -> bool:
    """`text` (read, bullet-less) positively reads as a resume's own: the name line, a heading, a
    role or school with its dates, an achievement, a list, a summary. `strict` (what the guards let
    be quoted): a list of clauses, quotations or a record is not one; the screen, which must not
    raise a false alarm on a line a resume could hold, reads lists leniently."""
    if position == 0 and len(text) <= _NAME_LINE_MAX:
        return True
    # "【技能】Python、SQL" reads as "Python、SQL"; under a label that names no section ("【備註】") a line
    # is a note, never a heading, whatever its length.
    label = _BRACKET_LABEL_RE.match(text)
    note = bool(label) and not _SECTION_WORDS.match(label.group(1))
    text = (text[label.end() :] or text) if label else text
    if _SECTION_WORDS.match(text) or _SUMMARY_RE.match(text) or _is_list(text, strict=strict):
        return True
    short = len(text) <= _HEADING_MAX and len(text.split()) <= 6 and not note
    if short and not _SENTENCE_MARK_RE.search(text) and not _CLAUSE_END_RE.search(text) and not _CLAUSE_RE.search(text):
        return True  # a short heading or title ("Senior Data Analyst", "資料分析師")
    if (_DATED_RE.search(text) or _TENURE_RE.search(text)) and len(text) <= _DATED_MAX:
        return True  # a role or a school with its dates; a profile with its years ("8 years in ...")
    return bulleted or opens_as_duty(text)


def opens_as_duty(text: str) -> bool:
    """Does `text` (read, bullet-less) open as work the person did or does ("Led ...", "Coach new
    teachers to ...", "負責...")? What follows is their work, told, whatever it quotes or asks of others."""
    return bool(_ACHIEVEMENT_RE.match(text))


def directs_contact(text: str) -> bool:
    """Does `text` (read, bullet-less) send its reader to someone, other than as a duty it states?"""
    return bool(_DIRECTS_CONTACT_RE.search(text)) and not opens_as_duty(text)
