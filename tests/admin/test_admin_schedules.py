"""No admin page lets staff write what the scheduler runs; the policy page changes the purge interval only.

django-q2's scheduler imports and calls a schedule's `func` with its `args`,
`kwargs` and `hook`, as the service: whoever writes those runs code that sees
every token and plaintext. So no admin URL may create a schedule or change
those fields, whoever is logged in.
"""

import itertools
import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.forms.models import model_to_dict
from django.urls import NoReverseMatch, URLPattern, URLResolver, reverse
from django.utils import timezone
from django_q.models import Failure, OrmQ, Schedule, Success, Task

from sessions_app.deletion_log import verification as log_verification
from sessions_app.retention import PURGE_TASK
from sessions_app.services import purge_interval_set
from tests.support.factories import make_purge_schedule

# The admin in English (its source language): what these tests read; tests/project/test_translations.py
# covers the Traditional Chinese.
pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("in_english")]

POLICY = reverse("admin:sessions_app_agentsession_policy")

# What an attacker posts: a schedule that runs a shell command, and the
# fields of every django-q2 admin form and action besides.
HOSTILE_FIELDS = {
    "name": "innocent",
    "func": "os.system",
    "args": "'id > owned.txt'",
    "kwargs": "{'command': 'id'}",
    "hook": "os.system",
    "schedule_type": Schedule.ONCE,
    "repeats": "5",
    "cluster": "elsewhere",
    "cron": "* * * * *",
    "intended_date_kwarg": "date",
    "next_run_0": "2020-01-01",
    "next_run_1": "00:00:00",
    "action": "resubmit_task",
    "post": "yes",
    "_save": "Save",
}


def _schedules() -> list[dict]:
    return [model_to_dict(schedule) for schedule in Schedule.objects.order_by("pk")]


def _django_q_paths(schedule: Schedule, task: Task) -> list[str]:
    """django-q2's admin pages, as they were before they were removed."""
    paths = []
    for model, pk in ((Schedule, schedule.pk), (Success, task.pk), (Failure, task.pk), (OrmQ, 1)):
        base = f"django_q/{model._meta.model_name}/"
        paths += [
            base,
            f"{base}add/",
            f"{base}{pk}/",
            f"{base}{pk}/change/",
            f"{base}{pk}/delete/",
            f"{base}{pk}/history/",
        ]
    return ["django_q/", *paths]


def _every_admin_url(values: dict[str, list[str]]) -> list[tuple[str, str]]:
    """Every URL admin.site serves, as (pattern name, path), its parameters filled from `values`."""
    found = []

    def fill(regex_or_route: str) -> list[str]:
        template = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", regex_or_route)  # re_path groups
        template = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", template)  # path converters
        template = template.lstrip("^").rstrip("$").replace("\\", "")
        names = re.findall(r"{(\w+)}", template)
        return [
            template.format(**dict(zip(names, combination, strict=True)))
            for combination in itertools.product(*(values[name] for name in names))
        ]

    def walk(patterns, prefixes):
        for entry in patterns:
            for prefix in prefixes:
                for filled in fill(str(entry.pattern)):
                    if isinstance(entry, URLResolver):
                        walk(entry.url_patterns, [prefix + filled])
                    elif isinstance(entry, URLPattern):
                        found.append((entry.name or "", prefix + filled))

    walk(admin.site.get_urls(), ["/admin/"])
    return sorted(set(found))


@pytest.fixture
def hostile_targets():
    """The purge schedule and a finished task, as an attacker would find them."""
    schedule = make_purge_schedule()
    Task.objects.create(
        id="0" * 32, name="done", func=PURGE_TASK, started=timezone.now(), stopped=timezone.now(), success=True
    )
    return schedule, Task.objects.get()


def _staff_with_every_django_q_permission(django_user_model, pk):
    user = django_user_model.objects.create_user("qstaff", password="unused-in-tests", is_staff=True, pk=pk)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="django_q"))
    assert user.has_perm("django_q.add_schedule") and user.has_perm("django_q.change_schedule")
    return user


def test_django_q_models_have_no_admin_pages():
    for model in (Schedule, OrmQ, Success, Failure, Task):
        assert not admin.site.is_registered(model), model
    for name in ("schedule_add", "schedule_change", "schedule_changelist", "success_changelist", "ormq_changelist"):
        with pytest.raises(NoReverseMatch):
            reverse(f"admin:django_q_{name}", args=[1] if name.endswith("change") else [])


@pytest.mark.slow
@pytest.mark.parametrize("who", ["superuser", "staff with every django_q permission"])
def test_no_admin_url_creates_or_changes_a_schedule(client, django_user_model, hostile_targets, who):
    schedule, task = hostile_targets
    # High pks: an object id below never names the logged-in user (a delete page could remove it).
    if who == "superuser":
        user = django_user_model.objects.create_superuser("root", password="unused-in-tests", pk=10_001)
    else:
        user = _staff_with_every_django_q_permission(django_user_model, pk=10_002)
    before, tasks_before, queued_before = (
        _schedules(),
        list(Task.objects.values_list("pk", flat=True)),
        OrmQ.objects.count(),
    )
    hostile = {**HOSTILE_FIELDS, "minutes": str(schedule.minutes), "_selected_action": [schedule.pk, task.pk]}
    urls = _every_admin_url(
        {
            "object_id": [str(schedule.pk), task.pk],
            "id": [str(schedule.pk)],  # auth user password page
            "app_label": ["django_q", "sessions_app", "auth", "axes"],
            "url": _django_q_paths(schedule, task),
            "content_type_id": [str(ContentType.objects.get_for_model(Schedule).pk)],
        }
    )
    assert len(urls) > 50  # the walk did find the admin's pages, django-q2's old paths among them

    for name, url in urls:
        if name == "logout":
            continue
        client.force_login(user)
        for response in (client.get(url), client.post(url, hostile)):
            assert response.status_code < 500, (url, response.status_code)
        if url.startswith("/admin/django_q/"):
            assert client.get(url).status_code == 404, url
            assert client.post(url, hostile).status_code == 404, url

    assert _schedules() == before
    # The one task an admin page queues: the deletion log's check, a fixed function without arguments.
    queued = Task.objects.exclude(pk__in=tasks_before).values_list("func", "args", "kwargs")
    assert all((func, args or (), kwargs or {}) == (log_verification.TASK, (), {}) for func, args, kwargs in queued)
    assert OrmQ.objects.count() == queued_before


def test_staff_with_every_django_q_permission_cannot_create_a_schedule(client, django_user_model):
    client.force_login(_staff_with_every_django_q_permission(django_user_model, pk=10_003))
    before = _schedules()
    for path in ("/admin/django_q/schedule/add/", "/admin/django_q/schedule/"):
        assert client.post(path, {**HOSTILE_FIELDS, "minutes": "1"}).status_code == 404
    # Nor through the policy page: it needs the sessions' permissions, and writes only an interval.
    assert client.post(POLICY, {**HOSTILE_FIELDS, "minutes": "1"}).status_code == 403
    assert _schedules() == before
    assert not Schedule.objects.filter(func="os.system").exists()


# --- the purge interval on the policy page -------------------------------------------


@pytest.fixture
def operator(client, django_user_model):
    """Staff who may view and erase sessions: the operator role."""
    user = django_user_model.objects.create_user("operator", password="unused-in-tests", is_staff=True)
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label="sessions_app", codename__in=["view_agentsession", "delete_agentsession"]
        )
    )
    client.force_login(user)
    return client


def test_interval_form_changes_only_the_minutes(operator):
    schedule = make_purge_schedule()
    page = operator.get(POLICY)
    assert page.status_code == 200
    assert 'id="purge-interval"' in page.content.decode() and page.context["interval_form"]["minutes"].value() == 15
    before = model_to_dict(schedule)

    done = operator.post(POLICY, {**HOSTILE_FIELDS, "minutes": "60"}, follow=True)
    assert done.redirect_chain[-1][0] == POLICY
    assert [(m.message, m.level_tag) for m in done.context["messages"]] == [
        ("The purge now runs every 60 min.", "success")
    ]
    assert "every 60 min" in done.content.decode()
    after = model_to_dict(Schedule.objects.get(pk=schedule.pk))
    assert after == {**before, "minutes": 60}
    assert Schedule.objects.count() == 1


@pytest.mark.parametrize("minutes", ["0", "1441", "-5", "abc", "", "1.5"])
def test_interval_outside_bounds_is_refused_with_a_message(operator, minutes):
    schedule = make_purge_schedule()
    response = operator.post(POLICY, {"minutes": minutes})
    assert response.status_code == 200
    assert response.context["interval_form"].errors["minutes"]
    assert 'class="errorlist' in response.content.decode()
    assert Schedule.objects.get(pk=schedule.pk).minutes == 15


@pytest.mark.parametrize("minutes", [1, 1440])
def test_interval_bounds_are_accepted(operator, minutes):
    schedule = make_purge_schedule()
    assert operator.post(POLICY, {"minutes": str(minutes)}).status_code == 302
    assert Schedule.objects.get(pk=schedule.pk).minutes == minutes


def test_viewers_see_the_interval_but_cannot_change_it(client, django_user_model):
    schedule = make_purge_schedule()
    viewer = django_user_model.objects.create_user("viewer", password="unused-in-tests", is_staff=True)
    viewer.user_permissions.set(Permission.objects.filter(codename="view_agentsession"))
    client.force_login(viewer)
    page = client.get(POLICY)
    assert page.status_code == 200 and "every 15 min" in page.content.decode()
    assert 'id="purge-interval"' not in page.content.decode()
    assert client.post(POLICY, {"minutes": "60"}).status_code == 403
    assert Schedule.objects.get(pk=schedule.pk).minutes == 15


def test_changing_the_interval_without_a_schedule_says_so(operator):
    Schedule.objects.filter(func=PURGE_TASK).delete()
    assert 'id="purge-interval"' not in operator.get(POLICY).content.decode()
    done = operator.post(POLICY, {"minutes": "30"}, follow=True)
    assert [(m.message, m.level_tag) for m in done.context["messages"]] == [
        ("There is no purge schedule to change.", "warning")
    ]
    assert not Schedule.objects.exists()


def test_a_purge_schedule_that_is_not_every_n_minutes_keeps_its_timing(operator):
    # Set to daily outside the admin: minutes mean nothing to it, and the page offers no interval.
    schedule = make_purge_schedule()
    Schedule.objects.filter(pk=schedule.pk).update(schedule_type=Schedule.DAILY)
    before = model_to_dict(Schedule.objects.get(pk=schedule.pk))
    assert 'id="purge-interval"' not in operator.get(POLICY).content.decode()
    done = operator.post(POLICY, {"minutes": "30"}, follow=True)  # a page left open before the change
    assert "There is no purge schedule to change." in done.content.decode()
    assert "runs every 30 min" not in done.content.decode()
    assert model_to_dict(Schedule.objects.get(pk=schedule.pk)) == before


def test_the_service_checks_the_bounds_and_touches_no_other_schedule():
    purge = make_purge_schedule()
    other = Schedule.objects.create(func="some.other.task", schedule_type=Schedule.MINUTES, minutes=5)
    for minutes in (0, 1441):
        with pytest.raises(ValueError, match=rf"^purge interval {minutes} min is outside 1\.\.1440$"):
            purge_interval_set(minutes=minutes)
    assert purge_interval_set(minutes=30) == 1
    assert Schedule.objects.get(pk=purge.pk).minutes == 30 and Schedule.objects.get(pk=other.pk).minutes == 5
