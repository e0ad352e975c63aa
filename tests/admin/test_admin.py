"""The operators' admin: session metadata, secure deletion, the purge and the policy page."""

import datetime as dt
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import formats, timezone, translation

from sessions_app import retention
from sessions_app.admin.sessions import local_time, time_left
from sessions_app.models import AgentSession, DeletionAudit, SessionEvent
from sessions_app.retention import PURGE_TASK
from tests.support.factories import make_purge_schedule, make_session
from tests.support.privacy import find_in_text, fixture_markers

# The admin in English (its source language): what these tests read; tests/project/test_translations.py
# covers the Traditional Chinese.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

HOUR = dt.timedelta(hours=1)
CHANGELIST = reverse("admin:sessions_app_agentsession_changelist")
PURGE = reverse("admin:sessions_app_agentsession_purge")
POLICY = reverse("admin:sessions_app_agentsession_policy")
AUDITS = reverse("admin:sessions_app_deletionaudit_changelist")


def _expired(**kwargs):
    return make_session(last_activity=timezone.now() - 48 * HOUR, **kwargs)


def _expiring(**kwargs):
    return make_session(last_activity=timezone.now() - 23.5 * HOUR, **kwargs)


def _html(response) -> str:
    return response.content.decode()


@pytest.fixture
def staff_client(client, django_user_model):
    """A staff user (not a superuser) with the permissions an operator is given."""
    from django.contrib.auth.models import Permission

    user = django_user_model.objects.create_user("operator", password="unused-in-tests", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="sessions_app",
            codename__in=["view_agentsession", "delete_agentsession", "view_deletionaudit"],
        )
    )
    client.force_login(user)
    return client


# --- the session list ----------------------------------------------------------


def test_staff_sees_metadata_columns_actions_and_links(staff_client):
    session = make_session(events=3)
    html = _html(staff_client.get(CHANGELIST))
    for header in ("owner", "created", "last activity", "expires at", "time left", "events", "size (bytes)"):
        assert f">{header}<" in html.lower(), header
    assert session.session_id[:8] in html and session.session_id not in html
    assert session.owner_id[:12] in html and session.owner_id not in html
    assert 'value="delete_selected_securely"' in html and "Delete selected sessions (secure)" in html
    assert 'value="delete_selected"' not in html  # Django's unaudited delete is gone
    assert f'href="{PURGE}"' in html and "Purge expired now" in html
    assert f'href="{POLICY}"' in html and "Retention policy" in html


def test_columns_are_computed_in_the_query():
    now = timezone.now()
    session = make_session(last_activity=now - 2 * HOUR, created=now - 100 * HOUR, events=2, text="林語晴")
    row = AgentSession.objects.with_usage().get(pk=session.pk)
    assert row.expires_at == retention.expires_at(session.created_at, session.last_activity_at)
    assert row.event_count == 2
    # What the session takes on disk: sealed bytes (version, nonce, ciphertext,
    # tag), and each CJK character is 3 bytes of an event's UTF-8 JSON.
    overhead = 1 + 12 + 16
    state_bytes = len(json.dumps({"resume_text": "林語晴"}).encode()) + overhead
    event_bytes = 2 * (len('{"text": "林語晴"}'.encode()) + overhead)
    assert (
        row.size_bytes
        == state_bytes + event_bytes
        == len(session.state) + 2 * len(SessionEvent.objects.filter(agent_session=session).first().event_data)
    )
    no_events = make_session(events=0)
    row = AgentSession.objects.with_usage().get(pk=no_events.pk)
    assert (row.event_count, row.size_bytes) == (0, len(no_events.state))  # the state alone, not 0, 1 or none


def test_time_left_reads_like_a_person_would_say_it():
    now = timezone.now()
    assert time_left(now + dt.timedelta(hours=5, minutes=12, seconds=30), now) == "5 h 12 min"
    assert time_left(now + dt.timedelta(days=6, hours=23, minutes=5), now) == "6 d 23 h"
    assert time_left(now + dt.timedelta(minutes=7), now) == "7 min"
    assert time_left(now, now) == "expired, awaiting purge"
    assert time_left(now + dt.timedelta(seconds=59), now) == "under 1 min"  # not "0 min"


def test_times_on_admin_pages_are_localized_and_a_missing_one_is_a_dash(settings):
    settings.TIME_ZONE = "Asia/Taipei"
    moment = dt.datetime(2026, 12, 1, 8, 0, tzinfo=dt.UTC)
    with translation.override("en"):
        assert local_time(moment) == "Dec. 1, 2026, 4 p.m."  # in the operators' time zone
    with translation.override("zh-hant"):
        assert local_time(moment) == "2026年12月1日 16:00"
    assert local_time(None) == "-"


def test_list_shows_time_left_and_expired_sessions(admin_client, settings):
    settings.AGENT_SESSION_TTL_HOURS = 24
    make_session(last_activity=timezone.now() - dt.timedelta(hours=18, minutes=47, seconds=30))
    _expired()
    html = _html(admin_client.get(CHANGELIST))
    assert "5 h 12 min" in html
    assert "expired, awaiting purge" in html


def test_changelist_query_count_does_not_grow_with_rows(admin_client):
    def queries_for_list():
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(CHANGELIST).status_code == 200
        return len(captured)

    make_session("anon-first")
    with_one = queries_for_list()
    for i in range(10):
        make_session(f"anon-more-{i}", events=3)
    assert queries_for_list() == with_one


def test_status_filters_and_search(admin_client):
    expired, expiring, live = _expired(owner_id="anon-expired"), _expiring(owner_id="anon-expiring"), make_session()

    def listed(query):
        response = admin_client.get(CHANGELIST, query)
        return {session.pk for session in response.context["cl"].result_list}

    assert listed({"status": "expired"}) == {expired.pk}
    assert listed({"status": "expiring"}) == {expiring.pk}
    assert listed({"status": "live"}) == {expiring.pk, live.pk}
    assert listed({}) == {expired.pk, expiring.pk, live.pk}
    assert listed({"q": live.session_id}) == {live.pk}
    assert listed({"q": expiring.session_id[:8]}) == {expiring.pk}
    assert listed({"q": "no-such-session"}) == set()


def test_the_status_filter_offers_its_three_choices(admin_client):
    with translation.override("en"):
        page = admin_client.get(CHANGELIST)
    (status,) = [spec for spec in page.context["cl"].filter_specs if spec.parameter_name == "status"]
    assert [(choice["display"], choice["query_string"]) for choice in status.choices(page.context["cl"])][1:] == [
        ("expired", "?status=expired"),
        ("expiring within 1 h", "?status=expiring"),
        ("live", "?status=live"),
    ]


def test_the_list_cannot_be_filtered_by_content(admin_client):
    make_session(text="needle")
    # Without the guard Django would filter on any field named in the URL:
    # a yes/no oracle on what the resumes say.
    for lookup in ("state__icontains", "state__resume_text__icontains", "events__event_data__icontains", "owner_id"):
        assert admin_client.get(CHANGELIST, {lookup: "needle"}).status_code == 400, lookup


# --- who may see it ----------------------------------------------------------------


def _admin_pages(session):
    return [CHANGELIST, PURGE, POLICY, AUDITS, reverse("admin:sessions_app_agentsession_change", args=[session.pk])]


def test_anonymous_and_non_staff_users_are_sent_to_login(client, django_user_model):
    pages = _admin_pages(make_session())
    for page in pages:
        response = client.get(page)
        assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login")), page
    client.force_login(django_user_model.objects.create_user("visitor", password="unused-in-tests"))
    for page in pages:
        response = client.get(page)
        assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login")), page
    assert client.post(PURGE).status_code == 302
    assert AgentSession.objects.count() == 1


def test_staff_without_delete_permission_can_look_but_not_erase(client, django_user_model):
    from django.contrib.auth.models import Permission

    viewer = django_user_model.objects.create_user("viewer", password="unused-in-tests", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_agentsession"))
    client.force_login(viewer)
    session = _expired()
    html = _html(client.get(CHANGELIST))
    assert "delete_selected_securely" not in html and f'href="{PURGE}"' not in html
    assert client.get(POLICY).status_code == 200
    assert client.get(PURGE).status_code == 403
    assert client.post(PURGE).status_code == 403
    client.post(CHANGELIST, {"action": "delete_selected_securely", "_selected_action": [session.pk], "post": "yes"})
    assert AgentSession.objects.filter(pk=session.pk).exists()


# --- the detail page -----------------------------------------------------------------


def test_detail_page_is_read_only_metadata(admin_client):
    session = make_session(text="state-secret-text")
    change = reverse("admin:sessions_app_agentsession_change", args=[session.pk])
    response = admin_client.get(change)
    html = _html(response)
    assert response.status_code == 200
    assert session.session_id in html and "expires at" in html.lower() and "size (bytes)" in html.lower()
    assert "state-secret-text" not in html
    assert not response.context["adminform"].form.fields  # nothing editable
    assert admin_client.post(change, {"state": "{}"}).status_code == 403
    # Django's own delete page would skip the erasure's audit: it is closed.
    delete_page = reverse("admin:sessions_app_agentsession_delete", args=[session.pk])
    assert admin_client.get(delete_page).status_code == 403
    assert admin_client.post(delete_page, {"post": "yes"}).status_code == 403
    assert admin_client.get(reverse("admin:sessions_app_agentsession_add")).status_code == 403
    assert AgentSession.objects.filter(pk=session.pk).exists()


# --- deleting ------------------------------------------------------------------------


def test_secure_delete_asks_first_then_erases_and_audits(staff_client):
    chosen = [make_session(f"anon-chosen-{i}", events=3) for i in range(2)]
    kept = make_session("anon-kept")
    selection = {"action": "delete_selected_securely", "_selected_action": [s.pk for s in chosen]}

    confirmation = staff_client.post(CHANGELIST, selection)
    assert confirmation.status_code == 200
    assert "admin/sessions_app/agentsession/delete_selected_confirmation.html" in [
        t.name for t in confirmation.templates
    ]
    html = _html(confirmation)
    assert all(s.session_id[:8] in html for s in chosen) and kept.session_id[:8] not in html
    assert AgentSession.objects.count() == 3 and not DeletionAudit.objects.exists()

    done = staff_client.post(CHANGELIST, {**selection, "post": "yes"}, follow=True)
    assert done.redirect_chain[-1][0].endswith(CHANGELIST)
    assert "Deleted 2 sessions and 6 events for good." in _html(done)
    assert list(AgentSession.objects.values_list("pk", flat=True)) == [kept.pk]
    assert not SessionEvent.objects.filter(agent_session_id__in=[s.pk for s in chosen]).exists()
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted, audit.events_deleted) == ("admin", 2, 6)


def test_erasing_sessions_already_gone_reports_none_and_audits_nothing(staff_client):
    gone = make_session("anon-gone")
    selection = {"action": "delete_selected_securely", "_selected_action": [gone.pk], "post": "yes"}
    AgentSession.objects.filter(pk=gone.pk).delete()  # erased meanwhile: another admin, the purge
    done = staff_client.post(CHANGELIST, selection, follow=True)
    assert "Deleted 0 sessions and 0 events for good." in _html(done)
    assert not DeletionAudit.objects.exists()


def test_purge_now_shows_what_would_go_then_deletes_only_expired(staff_client, settings):
    settings.PURGE_BATCH_PAUSE_SECONDS = 0
    expired = [_expired(owner_id=f"anon-old-{i}", events=2) for i in range(3)]
    expiring, live = _expiring(owner_id="anon-expiring"), make_session()

    page = staff_client.get(PURGE)
    assert page.status_code == 200
    assert "3 expired sessions with 6 events would be deleted now." in _html(page)
    assert page.context["title"] == "Purge expired sessions now?"
    assert "<h1>Purge expired sessions now?</h1>" in _html(page)
    assert 'name="csrfmiddlewaretoken"' in _html(page)  # rendered with the request, so its form posts
    assert AgentSession.objects.count() == 5 and not DeletionAudit.objects.exists()  # GET changes nothing

    done = staff_client.post(PURGE, follow=True)
    assert done.redirect_chain[-1][0].endswith(CHANGELIST)
    assert [(m.message, m.level_tag) for m in done.context["messages"]] == [
        ("Purged 3 expired sessions and 6 events.", "success")
    ]
    assert set(AgentSession.objects.values_list("pk", flat=True)) == {expiring.pk, live.pk}
    assert not SessionEvent.objects.filter(agent_session_id__in=[s.pk for s in expired]).exists()
    audit = DeletionAudit.objects.get()
    assert (audit.trigger, audit.sessions_deleted, audit.events_deleted) == ("admin", 3, 6)

    assert "0 expired sessions with 0 events" in _html(staff_client.get(PURGE))


# --- policy and audit ------------------------------------------------------------------


def test_policy_page_shows_ttl_schedule_and_runs(staff_client, settings):
    from django_q.tasks import async_task

    settings.AGENT_SESSION_TTL_HOURS, settings.AGENT_SESSION_MAX_AGE_HOURS, settings.PURGE_BATCH_SIZE = 6, 48, 150
    next_run = timezone.now().replace(microsecond=0) + dt.timedelta(minutes=9)
    make_purge_schedule(next_run)

    page = staff_client.get(POLICY)
    html = _html(page)
    assert page.context["title"] == "Retention policy" and "<h1>Retention policy</h1>" in html
    assert "6 h" in html and "48 h" in html and "150 sessions" in html
    assert "every 15 min" in html
    with translation.override(settings.LANGUAGE_CODE):  # as the page renders dates
        assert formats.date_format(timezone.localtime(next_run), "DATETIME_FORMAT") in html
    assert "/admin/django_q/" not in html  # django-q2's pages are gone; the interval form is here
    assert 'name="minutes"' in html and 'value="15"' in html
    assert "not yet" in html

    assert "whichever comes first" in html and "times are UTC" in html
    for variable in ("AGENT_SESSION_TTL_HOURS", "AGENT_SESSION_MAX_AGE_HOURS", "PURGE_BATCH_SIZE"):
        assert f"<code>{variable}</code>" in html

    make_session("anon-old", last_activity=timezone.now() - dt.timedelta(hours=7), events=3)
    async_task(PURGE_TASK)  # runs at once: Q_CLUSTER sync=True in tests
    assert "succeeded: deleted 1 sessions and 3 events" in _html(staff_client.get(POLICY))


def test_policy_page_without_a_schedule(staff_client):
    from django_q.models import Schedule

    Schedule.objects.filter(func=PURGE_TASK).delete()
    assert "only purged by hand" in _html(staff_client.get(POLICY))


def test_audit_list_is_read_only(admin_client, api, new_session):
    session_id, token = new_session()
    api.delete(f"/agent/sessions/{session_id}", HTTP_X_SESSION_TOKEN=token)
    audit = DeletionAudit.objects.get()
    response = admin_client.get(AUDITS)
    html = _html(response)
    for header in ("when", "trigger", "sessions deleted", "events deleted", "duration"):
        assert f">{header}<" in html.lower(), header
    assert f"{audit.duration_ms} ms" in html
    assert 'name="action"' not in html  # no actions, so no delete_selected
    assert admin_client.get(reverse("admin:sessions_app_deletionaudit_add")).status_code == 403
    delete_page = reverse("admin:sessions_app_deletionaudit_delete", args=[audit.pk])
    assert admin_client.post(delete_page, {"post": "yes"}).status_code == 403
    change_page = reverse("admin:sessions_app_deletionaudit_change", args=[audit.pk])
    assert admin_client.post(change_page, {"trigger": "ttl"}).status_code == 403
    assert DeletionAudit.objects.get().trigger == "api"


def test_content_models_have_no_admin_pages():
    from django.contrib import admin

    from sessions_app.models import AppState, SessionEvent, UserState

    for model in (SessionEvent, AppState, UserState):
        assert not admin.site.is_registered(model), model
    assert admin.site.is_registered(AgentSession) and admin.site.is_registered(DeletionAudit)


# --- privacy -----------------------------------------------------------------------------

# What each of our admin pages may name, by model: metadata only (times, counts, sizes, ids, the
# signed checkpoints). A name not listed here, in any list, filter, search, sort, form or read-only
# set, fails the test below until it is reviewed and added: a sealed column (the state) shown as
# bytes would pass every content scan, since its bytes are ciphertext (issue 39, finding 12).
ADMIN_ALLOWED_NAMES = {
    "sessions_app.AgentSession": {
        "short_id", "owner", "session_id", "app_name", "created", "last_activity", "expires", "time_left",
        "event_count", "size_bytes", "revision", "turn_running", "model_providers", "plan_versions",
        "last_activity_at", "status",
    },
    "sessions_app.DeletionAudit": {
        "when", "trigger", "sessions_deleted", "events_deleted", "duration", "duration_ms",
    },
    "sessions_app.DeletionLogCheckpoint": {"size", "signed", "signed_at"},
    # Passkey accounts (docs/ACCOUNTS.md): counts and dates, never an id, a key or a wrapped token.
    "sessions_app.Account": {
        "created", "last_sign_in", "passkeys", "synced_passkeys", "last_passkey_use", "sessions",
        "created_at", "last_sign_in_at",
    },
}  # fmt: skip
# Not ours, and holding no resume: Django's users and groups, django-axes' login attempts.
OTHER_APPS_ADMINS = {"auth.Group", "auth.User", "axes.AccessAttempt", "axes.AccessLog", "axes.AccessFailureLog"}


def _names_an_admin_shows(model_admin, request, obj) -> set[str]:
    """Every field or column name an admin page can show, sort, filter, search or put in a form."""
    list_display = model_admin.get_list_display(request)
    sets = [
        list_display,
        model_admin.get_list_display_links(request, list_display) or (),
        model_admin.get_sortable_by(request),
        model_admin.list_editable,
        model_admin.get_search_fields(request),
        [name.lstrip("-") for name in model_admin.get_ordering(request) or ()],
        model_admin.get_readonly_fields(request, obj),
        model_admin.get_fields(request, obj),
        [name for _, options in model_admin.get_fieldsets(request, obj) for name in options["fields"]],
        model_admin.get_form(request, obj).base_fields,
        model_admin.raw_id_fields,
        model_admin.autocomplete_fields,
        [model_admin.date_hierarchy] if model_admin.date_hierarchy else [],
    ]
    names = {name.lstrip("^=@") for names in sets for name in names if isinstance(name, str)}
    for choice in model_admin.get_list_filter(request):
        names.add(
            choice.parameter_name if isinstance(choice, type) else choice[0] if isinstance(choice, tuple) else choice
        )
    return names


def test_admin_pages_name_only_allowed_metadata(rf, admin_user):
    from django.apps import apps
    from django.contrib import admin

    request = rf.get("/")
    request.user = admin_user
    registered = {
        model._meta.label: admin.site.get_model_admin(model)
        for model in apps.get_models()
        if admin.site.is_registered(model)
    }
    assert set(registered) == set(ADMIN_ALLOWED_NAMES) | OTHER_APPS_ADMINS  # a new admin page is reviewed here
    make_session()
    audit = DeletionAudit.objects.create(trigger="api", sessions_deleted=1, events_deleted=2, duration_ms=3)
    objects = {"sessions_app.AgentSession": AgentSession.objects.first(), "sessions_app.DeletionAudit": audit}
    for label, allowed in ADMIN_ALLOWED_NAMES.items():
        for obj in (None, objects.get(label)):
            shown = _names_an_admin_shows(registered[label], request, obj)
            assert shown <= allowed, (label, obj, shown - allowed)


def test_no_resume_content_on_any_admin_page(admin_client, api, new_session, settings):
    from django_q.tasks import async_task

    markers = fixture_markers()
    session_id, token = new_session()
    turn = api.post(
        f"/agent/sessions/{session_id}/messages",
        {"message": "請幫我看看履歷"},
        format="json",
        HTTP_X_SESSION_TOKEN=token,
    )
    assert turn.status_code == 200
    # The control: the markers are in this session's data, so the scan below can fail.
    export = api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token)
    assert {marker for marker, _ in find_in_text(export.content.decode(), markers)} == set(markers)

    expired_id, _token = new_session()
    AgentSession.objects.filter(session_id=expired_id).update(last_activity_at=timezone.now() - 48 * HOUR)
    gone_id, gone_token = new_session()
    api.delete(f"/agent/sessions/{gone_id}", HTTP_X_SESSION_TOKEN=gone_token)  # an audit row
    make_purge_schedule(timezone.now() + HOUR)
    settings.AGENT_SESSION_TTL_HOURS = 10_000  # keep every session through the task run below
    async_task(PURGE_TASK)
    settings.AGENT_SESSION_TTL_HOURS = 24
    session = AgentSession.objects.get(session_id=session_id)
    expired = AgentSession.objects.get(session_id=expired_id)

    pages = {
        "index": admin_client.get(reverse("admin:index")),
        "app index": admin_client.get(reverse("admin:app_list", args=["sessions_app"])),
        "session list": admin_client.get(CHANGELIST),
        "sorted by size": admin_client.get(CHANGELIST, {"o": "8"}),
        **{f"status {s}": admin_client.get(CHANGELIST, {"status": s}) for s in ("expired", "expiring", "live")},
        "search": admin_client.get(CHANGELIST, {"q": session_id[:8]}),
        "session page": admin_client.get(reverse("admin:sessions_app_agentsession_change", args=[session.pk])),
        "session history": admin_client.get(reverse("admin:sessions_app_agentsession_history", args=[session.pk])),
        "delete confirmation": admin_client.post(
            CHANGELIST, {"action": "delete_selected_securely", "_selected_action": [session.pk, expired.pk]}
        ),
        "purge page": admin_client.get(PURGE),
        "policy page": admin_client.get(POLICY),
        "audit list": admin_client.get(AUDITS),
        "audit page": admin_client.get(
            reverse("admin:sessions_app_deletionaudit_change", args=[DeletionAudit.objects.get().pk])
        ),
        "login attempts": admin_client.get(reverse("admin:axes_accessattempt_changelist")),
    }
    for name, response in pages.items():
        assert response.status_code == 200, name
        assert find_in_text(_html(response), markers) == [], name
    # The pages did show these sessions (the scan looked at the right pages).
    assert session_id[:8] in _html(pages["session list"]) and expired_id[:8] in _html(pages["status expired"])
    assert AgentSession.objects.count() == 2
