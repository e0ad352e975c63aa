"""The deletion log in the admin: its size, the latest checkpoint, the public key, the audit's
count beside the log's, and "verify the whole log". Read-only, hashes and counts only."""

import re

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from sessions_app import erasure, purge
from sessions_app.deletion_log import key as log_key
from sessions_app.deletion_log.formats.merkle import leaf_hash
from sessions_app.deletion_log.formats.note import Signer
from sessions_app.models import AgentSession, DeletionAudit, DeletionLogCheckpoint, DeletionLogEntry
from sessions_app.security.tokens import owner_id_for
from tests.support.factories import make_session
from tests.support.privacy import find_in_text, fixture_markers

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

LOG = reverse("admin:sessions_app_deletionlogcheckpoint_changelist")
VERIFY = reverse("admin:sessions_app_deletionlogcheckpoint_verify")
AUDITS = reverse("admin:sessions_app_deletionaudit_changelist")


@pytest.fixture(autouse=True)
def _verify_unthrottled(settings):
    """These tests press "verify" several times in a row; the throttle's own test sets it back."""
    settings.DELETION_LOG_VERIFY_INTERVAL_SECONDS = 0


def _html(response) -> str:
    assert response.status_code == 200
    return response.content.decode()


def _cell(html: str, cell_id: str) -> str:
    return re.search(rf'id="{cell_id}">([^<]*)<', html).group(1).strip()


def _erase_some(api, new_session) -> list[tuple[str, str]]:
    """Two DELETEs by their owners and a TTL purge of two expired sessions: three audit rows, four entries."""
    sessions = [new_session() for _ in range(4)]
    for session_id, token in sessions[:2]:
        assert api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token).status_code == 204
    expired = [session_id for session_id, _ in sessions[2:]]
    AgentSession.objects.filter(session_id__in=expired).update(last_activity_at=timezone.now() - timezone.timedelta(2))
    assert purge.purge_expired(trigger=DeletionAudit.Trigger.TTL).sessions == 2
    return sessions


def test_the_log_page_shows_size_checkpoint_and_key_and_the_audit_agrees(admin_client, api, new_session):
    _erase_some(api, new_session)
    html = _html(admin_client.get(LOG))
    latest = DeletionLogCheckpoint.objects.order_by("-size").first()
    assert _cell(html, "log-size") == "4" == str(DeletionLogEntry.objects.count())
    assert _cell(html, "log-root") == latest.signed.splitlines()[2]
    assert f'<pre id="log-checkpoint">{escape(latest.signed)}</pre>' in html  # the signed note, whole
    assert _cell(html, "log-key") == log_key.verifier().vkey
    assert _cell(html, "audited-sessions") == "4" and "differs from the log" not in html
    # The audit list the admin already shows counts the same sessions, row by row.
    audit_list = _html(admin_client.get(AUDITS))
    rows = re.findall(r'class="field-sessions_deleted">(\d+)<', audit_list)
    assert len(rows) == DeletionAudit.objects.count() == 3 and sum(map(int, rows)) == 4
    assert 'action="' + VERIFY + '"' in html and "csrfmiddlewaretoken" in html


def test_the_page_says_when_the_audit_and_the_log_disagree(admin_client):
    DeletionAudit.objects.create(trigger="api", sessions_deleted=1, events_deleted=0, duration_ms=1)
    html = _html(admin_client.get(LOG))
    assert (_cell(html, "log-size"), "differs from the log") == ("0", "differs from the log")
    assert "none yet" in html


def test_the_page_in_traditional_chinese(client, admin_user):
    client.force_login(admin_user)
    html = _html(client.get(LOG, HTTP_ACCEPT_LANGUAGE="zh-Hant"))
    assert "驗證整個紀錄" in html and "公開金鑰" in html and "<h1>刪除日誌</h1>" in html


@pytest.mark.django_db(transaction=True)
def test_verify_checks_the_whole_log_and_says_so(admin_client):
    for number in range(3):
        make_session(owner_id=f"anon-{number:032x}")
        with transaction.atomic():
            erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.ADMIN)
    page = admin_client.post(VERIFY, follow=True)
    assert "The deletion log verifies: 3 entries" in _html(page)
    leaf = bytes(DeletionLogEntry.objects.get(index=1).leaf)
    for trigger, problem in (
        (b"retention", "checkpoint 2 does not match the entries"),
        (b"shredded", "entry 1 is not an entry"),  # a leaf that is no entry at all: said, not a server error
    ):
        changed = leaf.replace(b'"trigger":"operator"', b'"trigger":"' + trigger + b'"')
        DeletionLogEntry.objects.filter(index=1).update(leaf=changed, leaf_hash=leaf_hash(changed))
        html = _html(admin_client.post(VERIFY, follow=True))
        assert "The deletion log does NOT verify" in html and problem in html


@pytest.mark.django_db(transaction=True)
def test_verify_after_a_key_rotation_checks_each_checkpoint_with_its_own_key(admin_client, settings):
    """docs/API.md, "The key and its rotation": checkpoints signed before a rotation verify with
    the old public key only, so the whole-log check is given it (DELETION_LOG_PREVIOUS_KEYS)."""
    old = log_key.signer()
    for number, key in enumerate((old, Signer.generate(settings.DELETION_LOG_ORIGIN))):
        settings.DELETION_LOG_SIGNING_KEY = key.skey  # the second: the rotation
        make_session(owner_id=f"anon-{number:032x}")
        with transaction.atomic():
            erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.ADMIN)
    assert log_key.verifier() != old.verifier
    # Without the old public key the first checkpoint cannot be checked: said, not passed over.
    html = _html(admin_client.post(VERIFY, follow=True))
    assert "The deletion log does NOT verify" in html and "checkpoint 1 does not verify" in html
    settings.DELETION_LOG_PREVIOUS_KEYS = f"{old.verifier.vkey}\n"
    assert "The deletion log verifies: 2 entries" in _html(admin_client.post(VERIFY, follow=True))
    assert old.verifier.vkey in _html(admin_client.get(LOG))  # shown beside the current one
    # A previous key must be a verifier key of this log: anything else stops the service's checks.
    for wrong in ("not-a-key", Signer.generate("elsewhere.example/log").verifier.vkey):
        settings.DELETION_LOG_PREVIOUS_KEYS = wrong
        [error] = log_key.check_signing_key()
        assert error.id == "sessions_app.E008" and "DELETION_LOG_PREVIOUS_KEYS" in error.msg


@pytest.mark.django_db(transaction=True)
def test_a_replaced_key_signs_nothing_after_the_current_one(admin_client, settings):
    """After a rotation, a checkpoint signed with the old key (a server left on it, or a leaked
    key) fails the whole-log check. Seen failing with the order not enforced."""
    old, new = log_key.signer(), Signer.generate(settings.DELETION_LOG_ORIGIN)
    settings.DELETION_LOG_PREVIOUS_KEYS = old.verifier.vkey
    for number, key in enumerate((old, new, old)):
        settings.DELETION_LOG_SIGNING_KEY = key.skey
        make_session(owner_id=f"anon-{number:032x}")
        with transaction.atomic():
            erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.ADMIN)
        if number == 1:  # old, then new: a rotation, in order
            assert "The deletion log verifies: 2 entries" in _html(admin_client.post(VERIFY, follow=True))
    settings.DELETION_LOG_SIGNING_KEY = new.skey
    html = _html(admin_client.post(VERIFY, follow=True))
    assert "The deletion log does NOT verify" in html
    assert "checkpoint 3 is signed with a replaced key after the current one" in html


@pytest.mark.django_db(transaction=True)
def test_the_page_says_when_another_servers_key_signed_the_latest_checkpoint(admin_client, settings):
    """Two servers given keys of their own each sign the log (docs/OPERATIONS.md asks for one key):
    the page says so where this server's keys did not sign the latest checkpoint. Seen failing with
    the check answering True always."""
    other_server = Signer.generate(settings.DELETION_LOG_ORIGIN)
    make_session(owner_id="anon-" + "1" * 32)
    with transaction.atomic():
        erasure.erase(AgentSession.objects.all(), DeletionAudit.Trigger.ADMIN)  # signed with ours
    assert 'id="log-other-key"' not in _html(admin_client.get(LOG))
    ours = log_key.signer()
    settings.DELETION_LOG_SIGNING_KEY = other_server.skey  # the page as the other server shows it
    assert 'id="log-other-key"' in _html(admin_client.get(LOG))
    settings.DELETION_LOG_PREVIOUS_KEYS = ours.verifier.vkey  # a rotation, not a second key: fine
    assert 'id="log-other-key"' not in _html(admin_client.get(LOG))


def test_verify_needs_a_post_with_csrf_and_the_permission(client, django_user_model, admin_user):
    from django.contrib.auth.models import Permission

    assert client.post(VERIFY).status_code == 302 and "/login/" in client.post(VERIFY)["Location"]
    operator = django_user_model.objects.create_user("operator", password="unused-in-tests", is_staff=True)
    operator.user_permissions.set(Permission.objects.filter(codename="view_agentsession"))
    client.force_login(operator)
    assert client.post(VERIFY).status_code == 403
    assert client.get(LOG).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    assert strict.post(VERIFY).status_code == 403  # no CSRF token
    assert strict.get(VERIFY).status_code == 302  # a GET verifies nothing: back to the page


def test_the_log_cannot_be_changed_in_the_admin(admin_client, api, new_session):
    from django.contrib import admin

    _erase_some(api, new_session)
    assert not admin.site.is_registered(DeletionLogEntry)
    assert admin_client.get(reverse("admin:sessions_app_deletionlogcheckpoint_add")).status_code == 403
    size = DeletionLogCheckpoint.objects.order_by("size").first().size
    delete_page = reverse("admin:sessions_app_deletionlogcheckpoint_delete", args=[size])
    assert admin_client.post(delete_page, {"post": "yes"}).status_code == 403
    change_page = reverse("admin:sessions_app_deletionlogcheckpoint_change", args=[size])
    assert admin_client.post(change_page, {"signed": "forged"}).status_code == 403
    html = _html(admin_client.get(LOG))
    assert 'name="action"' not in html  # no delete_selected
    assert DeletionLogCheckpoint.objects.count() == 3 and DeletionLogEntry.objects.count() == 4


def test_no_content_token_or_owner_id_on_the_log_pages(admin_client, api, new_session):
    markers = fixture_markers()
    sessions = _erase_some(api, new_session)
    tokens = [token for _, token in sessions]
    owner_ids = [owner_id_for(token) for token in tokens]
    size = DeletionLogCheckpoint.objects.order_by("size").first().size
    pages = {
        "log": admin_client.get(LOG),
        "log in Chinese": admin_client.get(LOG, HTTP_ACCEPT_LANGUAGE="zh-Hant"),
        "verified": admin_client.post(VERIFY, follow=True),
        "checkpoint": admin_client.get(reverse("admin:sessions_app_deletionlogcheckpoint_change", args=[size])),
    }
    for name, response in pages.items():
        html = _html(response)
        assert find_in_text(html, markers) == [], name
        for secret in [*tokens, *owner_ids]:
            assert secret not in html and secret[:12] not in html, name
        for session_id, _ in sessions:
            assert session_id not in html and session_id[:8] not in html, name
