"""The Traditional Chinese a person in Taiwan reads: no English left in the page, the admin or the
API's messages beyond the few words Taiwanese readers write in Latin letters themselves.

Each surface is rendered in Traditional Chinese (Accept-Language: zh-TW) and every text a person
reads is taken from it: an HTML page's text and its aria-label, title, alt and placeholder
attributes, the strings the page hands its script, and the API's JSON messages. What is marked as
code (<code>, <pre>, <kbd>, <samp>) or as another language (lang="en": the language switch's
"English") is not Chinese text. Names written as they are in code are kept too: anything with a
digit, an underscore, a dot, a slash or an inner hyphen (GOOGLE_API_KEY, X-Session-Token,
docs/OPERATIONS.md, SHA-256, gemini-2.5-flash). Any other run of Latin letters must be one of
ALLOWED_WORDS.
"""

import json
import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from tests.support.factories import make_session

pytestmark = pytest.mark.django_db

# Latin words a Taiwanese reader expects in Chinese text, and why.
ALLOWED_WORDS = {
    "API",  # 「API 文件」: written so in Taiwan
    "JSON",  # a file format's name (「匯出（JSON）」)
    "YAML",  # the same: the API's schema (「下載 OpenAPI 結構描述（YAML）」)
    "OpenAPI",  # the API description standard's name, as its Chinese users write it
    "PDF",  # the same: a resume file's kind (「傳送 PDF」)
    "Word",  # the word processor's name (「Word 檔（.docx）」)
    "Markdown",  # a text format's name
    "Gemini",  # the model's name
    "Google",  # the provider's name
    "AI",  # 「AI」, as Taiwanese press and software write it
    "HTTP",  # the protocol's name, in 「HTTP 狀態碼」
    "HTTPS",  # the same
    "UTC",  # the time zone the admin's times are in
    "JavaScript",  # the <noscript> note: the language's name
    "ADK",  # Google's Agent Development Kit, a library's name (an erasure's trigger, in the admin)
    "PostgreSQL",  # the database's name (the admin's disk and retention pages, on PostgreSQL)
    "SQLite",  # the same, on SQLite
    "WAL",  # PostgreSQL's write-ahead log, as its operators and its Chinese manuals name it
    "KB",  # sizes, as Taiwan writes them (Django's filesizeformat)
    "MB",
    "GB",
    "TB",
}
# HTTP's method names, written as the protocol spells them (DRF's 405: 「方法 "PUT" 不被允許」).
HTTP_METHODS = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE"}
# A placeholder the script or the catalogue fills in: not text.
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|\{\w+\}")
ZH = "zh-TW,zh;q=0.9"
NOT_CHINESE_TEXT = {"code", "pre", "kbd", "samp", "script", "style"}
READ_ATTRIBUTES = {"aria-label", "title", "alt", "placeholder"}
LATIN = re.compile(r"[A-Za-z0-9]*[A-Za-z][A-Za-z0-9]*(?:[-_./][A-Za-z0-9]+)*")
CODE_NAME = re.compile(r".*(?:[0-9_./]|[A-Za-z]-[A-Za-z]).*")
# Elements with no end tag: never on the stack of what is open.
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class _ReadText(HTMLParser):
    """The texts a person reads on an HTML page, without code and other languages."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: list[str] = []
        self._open: list[bool] = []  # for each open element: is its content left out?
        self._json_block: str | None = None

    def _skipping(self) -> bool:
        return any(self._open)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        lang = attributes.get("lang")
        skip = tag in NOT_CHINESE_TEXT or (lang is not None and not lang.startswith("zh"))
        if not self._skipping() and not skip:
            self.texts.extend(value for name, value in attrs if name in READ_ATTRIBUTES and value)
        if tag == "script" and attributes.get("id") == "page-strings":
            self._json_block = ""
        if tag not in VOID:
            self._open.append(skip)

    def handle_endtag(self, tag):
        if tag == "script" and self._json_block is not None:
            self.texts.extend(json.loads(self._json_block).values())  # what the script shows
            self._json_block = None
        if tag not in VOID and self._open:
            self._open.pop()

    def handle_data(self, data):
        if self._json_block is not None:
            self._json_block += data
        elif not self._skipping():
            self.texts.append(data)


def read_text(html: str) -> list[str]:
    parser = _ReadText()
    parser.feed(html)
    parser.close()
    return parser.texts


def english_words(texts) -> list[str]:
    """The Latin words in `texts` that are neither allowed nor a name from code."""
    words = (match.group() for text in texts for match in LATIN.finditer(PLACEHOLDER.sub(" ", text)))
    return sorted(
        {word for word in words if word not in ALLOWED_WORDS | HTTP_METHODS and not CODE_NAME.fullmatch(word)}
    )


def test_the_check_finds_english_and_lets_code_names_and_the_allowed_words_through():
    html = (
        '<p>開始一個 session，用你的 token</p><p title="刪除 id">API 文件：<code>python -m verify</code></p>'
        '<button lang="en">English</button><p>設定 GOOGLE_API_KEY 與 X-Session-Token（見 docs/API.md）</p>'
        '<img src="x.svg" alt="False"><p>最多 %(max)s 字元</p>'
    )
    assert english_words(read_text(html)) == ["False", "id", "session", "token"]


def _page_texts(client) -> list[str]:
    response = client.get("/", HTTP_ACCEPT_LANGUAGE=ZH)
    assert response.status_code == 200 and response["Content-Language"] == "zh-hant"
    return read_text(response.content.decode())


def test_the_chinese_page_has_no_english_word_but_the_allowed_ones(client):
    assert english_words(_page_texts(client)) == []


def test_the_chinese_not_found_page_has_no_english_word(client):
    response = client.get("/no-such-page", HTTP_ACCEPT_LANGUAGE=ZH, HTTP_ACCEPT="text/html")
    assert response.status_code == 404
    assert english_words(read_text(response.content.decode())) == []


def test_the_chinese_api_docs_have_no_english_word_but_the_schemas_own_texts(client):
    # The schema's summaries and descriptions are written in English and marked lang="en" (the page
    # says so); everything of the page's own is Chinese.
    response = client.get(reverse("docs"), HTTP_ACCEPT_LANGUAGE=ZH)
    assert response.status_code == 200
    texts = read_text(response.content.decode())
    assert any("互動試用 API" in text for text in texts)
    assert english_words(texts) == []


@pytest.fixture
def operator(client, django_user_model):
    # A name in Chinese: the admin shows it (「歡迎，林管理員」), and a name is not wording.
    user = django_user_model.objects.create_superuser("林管理員", password="unused-in-tests")
    client.force_login(user)
    return client


def _admin_pages() -> list[str]:
    """Our admin's pages (the index names django-axes's too, in our catalogue's words: config/apps.py)."""
    session = make_session(events=2)
    # Not here: Django's own user and group pages, which show permissions by the English names Django
    # stores for them and a boolean's icon whose alternative text is "True", and django-axes's lists,
    # whose rows and some columns it names in English in code (docs/WEB_PAGE.md, "Language").
    return [
        reverse("admin:index"),
        reverse("admin:sessions_app_agentsession_changelist"),
        reverse("admin:sessions_app_agentsession_change", args=[session.pk]),
        reverse("admin:sessions_app_agentsession_purge"),
        reverse("admin:sessions_app_agentsession_policy"),
        reverse("admin:sessions_app_deletionaudit_changelist"),
        reverse("admin:sessions_app_deletionlogcheckpoint_changelist"),
    ]


def test_the_chinese_admin_has_no_english_word_but_the_allowed_ones(operator):
    found = {}
    for url in _admin_pages():
        response = operator.get(url, HTTP_ACCEPT_LANGUAGE=ZH)
        assert response.status_code == 200, url
        words = english_words(read_text(response.content.decode()))
        if words:
            found[url] = words
    assert found == {}


def test_the_chinese_admin_login_has_no_english_word(client):
    response = client.get(reverse("admin:login"), HTTP_ACCEPT_LANGUAGE=ZH)
    assert english_words(read_text(response.content.decode())) == []


def _api_messages(api, new_session, settings) -> dict[str, list[str]]:
    session_id, token = new_session()
    url = f"/agent/sessions/{session_id}"
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {"session_create": "1/hour"}}
    answers = {
        "415": api.post("/agent/sessions", "x", content_type="text/plain"),
        "400 invalid JSON": api.post("/agent/sessions", "{bad", content_type="application/json"),
        "400 nested": api.post("/agent/sessions", "[" * 100 + "]" * 100, content_type="application/json"),
        "400 missing field": api.post("/agent/sessions", {}, format="json"),
        "400 blank": api.post("/agent/sessions", {"resume_text": "  "}, format="json"),
        "400 NUL": api.post("/agent/sessions", {"resume_text": "a\x00"}, format="json"),
        "400 too long": api.post("/agent/sessions", {"resume_text": "a" * 50_001}, format="json"),
        "400 not a string": api.post("/agent/sessions", {"resume_text": 5}, format="json"),
        "401": api.get(url),
        "404": api.get(url, HTTP_X_SESSION_TOKEN="x" * 43),
        "404 elsewhere": api.get("/no-such-path"),
        "405": api.put(url, {}, format="json", HTTP_X_SESSION_TOKEN=token),
        "406": api.get(url, HTTP_X_SESSION_TOKEN=token, HTTP_ACCEPT="image/png"),
        "429": api.post("/agent/sessions", {"resume_text": "Lin"}, format="json"),
    }
    texts = {}
    for case, response in answers.items():
        assert 400 <= response.status_code < 500, case
        assert response["Content-Language"] == "zh-hant", case
        texts[case] = _strings(json.loads(response.content))
    return texts


def _strings(body) -> list[str]:
    if isinstance(body, dict):
        return [text for key, value in body.items() if key != "code" for text in _strings(value)]
    if isinstance(body, list):
        return [text for value in body for text in _strings(value)]
    return [body] if isinstance(body, str) else []


def test_the_apis_chinese_messages_have_no_english_word_but_the_allowed_ones(api, new_session, settings):
    found = {case: english_words(texts) for case, texts in _api_messages(api, new_session, settings).items()}
    assert {case: words for case, words in found.items() if words} == {}
