"""The session API. Views only translate HTTP to service calls and back."""

import contextlib
import datetime as dt

from asgiref.sync import sync_to_async
from django.urls import reverse
from django.utils.cache import patch_vary_headers
from django.utils.decorators import method_decorator
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.debug import sensitive_post_parameters, sensitive_variables
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from agent.documents.lines import Document, DocumentRefused
from sessions_app import model_provider, selectors, services
from sessions_app.api.asynchronous import AwaitingAPIView
from sessions_app.api.authentication import SessionTokenAuthentication
from sessions_app.api.errors import SessionNotFound, file_refused_response
from sessions_app.api.event_stream import JSONOrEventStream, turn_stream
from sessions_app.api.parsers import LimitedJSONParser, LimitedMultiPartParser
from sessions_app.api.schema import (
    ATTACHMENT,
    BODY_ERRORS,
    DELETION_RECEIPT,
    INSUFFICIENT_STORAGE,
    RECEIPT_HEADER,
    RETRY_AFTER,
    SERVER_BUSY,
    SESSION_ERRORS,
    SESSION_PARAMETERS,
    STREAMED_TURN,
    THROTTLED,
    json_only,
)
from sessions_app.api.serializers import (
    Conversation,
    CreateSessionErrors,
    CreateSessionRequest,
    CreateSessionResponse,
    CreateSessionUpload,
    ErrorResponse,
    FileRefusedResponse,
    MessageErrors,
    MessageRequest,
    MessageResponse,
    ModelFailureResponse,
    SessionExport,
    SessionFullResponse,
    SessionMetadata,
    SessionPlan,
    ThrottledResponse,
    TurnUnavailableResponse,
)
from sessions_app.api.throttles import (
    SESSION_DELETE_THROTTLES,
    SESSION_EXPORT_THROTTLES,
    ClientMessagePer48Throttle,
    ClientMessagePer56Throttle,
    ClientMessageThrottle,
    SessionCreatePer48Throttle,
    SessionCreatePer56Throttle,
    SessionCreateThrottle,
    SessionMessageThrottle,
)
from sessions_app.deletion_log.formats.lookup import receipt_lookup
from sessions_app.infra.client_address import client_ip
from sessions_app.security.crypto import token_context
from sessions_app.security.tokens import TOKEN_HEADER
from sessions_app.turns import service as turns
from sessions_app.turns.runner import process_runner

# Debug error pages must not show what people send us: posted fields, and the
# local variables of every frame that holds a resume, a message or a token.
hide_posted_text = method_decorator(sensitive_post_parameters("resume_text", "message", "file"), name="dispatch")
hide_locals = sensitive_variables()


def document_answer(document: Document) -> dict:
    """What was read from a file, for the page to show before the first message."""
    hidden = [
        {"line": number, "page": line.page, "reason": line.hidden, "text": line.text}
        for number, line in enumerate(document.lines, start=1)
        if line.hidden
    ]
    notice = None
    if hidden:
        notice = ngettext(
            "This file holds %(count)d line you cannot see; here it is.",
            "This file holds %(count)d lines you cannot see; here they are.",
            len(hidden),
        ) % {"count": len(hidden)}
    return {
        "kind": document.kind,
        "pages": document.pages,
        "characters": len(document.text),
        "lines_per_page": document.lines_per_page(),
        "text": document.text,
        "hidden_lines": hidden,
        "hidden_notice": notice,
    }


@hide_posted_text
class SessionCreateView(AwaitingAPIView):
    authentication_classes = []
    permission_classes = []
    throttle_classes = [SessionCreateThrottle, SessionCreatePer56Throttle, SessionCreatePer48Throttle]
    parser_classes = [LimitedJSONParser, LimitedMultiPartParser]

    @extend_schema(
        request={"application/json": CreateSessionRequest, "multipart/form-data": CreateSessionUpload},
        examples=[
            OpenApiExample(
                "A resume",
                value={"resume_text": "Chen Mei-Ling\nExperience\n- Data Analyst, Harbor Logistics (2020-2024)"},
                request_only=True,
                media_type="application/json",
            )
        ],
        parameters=[RETRY_AFTER],
        responses={
            201: CreateSessionResponse,
            400: OpenApiResponse(CreateSessionErrors, description="Invalid input"),
            **BODY_ERRORS,
            413: OpenApiResponse(
                ErrorResponse,
                description="The body is larger than API_MAX_BODY_BYTES, or, for a file, UPLOAD_MAX_BYTES",
            ),
            415: OpenApiResponse(
                FileRefusedResponse,
                description="The body is neither JSON nor a form, or the file is of a kind not read"
                " (`code` file_unsupported)",
            ),
            422: OpenApiResponse(
                FileRefusedResponse,
                description="The file could not be read (encrypted, damaged, no text, too many pages, too large or"
                " too slow to read, its text too long): `code` says which; nothing was saved",
            ),
            429: THROTTLED,
            503: SERVER_BUSY,
            507: INSUFFICIENT_STORAGE,
        },
        summary="Start a session with a resume (pasted text, or a file); returns the session token once",
    )
    @hide_locals
    async def post(self, request):
        document = None
        if request.content_type.startswith("multipart/form-data"):
            data, file_name = await sync_to_async(self.uploaded_file)()
            try:
                # Off the request's thread: a hostile file may take the read's whole wall bound, and
                # Django runs every synchronous view of this process on that one thread.
                document = await sync_to_async(services.document_read, thread_sensitive=False)(
                    data=data, file_name=file_name
                )
                created = await sync_to_async(services.session_create_from_document)(document=document)
            except DocumentRefused as refused:
                return file_refused_response(refused.code)
        else:
            created = await sync_to_async(self.pasted_text_session)()
        body = {
            "session_id": created.session_id,
            "token": created.token,
            "expires_at": created.expires_at,
            "model_provider": model_provider.configured().answer(),
        }
        if document is not None:
            body["document"] = document_answer(document)
        return Response(CreateSessionResponse(body).data, status=status.HTTP_201_CREATED)

    @hide_locals
    def uploaded_file(self) -> tuple[bytes, str]:
        upload = CreateSessionUpload(data=self.request.data, context={"files": self.request.FILES})
        upload.is_valid(raise_exception=True)
        return upload.validated_data["file"].read(), upload.validated_data["file"].name or ""

    @hide_locals
    def pasted_text_session(self) -> services.NewSession:
        payload = CreateSessionRequest(data=self.request.data)
        payload.is_valid(raise_exception=True)
        return services.session_create(resume_text=payload.validated_data["resume_text"])


class OwnedSessionView(APIView):
    """Base for every view that names a session: the token's owner, or one 404.

    The whole request runs in `token_context(token)`: the token derives the
    session's key (encryption at rest), for this request only.
    """

    authentication_classes = [SessionTokenAuthentication]
    permission_classes = []

    @staticmethod
    def token_scope(request):
        token = request.headers.get(TOKEN_HEADER)
        # Without a token the authentication answers 401.
        return contextlib.nullcontext() if token is None else token_context(token)

    @hide_locals
    def dispatch(self, request, *args, **kwargs):
        with self.token_scope(request):
            return super().dispatch(request, *args, **kwargs)

    def owned_session(self, session_id: str):
        session = selectors.owned_live_session(session_id, self.request.user.owner_id)
        if session is None:
            raise SessionNotFound
        return session

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if response.status_code == status.HTTP_404_NOT_FOUND:
            # `Allow` lists the view's methods; the 404 must look the same everywhere.
            del response["Allow"]
        return response


class SessionDetailView(OwnedSessionView):
    throttle_classes = SESSION_DELETE_THROTTLES

    def get_throttles(self):
        # Only a DELETE is counted. A refused one is refused before the view runs: nothing changes.
        return super().get_throttles() if self.request.method == "DELETE" else []

    @extend_schema(
        parameters=SESSION_PARAMETERS, responses={200: SessionMetadata, **SESSION_ERRORS}, summary="Session metadata"
    )
    def get(self, request, session_id):
        session = self.owned_session(session_id)
        return Response(SessionMetadata(selectors.session_metadata(session)).data)

    @extend_schema(
        parameters=[*SESSION_PARAMETERS, DELETION_RECEIPT],
        responses={204: None, **SESSION_ERRORS, 429: THROTTLED},
        summary="Delete the session for good; the answer says where its receipt is",
    )
    def delete(self, request, session_id):
        receipt = services.session_delete(session_id=session_id, owner_id=request.user.owner_id)
        if receipt is None:
            raise SessionNotFound
        response = Response(status=status.HTTP_204_NO_CONTENT)
        response[RECEIPT_HEADER] = reverse("deletion-receipt", args=[receipt])
        return response


def receipt_path(owner_id: str, session_id: str) -> str:
    """Where the receipt of the session's erasure is (or will be): no token needed to read it, and
    only the token's holder can compute it (sessions_app.deletion_log.formats.lookup)."""
    return reverse("deletion-receipt", args=[receipt_lookup(owner_id, session_id)])


def export_file_name(today: dt.date) -> str:
    """The export's file name: the day only, never the session id (it would name the person's
    session in every downloads folder, file listing and shared screen)."""
    return f"resume-session-{today.isoformat()}.json"


# What sending a message answers as JSON (every answer but the stream).
MESSAGE_ANSWERS = {
    200: MessageResponse,
    400: OpenApiResponse(MessageErrors, description="Invalid input"),
    **SESSION_ERRORS,
    **BODY_ERRORS,
    409: OpenApiResponse(
        SessionFullResponse,
        description="Another turn on this session is running, or the session is full"
        " (`code`: session_turn_limit, session_size_limit)",
    ),
    429: OpenApiResponse(
        ThrottledResponse,
        description="Too many requests (a rate limit), or this client already has as many turns in flight as it"
        " may (`code`: turns_in_flight); see Retry-After",
    ),
    422: OpenApiResponse(
        ModelFailureResponse,
        description="The model declined to answer (`model_blocked`): nothing was saved; rephrase and resend",
    ),
    502: OpenApiResponse(
        ModelFailureResponse,
        description="The model gave a bad, cut-off or empty answer, or called tools too often: nothing saved",
    ),
    503: OpenApiResponse(
        TurnUnavailableResponse,
        description="The model is unavailable, or this server runs as many turns as it may (`busy`); see Retry-After",
    ),
    504: OpenApiResponse(ModelFailureResponse, description="The model timed out"),
}


@hide_posted_text
class SessionMessagesView(AwaitingAPIView, OwnedSessionView):
    """A turn awaits the model on the server's event loop: no thread is held while it thinks
    (api/asynchronous.py), so a server process holds AGENT_MAX_TURNS_IN_FLIGHT turns at once."""

    throttle_classes = [
        ClientMessageThrottle,
        ClientMessagePer56Throttle,
        ClientMessagePer48Throttle,
        SessionMessageThrottle,
    ]
    content_negotiation_class = JSONOrEventStream

    @hide_locals
    async def dispatch(self, request, *args, **kwargs):
        with self.token_scope(request):
            return await super().dispatch(request, *args, **kwargs)

    def get_throttles(self):
        # Only sending a message runs the model; reading the conversation is not counted.
        return super().get_throttles() if self.request.method == "POST" else []

    @extend_schema(
        parameters=SESSION_PARAMETERS,
        responses={200: Conversation, **SESSION_ERRORS},
        summary="The conversation so far",
    )
    async def get(self, request, session_id):
        return await sync_to_async(self.conversation)(session_id)

    def conversation(self, session_id):
        session = self.owned_session(session_id)
        body = {"session_id": session.session_id, "messages": selectors.session_conversation(session)}
        return Response(Conversation(body).data)

    @extend_schema(
        request=MessageRequest,
        examples=[OpenApiExample("A message", value={"message": "Please draft my job-search plan"}, request_only=True)],
        parameters=SESSION_PARAMETERS,
        responses={**json_only(MESSAGE_ANSWERS), (200, "text/event-stream"): STREAMED_TURN},
        summary="Send a message; the agent answers (as one JSON answer, or streamed with Accept: text/event-stream)",
    )
    @hide_locals
    async def post(self, request, session_id):
        slot, message = await sync_to_async(self.turn)(session_id)
        if self.get_content_negotiator().asks_for_stream(request):
            response = turn_stream(await slot.take(), message)
        else:
            async with slot:
                result = await turns.run(slot, message)  # the model thinks: no thread waits for it
            response = Response(MessageResponse(result).data)
        # Only a turn's answer depends on Accept (JSON or a stream); its errors are JSON whatever it says.
        patch_vary_headers(response, ["Accept"])
        return response

    @hide_locals
    def turn(self, session_id) -> tuple[turns.TurnSlot, str]:
        """The owned session's turn, not yet taken, and the message (404 before 400)."""
        session = self.owned_session(session_id)
        payload = MessageRequest(data=self.request.data)
        payload.is_valid(raise_exception=True)
        slot = turns.turn_slot(process_runner(), session, client=client_ip(self.request))
        return slot, payload.validated_data["message"]


class SessionPlanView(OwnedSessionView):
    @extend_schema(
        parameters=SESSION_PARAMETERS,
        responses={200: SessionPlan, **SESSION_ERRORS},
        summary="The current plan and its kept versions (reading saves no version)",
    )
    def get(self, request, session_id):
        session = self.owned_session(session_id)
        return Response(SessionPlan(selectors.session_plan(session)).data)


# The export's size follows from the session limits (docs/API.md, "Limits").
EXPORT_BOUND = (
    "Everything stored about the session, as a JSON attachment. Its size is bounded: a session takes at most"
    " AGENT_SESSION_MAX_TURNS turns (default 50), and no turn starts once the session stores AGENT_SESSION_MAX_BYTES"
    " (default 5 MiB, sealed). The export holds the state once and each event's text twice (in `events` and"
    " in `conversation`), so it is at most about twice the stored bytes: about 10.5 MB with the defaults, plus"
    " twice the last turn. A 50-turn session of 4,000-character messages with a 50,000-character resume"
    " exports under 2 MB (benchmarks/results/session_limits.md)."
)


class SessionExportView(OwnedSessionView):
    throttle_classes = SESSION_EXPORT_THROTTLES

    @extend_schema(
        parameters=[*SESSION_PARAMETERS, ATTACHMENT],
        responses={200: SessionExport, **SESSION_ERRORS, 429: THROTTLED},
        summary="Everything stored about the session, as a JSON attachment",
        description=EXPORT_BOUND,
    )
    @hide_locals
    def get(self, request, session_id):
        session = self.owned_session(session_id)
        exported = selectors.session_export(session)
        exported["deletion_receipt"] = {
            "url": receipt_path(request.user.owner_id, session.session_id),
            "about": _(
                "When this session is erased (by you, or when it expires), the service signs a receipt of the"
                " erasure and keeps it at this address. The address comes from your session key: the session"
                " id alone does not lead to it. The receipt proves the erasure was recorded and never"
                " rewritten; it holds none of the content."
            ),
        }
        response = Response(SessionExport(exported).data)
        today = dt.datetime.now(dt.UTC).date()
        response["Content-Disposition"] = f'attachment; filename="{export_file_name(today)}"'
        return response
