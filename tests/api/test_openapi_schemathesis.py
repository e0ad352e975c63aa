"""The OpenAPI schema tells the truth: schemathesis runs every phase and check against the app.

In process (the project's WSGI application, no network). The stateless phases
(examples, coverage, fuzzing) use a real session and its token, given as fixed
parameter values; the stateful phase gets none and must follow the schema's
links from POST /agent/sessions (the new session's id and token).

Every check is on. The token is a required header parameter, not an
authentication scheme (settings.SPECTACULAR_SETTINGS says why): a missing
token is checked by `missing_required_header` (the coverage phase sends
requests without it and expects the declared 401), and a wrong one gets the
declared 404 like any other miss.
"""

import hypothesis
import pytest
import schemathesis
from django.conf import settings

pytestmark = pytest.mark.django_db(transaction=True)

SEED = 20260101
MAX_EXAMPLES = 25  # per operation and phase
# 25 before POST /agent/sessions also took files (issue 46): a random file makes no session, and at 35
# one run in two still ended before an export had succeeded.
STATEFUL_SCENARIOS = 45
STATEFUL_STEPS = 8
PHASES = ("examples", "coverage", "fuzzing", "stateful")
OPERATIONS = {
    "POST /agent/sessions",
    "GET /agent/sessions/{session_id}",
    "DELETE /agent/sessions/{session_id}",
    "GET /agent/sessions/{session_id}/messages",
    "POST /agent/sessions/{session_id}/messages",
    "GET /agent/sessions/{session_id}/export",
    "GET /agent/sessions/{session_id}/plan",
    # The deletion log's public reads: no session, no token (the links do not lead there).
    "GET /deletions/{lookup}",
    "GET /deletions/checkpoint",
    "GET /deletions/consistency",
    "GET /.well-known/deletion-log-key",
    # The probes: public, never throttled (sessions_app/api/health.py).
    "GET /healthz",
    "GET /readyz",
    # The passkey accounts (docs/ACCOUNTS.md): registering and signing in need no account; the rest
    # take the known account's token (its ceremonies' answers are fuzzed: refused, never a 500).
    "POST /agent/account/registration/options",
    "POST /agent/account/registration",
    "POST /agent/account/sign-in/options",
    "POST /agent/account/sign-in",
    "POST /agent/account/recovery-sign-in",
    "POST /agent/account/sign-out",
    "GET /agent/account",
    "DELETE /agent/account",
    "GET /agent/account/sessions",
    "POST /agent/account/sessions",
    "GET /agent/account/sessions/{session_id}",
    "DELETE /agent/account/sessions/{session_id}",
    "POST /agent/account/passkeys/options",
    "POST /agent/account/passkeys",
    "DELETE /agent/account/passkeys/{passkey_id}",
}
ACCOUNT_OPERATIONS = {
    label
    for label in OPERATIONS
    if label.split()[1].startswith("/agent/account")
    and not label.split()[1].startswith(("/agent/account/registration", "/agent/account/sign-in"))
    and not label.endswith("/recovery-sign-in")
}
SESSION_OPERATIONS = {label for label in OPERATIONS if "{session_id}" in label and label not in ACCOUNT_OPERATIONS}
# Fictional; each test's database gets this session afresh (see known_session).
KNOWN_SESSION_ID = "5f0c2a3e-8d1b-4c7a-9e6f-2b3d4a5c6e7f"
KNOWN_TOKEN = "fixture-token-for-the-schemathesis-tests-only"
KNOWN_ACCOUNT_TOKEN = "fixture-account-token-for-the-schemathesis-tests-only"


# What schemathesis expects schema-valid data to get (its default for positive_data_acceptance).
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]


def _config(phases: tuple[str, ...], **project) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "suppress-health-check": ["all"],
            "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
            "phases": {
                **{name: {"enabled": name in phases} for name in PHASES},
                "examples": {"enabled": "examples" in phases, "fill-missing": True},
            },
            # A resume file the schema allows (any bytes) may still be one no reader can make sense of:
            # its 415 and 422 are the declared answers to such a file (docs/UPLOADS.md), not a refusal of
            # valid data. Every other operation keeps schemathesis's expectation.
            "operations": [
                {
                    "include-name": "POST /agent/sessions",
                    "checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "415", "422"]}},
                }
            ],
            **project,
        }
    )


def _load(config: schemathesis.Config):
    from config.wsgi import application

    return schemathesis.openapi.from_wsgi("/api/schema/", application, config=config)


def _set_rates(settings, **rates):
    current = settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": {**current, **rates}}


@pytest.fixture
def many_sessions_allowed(settings):
    # The fuzzer creates sessions and sends messages by the dozen; a throttled one would only test the 429.
    _set_rates(
        settings,
        **dict.fromkeys(
            ("session_create", "session_message", "client_message", "session_delete", "session_export"), "100000/min"
        ),
    )


@pytest.fixture(autouse=True)
def purge_on_time():
    """/readyz answers 200 (its 503s: tests/api/test_health.py): the purge schedule the migration made,
    which the transactional tests flush, due soon."""
    import datetime as dt

    from django.utils import timezone

    from tests.support.factories import make_purge_schedule

    make_purge_schedule(timezone.now() + dt.timedelta(minutes=5))


@pytest.fixture(autouse=True)
def known_session(many_sessions_allowed):
    """The session the stateless phases use: its id and token are fixed when tests are collected."""
    from asgiref.sync import async_to_sync

    from agent import APP_NAME
    from sessions_app.adk.service import DjangoSessionService
    from sessions_app.security.crypto import token_context
    from sessions_app.security.tokens import owner_id_for
    from tests.support.privacy import fixture_resume

    with token_context(KNOWN_TOKEN):
        async_to_sync(DjangoSessionService().create_session)(
            app_name=APP_NAME,
            user_id=owner_id_for(KNOWN_TOKEN),
            session_id=KNOWN_SESSION_ID,
            state={"resume_text": fixture_resume(), "plan_versions": [], "suspicious_flags": []},
        )
    known_account()


def known_account():
    """An account signed in with KNOWN_ACCOUNT_TOKEN, keeping the known session (wrapped: opaque bytes)."""
    import datetime as dt

    from django.utils import timezone

    from sessions_app.account_services import digest
    from sessions_app.models import Account, AccountSession, AccountSignIn, AgentSession, WrappedSessionToken

    account = Account.objects.create()
    expires_at = timezone.now() + dt.timedelta(hours=1)
    AccountSignIn.objects.create(account=account, token_hash=digest(KNOWN_ACCOUNT_TOKEN), expires_at=expires_at)
    entry = AccountSession.objects.create(account=account, agent_session=AgentSession.objects.get())
    WrappedSessionToken.objects.create(entry=entry, salt=bytes(32), wrapped=bytes(60))


schema = _load(
    _config(
        ("examples", "coverage", "fuzzing"),
        parameters={
            "path.session_id": KNOWN_SESSION_ID,
            "header.X-Session-Token": KNOWN_TOKEN,
            "header.X-Account-Token": KNOWN_ACCOUNT_TOKEN,
        },
    )
)


@schema.parametrize()
def test_every_answer_matches_the_schema(case):
    case.call_and_validate()


@pytest.mark.slow
def test_a_created_session_is_followed_through_the_links(many_sessions_allowed):
    api_schema = _load(_config(("stateful",)))
    links = api_schema.raw_schema["paths"]["/agent/sessions"]["post"]["responses"]["201"]["links"]
    assert len(links) == len(SESSION_OPERATIONS)  # every operation that names a session
    succeeded = set()

    class Workflow(api_schema.as_state_machine()):
        def after_call(self, response, case):
            super().after_call(response, case)
            if response.status_code < 300:
                succeeded.add(case.operation.label)

    Workflow.run(
        settings=hypothesis.settings(
            max_examples=STATEFUL_SCENARIOS,
            stateful_step_count=STATEFUL_STEPS,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(hypothesis.HealthCheck),
        )
    )
    # Only a created session's own id and token, which the links carry, can succeed on a session
    # (the deletion log's reads need neither; a random lookup or size is mostly a 404 there).
    assert succeeded & SESSION_OPERATIONS == SESSION_OPERATIONS


def _operations():
    return [result.ok() for result in schema.get_all_operations()]


def _edge_requests(operation):
    """Requests for the answers a fuzzer rarely provokes: (expected status, case, call kwargs)."""
    names_session = "{session_id}" in operation.path and operation.label not in ACCOUNT_OPERATIONS
    on_account = operation.label in ACCOUNT_OPERATIONS
    # A receipt's path names a session by its receipt lookup (fictional here), and takes no token.
    path_parameters = {"lookup": "0" * 64} if "{lookup}" in operation.path else {}
    has_body = operation.method.upper() == "POST"

    if "{session_id}" in operation.path:
        path_parameters = {"session_id": KNOWN_SESSION_ID}
    if "{passkey_id}" in operation.path:
        path_parameters = {"passkey_id": "1"}

    def case(session_id=KNOWN_SESSION_ID, token=KNOWN_TOKEN, headers=None):
        sent = {}
        if names_session and token:
            sent["X-Session-Token"] = token
        if on_account and token:  # `token`: the account's, for an account's operation
            sent = {"X-Account-Token": KNOWN_ACCOUNT_TOKEN, "X-Session-Token": KNOWN_TOKEN}
        return operation.Case(
            path_parameters={
                **path_parameters,
                **({"session_id": session_id} if "{session_id}" in operation.path else {}),
            },
            headers={**sent, **(headers or {})},
            **({"body": {"message" if names_session else "resume_text": "Lin Yu"}} if has_body else {}),
            **({"media_type": "application/json"} if has_body else {}),
        )

    yield 406, case(headers={"Accept": "application/xml"}), {}
    if names_session or on_account:
        yield 401, case(token=None), {}
    if "{session_id}" in operation.path:
        yield 404, case(session_id="not-a-session"), {}
    if has_body:
        as_json = {"headers": {"Content-Type": "application/json"}}
        yield 400, case(), {"data": b'{"broken', **as_json}
        yield 400, case(), {"data": b"[]", **as_json}
        yield 413, case(), {"data": b" " * (settings.API_MAX_BODY_BYTES + 1), **as_json}
        as_form = {"headers": {"Content-Type": "application/x-www-form-urlencoded"}}
        yield 415, case(), {"data": b"resume_text=Lin", **as_form}


@pytest.mark.parametrize("operation", _operations(), ids=lambda operation: operation.label)
def test_every_error_answer_is_declared(operation):
    """Status, body and headers of each error answer match the schema (the checks of the fuzzer)."""
    for status, case, kwargs in _edge_requests(operation):
        response = case.call_and_validate(**kwargs)
        assert response.status_code == status, (status, kwargs)


@pytest.mark.parametrize(
    ("path", "method", "scope", "answered"),
    [
        ("/agent/sessions", "POST", "session_create", 201),
        ("/agent/sessions/{session_id}", "DELETE", "session_delete", 204),
        ("/agent/sessions/{session_id}/export", "GET", "session_export", 200),
    ],
)
def test_the_throttled_answer_is_declared(settings, path, method, scope, answered):
    _set_rates(settings, **{scope: "1/min"})
    operation = schema[path][method]
    if method == "POST":
        case = {"body": {"resume_text": "Lin Yu"}, "media_type": "application/json"}
    else:
        case = {"path_parameters": {"session_id": KNOWN_SESSION_ID}, "headers": {"X-Session-Token": KNOWN_TOKEN}}
    statuses = [operation.Case(**case).call_and_validate().status_code for _ in range(2)]
    assert statuses == [answered, 429]


WHITESPACE = [chr(code) for code in range(0x110000) if chr(code).isspace()]
NOT_WHITESPACE = ["a", "\u200b", "\ufeff", "\x1b", "\x7f", "\u00ad", "字"]
TEXTS = [
    "",
    *WHITESPACE,
    "".join(WHITESPACE),
    *NOT_WHITESPACE,
    *(f" {text}\n" for text in NOT_WHITESPACE),
    "\x00",
    "Lin\x00Yu",
    "\x00 ",
]


@pytest.mark.parametrize("validator", ["jsonschema", "jsonschema_rs"])
def test_the_text_rules_of_the_schema_are_the_servers(api, many_sessions_allowed, validator):
    """Blank and NUL: what the schema allows is accepted, what it refuses is refused (Python and Rust regexes)."""
    import jsonschema
    import jsonschema_rs

    document = api.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    declared = document["components"]["schemas"]["CreateSessionRequest"]["properties"]["resume_text"]
    if validator == "jsonschema":
        is_valid = jsonschema.Draft4Validator(declared).is_valid
    else:
        is_valid = jsonschema_rs.validator_for(declared).is_valid
    for text in TEXTS:
        response = api.post("/agent/sessions", {"resume_text": text}, format="json")
        assert response.status_code == (201 if is_valid(text) else 400), repr(text)
