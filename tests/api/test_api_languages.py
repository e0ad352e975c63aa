"""The API answers in the language the client asks for (Accept-Language): Traditional Chinese
to any Chinese, English to every other language and to no header; DRF's own messages (415, 400
field errors, 429) included."""

import json
import re

import pytest

pytestmark = pytest.mark.django_db

CJK = re.compile(r"[\u4e00-\u9fff]")
# header: answers in Chinese? (Simplified Chinese gets Traditional Chinese: docs/WEB_PAGE.md, "Language".)
LANGUAGES = {
    "en-US,en;q=0.9": False,
    "zh-TW,zh;q=0.9": True,
    "zh-CN,zh;q=0.9": True,
    "fr-FR,fr;q=0.9": False,
    "de-DE,de;q=0.9,en;q=0.5": False,
    "ja": False,
    None: False,
}


def _texts(body) -> list[str]:
    """Every string in a JSON answer (details and field errors)."""
    if isinstance(body, dict):
        return [text for value in body.values() for text in _texts(value)]
    if isinstance(body, list):
        return [text for value in body for text in _texts(value)]
    return [body] if isinstance(body, str) else []


def _answers(api, new_session) -> dict:
    session_id, token = new_session()
    url = f"/agent/sessions/{session_id}"
    return {
        "unsupported media type (415)": api.post("/agent/sessions", "x", content_type="text/plain"),
        "invalid JSON (400)": api.post("/agent/sessions", "{bad", content_type="application/json"),
        "missing field (400)": api.post("/agent/sessions", {}, format="json"),
        "empty resume (400)": api.post("/agent/sessions", {"resume_text": "  "}, format="json"),
        "no token (401)": api.get(url),
        "not found (404)": api.get(url, HTTP_X_SESSION_TOKEN="x" * 43),
        "wrong method (405)": api.put(url, {}, format="json", HTTP_X_SESSION_TOKEN=token),
    }


@pytest.mark.parametrize("accept_language", list(LANGUAGES))
def test_every_error_answers_in_the_language_asked_for(api, new_session, accept_language):
    if accept_language:
        api.defaults["HTTP_ACCEPT_LANGUAGE"] = accept_language
    else:
        del api.defaults["HTTP_ACCEPT_LANGUAGE"]
    for case, response in _answers(api, new_session).items():
        assert 400 <= response.status_code < 500, case
        texts = _texts(json.loads(response.content))
        assert texts, case
        in_chinese = [bool(CJK.search(text)) for text in texts]
        assert in_chinese == [LANGUAGES[accept_language]] * len(texts), (case, texts)
        assert "Accept-Language" in response.get("Vary", ""), case  # caches keep the languages apart
