"""The OpenAPI description of the session API, beyond what the serializers say.

Every answer the server can give is declared (statuses, bodies, headers), so
a generated client or a fuzzer that trusts the schema is never surprised, and
the session a client creates is linked (its id and token) to every operation
that names a session, so a client can follow it without reading prose.
"""

from django.urls import reverse
from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse

from sessions_app.api.serializers import (
    BLANK_TEXT,
    NUL_CHARACTER,
    ErrorResponse,
    ServerBusyResponse,
    StorageFullResponse,
)
from sessions_app.infra.request_id import HEADER as REQUEST_ID_HEADER
from sessions_app.infra.request_id import MAX_LENGTH as REQUEST_ID_MAX_LENGTH
from sessions_app.security.tokens import TOKEN_HEADER
from sessions_app.turns.stages import Stage


class CleanTextSchema(OpenApiSerializerFieldExtension):
    """The text rules of `CleanTextField` in JSON Schema: its length, not blank, no NUL.

    Said with `not` rather than one anchored `pattern` over the whole text:
    validators and generators (schemathesis) bound a pattern's repetitions by
    maxLength, which turns it into a regex of tens of thousands of states.
    """

    target_class = "sessions_app.api.serializers.CleanTextField"

    def map_serializer_field(self, auto_schema, direction):
        # drf-spectacular's documented way to augment its own mapping of a field (the docstring
        # of OpenApiSerializerFieldExtension), despite the underscore.
        schema = auto_schema._map_serializer_field(self.target, direction, bypass_extensions=True)
        refused = {"anyOf": [{"pattern": BLANK_TEXT}, {"pattern": NUL_CHARACTER}]}
        return {**schema, "not": refused, "description": "Some visible character; no NUL character."}


# A header parameter (settings.SPECTACULAR_SETTINGS says why it is no security
# scheme); OpenAPI links fill parameters, and the link from POST /agent/sessions fills this one.
TOKEN_PARAMETER = OpenApiParameter(
    TOKEN_HEADER,
    type=str,
    location=OpenApiParameter.HEADER,
    required=True,
    description="The token returned once by POST /agent/sessions.",
)
WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate", type=str, location=OpenApiParameter.HEADER, required=True, response=[401]
)
RETRY_AFTER = OpenApiParameter(
    "Retry-After",
    type=int,
    location=OpenApiParameter.HEADER,
    response=[429, 503],
    description="Seconds to wait before trying again, when the server can tell.",
)
ATTACHMENT = OpenApiParameter(
    "Content-Disposition",
    type=str,
    location=OpenApiParameter.HEADER,
    required=True,
    response=[200],
    description='`attachment; filename="resume-session-<UTC date, YYYY-MM-DD>.json"`: the name carries no session id.',
)
# Where an erased session's receipt is (GET /deletions/{lookup}, no token needed; the lookup is
# computed from the token, so the header says it to the token's holder alone).
RECEIPT_HEADER = "Deletion-Receipt"
DELETION_RECEIPT = OpenApiParameter(
    RECEIPT_HEADER,
    type=str,
    location=OpenApiParameter.HEADER,
    required=True,
    response=[204],
    description="The path of the erasure's receipt: /deletions/<receipt lookup>, the HMAC-SHA256 of the session id"
    ' under the owner id the token gives (docs/API.md, "Deletion receipts"): only the token\'s holder can compute it.',
)

NOT_FOUND = OpenApiResponse(
    ErrorResponse, description="Unknown, malformed, expired, deleted or not yours: one identical answer"
)
NO_TOKEN = OpenApiResponse(ErrorResponse, description="The X-Session-Token header is missing")
NOT_ACCEPTABLE = OpenApiResponse(
    ErrorResponse,
    description="The Accept header allows no application/json answer (nor text/event-stream, where a turn can stream)",
)
BODY_TOO_LARGE = OpenApiResponse(ErrorResponse, description="The body is larger than API_MAX_BODY_BYTES")
NOT_JSON = OpenApiResponse(ErrorResponse, description="The body is not application/json")
THROTTLED = OpenApiResponse(ErrorResponse, description="Too many requests; see Retry-After")
# Any operation, when the database's disk is full (sessions_app/infra/disk_space.py): never a 500.
INSUFFICIENT_STORAGE = OpenApiResponse(
    StorageFullResponse,
    description="Insufficient storage: the service is short of space (`storage_low`, new content refused before"
    " anything is written) or the database's disk is full (`storage_full`); nothing of the request was stored."
    " Deleting a session is never refused for lack of space.",
)

# Any operation, when the server's database connections are all in use (PostgreSQL's pool).
SERVER_BUSY = OpenApiResponse(
    ServerBusyResponse,
    description="Every database connection of this server is in use (`busy`): nothing was done; see Retry-After",
)

# What every operation that names a session may answer besides its own result.
SESSION_PARAMETERS = [TOKEN_PARAMETER, WWW_AUTHENTICATE, RETRY_AFTER]
SESSION_ERRORS = {401: NO_TOKEN, 404: NOT_FOUND, 406: NOT_ACCEPTABLE, 503: SERVER_BUSY, 507: INSUFFICIENT_STORAGE}
# ...and every operation that reads a JSON body.
BODY_ERRORS = {406: NOT_ACCEPTABLE, 413: BODY_TOO_LARGE, 415: NOT_JSON}


def json_only(responses: dict) -> dict:
    """`responses` declared as application/json only, for a view that can also stream: its
    errors and its other answers are JSON whatever the client accepts."""
    return {(status, "application/json"): response for status, response in responses.items()}


STREAMED_TURN = OpenApiResponse(
    OpenApiTypes.STR,
    description=(
        "With `Accept: text/event-stream`: the turn as Server-Sent Events. `progress` events while it"
        " runs (`{stage, label, count?, version?, model_call?}`: stage is one of "
        + ", ".join(Stage)
        + " (thinking with the model call's number, checking_claims with the claims' count, saving_plan with"
        " the version); label is the stage in the client's language; never the model's text), `text` events"
        " with the reply as the model writes it (`{text, model_call}`: the next piece of that model call's"
        " draft, only what passed the guards' check; a draft, its claims not yet verified), then one"
        " `reply` event with the same body as the JSON answer, sent after the turn is stored, which replaces"
        " the draft, or one `error` event (`{status, code?, detail}`, the"
        " status and body the JSON answer would have had) if the turn fails once the stream has begun:"
        " nothing of it is stored. Comment lines (`: working`) keep the connection alive. A client that"
        " hangs up mid-turn stops the turn: nothing of it is stored. Errors before the stream begins are"
        " the JSON answers below."
    ),
)


def link_created_session(result, generator, request, public):
    """POSTPROCESSING_HOOKS entry: links a new session to every operation on it.

    The 201 of POST /agent/sessions gets one OpenAPI link per operation with a
    `session_id` path parameter, filling that parameter and the token header
    from the answer's body.
    """
    paths = result.get("paths", {})
    create = paths.get(reverse("session-create"), {}).get("post")
    if create is None:  # a schema filtered to other paths
        return result
    links = {}
    for item in paths.values():
        for operation in item.values():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            names = {(p.get("in"), p.get("name")) for p in operation.get("parameters", [])}
            if ("path", "session_id") in names and ("header", TOKEN_HEADER) in names:
                links[operation["operationId"]] = {
                    "operationId": operation["operationId"],
                    "parameters": {
                        "path.session_id": "$response.body#/session_id",
                        f"header.{TOKEN_HEADER}": "$response.body#/token",
                    },
                    "description": "The session just created, with its token.",
                }
    if links:
        create["responses"]["201"]["links"] = links
    return result


# Answered before any view, whatever the operation: by the ASGI guard (sessions_app/api/asgi_guard.py)
# for a body over the server's limit or too slow to arrive, and by Django's handler400 for a request
# it refuses (a Host header not in DJANGO_ALLOWED_HOSTS).
_SERVER_REFUSALS = {
    "400": "A request refused before any view: a Host header this service does not answer to",
    "413": "The body is larger than REQUEST_MAX_BODY_BYTES (API_MAX_BODY_BYTES): refused by the server"
    " while it streams, before any of it is read or stored",
}
_BODY_TIMEOUT = "The body did not arrive whole within SERVER_BODY_TIMEOUT_SECONDS; nothing was done"


def declare_server_refusals(result, generator, request, public):
    """POSTPROCESSING_HOOKS entry: the answers of the layers in front of the views, on every
    operation (an operation's own declaration of the same status is kept)."""
    error = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            refusals = dict(_SERVER_REFUSALS, **({"408": _BODY_TIMEOUT} if "requestBody" in operation else {}))
            for status, description in refusals.items():
                operation["responses"].setdefault(status, {"content": error, "description": description})
    return result


_REQUEST_ID_HEADER = {
    "required": True,
    "schema": {"type": "string", "pattern": f"^[A-Za-z0-9._-]{{1,{REQUEST_ID_MAX_LENGTH}}}$"},
    "description": f"The request's id, as in the server's log lines: the request's own {REQUEST_ID_HEADER}"
    f" when it is 1-{REQUEST_ID_MAX_LENGTH} of A-Z a-z 0-9 . _ -, else a new random one.",
}


def declare_request_id(result, generator, request, public):
    """POSTPROCESSING_HOOKS entry, after declare_server_refusals: every answer of every operation
    carries X-Request-ID (sessions_app/infra/request_id.py, the ASGI guard for its refusals)."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            for response in operation["responses"].values():
                response.setdefault("headers", {})[REQUEST_ID_HEADER] = dict(_REQUEST_ID_HEADER)
    return result
