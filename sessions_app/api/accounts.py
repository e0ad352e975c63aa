"""The passkey accounts' API (docs/ACCOUNTS.md). Views only translate HTTP to the accounts' use
cases (sessions_app.account_services) and reads (sessions_app.account_selectors) and back.

Signed-in requests carry the account's own bearer token in X-Account-Token (never a cookie, so no
cross-site request can carry it: nothing for CSRF to ride on). Keeping a session also proves its
token, in X-Session-Token as everywhere else; the token is checked, never stored. A session the
account does not keep, or that is not live, is the one 404, byte for byte.
"""

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app import account_selectors, account_services, selectors
from sessions_app.api import account_serializers as shapes
from sessions_app.api.authentication import ACCOUNT_TOKEN_HEADER, AccountTokenAuthentication
from sessions_app.api.errors import SessionNotFound
from sessions_app.api.schema import BODY_ERRORS, INSUFFICIENT_STORAGE, NOT_FOUND, RETRY_AFTER, SERVER_BUSY, THROTTLED
from sessions_app.api.throttles import client_throttles
from sessions_app.security.tokens import TOKEN_HEADER, owner_id_for

REGISTER_THROTTLES = client_throttles("account_register")
SIGN_IN_THROTTLES = client_throttles("account_sign_in")

ACCOUNT_TOKEN = OpenApiParameter(
    ACCOUNT_TOKEN_HEADER,
    type=str,
    location=OpenApiParameter.HEADER,
    required=True,
    description="The account_token a sign-in (or registering) returned once.",
)
SESSION_TOKEN = OpenApiParameter(
    TOKEN_HEADER,
    type=str,
    location=OpenApiParameter.HEADER,
    required=True,
    description="The session's token, proving the caller holds it (checked, never stored).",
)
WWW_AUTHENTICATE = OpenApiParameter(
    "WWW-Authenticate", type=str, location=OpenApiParameter.HEADER, required=True, response=[401]
)
SESSION_ID = OpenApiParameter("session_id", type=str, location=OpenApiParameter.PATH)
PASSKEY_ID = OpenApiParameter("passkey_id", type=str, location=OpenApiParameter.PATH)

INVALID = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="Invalid input: each field's errors, or `detail` and `code` (shapes.AccountErrorResponse)",
)
REFUSED = OpenApiResponse(shapes.AccountErrorResponse, description="Refused: `code` says why")
PASSKEY_REFUSED = OpenApiResponse(
    shapes.AccountErrorResponse,
    description="The passkey's answer does not verify (origin, RP id, signature, sign count), or its challenge is"
    " unknown, used, expired or another ceremony's (`passkey_refused`): begin again",
)
RECOVERY_REFUSED = OpenApiResponse(
    shapes.AccountErrorResponse, description="No account has this recovery code (`recovery_refused`)"
)
NOT_SIGNED_IN = OpenApiResponse(shapes.AccountErrorResponse, description="No X-Account-Token, or its sign-in has ended")
NOT_ACCEPTABLE = OpenApiResponse(shapes.AccountErrorResponse, description="The Accept header allows no JSON")
COMMON = {406: NOT_ACCEPTABLE, 503: SERVER_BUSY, 507: INSUFFICIENT_STORAGE}
SIGNED_IN = {401: NOT_SIGNED_IN, **COMMON}
hide_locals = sensitive_variables()


def _valid(serializer_class, data):
    payload = serializer_class(data=data)
    payload.is_valid(raise_exception=True)
    return payload.validated_data


class PublicAccountView(APIView):
    """Registering and signing in: no account yet, counted per client address."""

    authentication_classes = []
    permission_classes = []


class AccountView(APIView):
    """Every view of a signed-in account."""

    authentication_classes = [AccountTokenAuthentication]
    permission_classes = []

    @property
    def account(self):
        return self.request.user.account

    def perform_authentication(self, request):
        # A method the view does not have is answered 405 whoever asks, not 401 first.
        method = request.method.lower()
        if method in self.http_method_names and hasattr(self, method):
            super().perform_authentication(request)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if response.status_code == status.HTTP_404_NOT_FOUND:
            del response["Allow"]  # the one 404 looks the same everywhere
        return response


def _signed_in(signed_in: account_services.SignedIn, status_code=status.HTTP_200_OK) -> Response:
    body = {"account_id": signed_in.account_id, "account_token": signed_in.token, "expires_at": signed_in.expires_at}
    return Response(shapes.SignedInResponse(body).data, status=status_code)


BEGIN = {
    "request": shapes.EmptyRequest,
    "parameters": [RETRY_AFTER],
    "responses": {200: shapes.CeremonyOptions, 400: INVALID, **BODY_ERRORS, 429: THROTTLED, **COMMON},
}


class RegistrationOptionsView(PublicAccountView):
    throttle_classes = REGISTER_THROTTLES

    @extend_schema(**BEGIN, summary="Begin registering a passkey account: options for navigator.credentials.create()")
    def post(self, request):
        _valid(shapes.EmptyRequest, request.data)
        return Response({"options": account_services.registration_begin()})


class RegistrationView(PublicAccountView):
    throttle_classes = REGISTER_THROTTLES

    @extend_schema(
        request=shapes.RegistrationRequest,
        parameters=[RETRY_AFTER],
        responses={
            201: shapes.SignedInResponse,
            400: INVALID,
            403: PASSKEY_REFUSED,
            **BODY_ERRORS,
            429: THROTTLED,
            **COMMON,
        },
        summary="Finish registering: the account is created with this passkey, and signed in",
    )
    @hide_locals
    def post(self, request):
        data = _valid(shapes.RegistrationRequest, request.data)
        signed_in = account_services.registration_finish(
            credential=data["credential"], recovery_verifier=data.get("recovery_verifier")
        )
        return _signed_in(signed_in, status.HTTP_201_CREATED)


class SignInOptionsView(PublicAccountView):
    throttle_classes = SIGN_IN_THROTTLES

    @extend_schema(**BEGIN, summary="Begin signing in: options for navigator.credentials.get()")
    def post(self, request):
        _valid(shapes.EmptyRequest, request.data)
        return Response({"options": account_services.sign_in_begin()})


SIGN_IN_ANSWERS = {200: shapes.SignedInResponse, 400: INVALID, **BODY_ERRORS, 429: THROTTLED, **COMMON}


class SignInView(PublicAccountView):
    throttle_classes = SIGN_IN_THROTTLES

    @extend_schema(
        request=shapes.SignInRequest,
        parameters=[RETRY_AFTER],
        responses={**SIGN_IN_ANSWERS, 403: PASSKEY_REFUSED},
        summary="Finish signing in with a passkey",
    )
    @hide_locals
    def post(self, request):
        data = _valid(shapes.SignInRequest, request.data)
        return _signed_in(account_services.sign_in_finish(credential=data["credential"]))


class RecoverySignInView(PublicAccountView):
    throttle_classes = SIGN_IN_THROTTLES

    @extend_schema(
        request=shapes.RecoverySignInRequest,
        parameters=[RETRY_AFTER],
        responses={**SIGN_IN_ANSWERS, 403: RECOVERY_REFUSED},
        summary="Sign in with the recovery code (the value the browser derives from it)",
    )
    @hide_locals
    def post(self, request):
        data = _valid(shapes.RecoverySignInRequest, request.data)
        return _signed_in(account_services.recovery_sign_in(recovery_verifier=data["recovery_verifier"]))


class SignOutView(AccountView):
    @extend_schema(
        request=shapes.EmptyRequest,
        parameters=[ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={204: None, 400: INVALID, **BODY_ERRORS, **SIGNED_IN},
        summary="Sign out: this sign-in's token stops working at once",
    )
    @hide_locals
    def post(self, request):
        _valid(shapes.EmptyRequest, request.data)
        account_services.sign_out(token=request.auth)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AccountDetailView(AccountView):
    @extend_schema(
        parameters=[ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={200: shapes.AccountDescription, **SIGNED_IN},
        summary="The account: its passkeys and how many live sessions it keeps",
    )
    def get(self, request):
        return Response(shapes.AccountDescription(account_selectors.account_summary(self.account)).data)

    @extend_schema(
        parameters=[ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={200: shapes.AccountErasedResponse, **SIGNED_IN},
        summary="Delete the account: every session it keeps is erased for good, then its passkeys and keys",
    )
    def delete(self, request):
        erased = account_services.account_delete(account=self.account)
        body = {
            "sessions_erased": erased.sessions,
            "events_erased": erased.events,
            "passkeys_erased": erased.passkeys,
            "session_ids": erased.session_ids,
        }
        return Response(shapes.AccountErasedResponse(body).data)


class KeptSessionsView(AccountView):
    @extend_schema(
        parameters=[ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={200: shapes.KeptSessions, **SIGNED_IN},
        summary="The live sessions the account keeps (no content: open one with its unwrapped token)",
        operation_id="agent_account_sessions_list",
    )
    def get(self, request):
        return Response(shapes.KeptSessions({"sessions": account_selectors.account_sessions(self.account)}).data)

    @extend_schema(
        request=shapes.KeepSessionRequest,
        parameters=[ACCOUNT_TOKEN, SESSION_TOKEN, WWW_AUTHENTICATE],
        responses={
            201: shapes.SessionEnvelope,
            200: shapes.SessionEnvelope,
            400: INVALID,
            404: NOT_FOUND,
            409: REFUSED,
            **BODY_ERRORS,
            **SIGNED_IN,
        },
        summary="Keep a session in the account (201), or replace its wrapped tokens for the passkeys given (200)",
    )
    @hide_locals
    def post(self, request):
        data = _valid(shapes.KeepSessionRequest, request.data)
        token = request.headers.get(TOKEN_HEADER)
        if token is None:
            raise exceptions.NotAuthenticated(_("The X-Session-Token header is required."))
        session = selectors.owned_live_session(data["session_id"], owner_id_for(token))
        if session is None:
            raise SessionNotFound
        wrappings = [account_services.Wrapping(**wrapping) for wrapping in data["wrapped_tokens"]]
        created = account_services.session_keep(account=self.account, session=session, wrappings=wrappings)
        envelope = account_selectors.session_envelope(self.account, session.session_id)
        body = {"session_id": envelope.session_id, "wrapped_tokens": envelope.wrappings}
        return Response(
            shapes.SessionEnvelope(body).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class KeptSessionView(AccountView):
    @extend_schema(
        parameters=[SESSION_ID, ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={200: shapes.SessionEnvelope, 404: NOT_FOUND, **SIGNED_IN},
        summary="A kept session's token, as the browser wrapped it for each passkey and the recovery code",
        operation_id="agent_account_session_envelope",
    )
    def get(self, request, session_id):
        envelope = account_selectors.session_envelope(self.account, session_id)
        if envelope is None:
            raise SessionNotFound
        return Response(
            shapes.SessionEnvelope({"session_id": envelope.session_id, "wrapped_tokens": envelope.wrappings}).data
        )

    @extend_schema(
        parameters=[SESSION_ID, ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={204: None, 404: NOT_FOUND, **SIGNED_IN},
        summary="Stop keeping a session in the account (the session itself stays, for its token's holder)",
    )
    def delete(self, request, session_id):
        if not account_services.session_let_go(account=self.account, session_id=session_id):
            raise SessionNotFound
        return Response(status=status.HTTP_204_NO_CONTENT)


class PasskeyOptionsView(AccountView):
    @extend_schema(
        request=shapes.EmptyRequest,
        parameters=[ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={200: shapes.CeremonyOptions, 400: INVALID, **BODY_ERRORS, **SIGNED_IN},
        summary="Begin adding a passkey to the account: options for navigator.credentials.create()",
    )
    def post(self, request):
        _valid(shapes.EmptyRequest, request.data)
        return Response({"options": account_services.passkey_add_begin(account=self.account)})


class PasskeysView(AccountView):
    @extend_schema(
        request=shapes.SignInRequest,
        parameters=[ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={201: shapes.PasskeyDescription, 400: INVALID, 403: PASSKEY_REFUSED, **BODY_ERRORS, **SIGNED_IN},
        summary="Finish adding a passkey (then wrap each kept session's token for it)",
    )
    @hide_locals
    def post(self, request):
        data = _valid(shapes.SignInRequest, request.data)
        added = account_services.passkey_add_finish(account=self.account, credential=data["credential"])
        body = {
            "id": added.pk,
            "created_at": added.created_at,
            "last_used_at": added.last_used_at,
            "transports": added.transports,
            "backup_eligible": added.backup_eligible,
            "backed_up": added.backed_up,
        }
        return Response(shapes.PasskeyDescription(body).data, status=status.HTTP_201_CREATED)


class PasskeyView(AccountView):
    @extend_schema(
        parameters=[PASSKEY_ID, ACCOUNT_TOKEN, WWW_AUTHENTICATE],
        responses={204: None, 404: NOT_FOUND, 409: REFUSED, **SIGNED_IN},
        summary="Remove a passkey, and the session tokens wrapped for it",
    )
    def delete(self, request, passkey_id):
        if not (passkey_id.isascii() and passkey_id.isdigit()) or len(passkey_id) > 18:
            raise SessionNotFound
        if not account_services.passkey_remove(account=self.account, passkey_id=int(passkey_id)):
            raise SessionNotFound
        return Response(status=status.HTTP_204_NO_CONTENT)
