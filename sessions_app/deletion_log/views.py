"""The deletion log's public reads: receipts, checkpoints, consistency proofs and the log's key.

No token: the log holds nothing private. An entry names a session by its receipt lookup, an HMAC
of the id that only the token's holder can compute (sessions_app.deletion_log.formats.lookup), and holds an
hour, a kind of trigger and rounded sizes; so holding a session id tells nothing about whether,
when or why it was erased. Answers are text/plain, in the formats the offline verifier
reads (`python -m sessions_app.deletion_log.formats.verify`); errors are JSON like the rest of the API, and a
receipt, checkpoint or proof that does not exist is the service's one 404 (it says nothing about
any session).
"""

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response
from rest_framework.views import APIView

from sessions_app import selectors
from sessions_app.api.errors import SessionNotFound
from sessions_app.api.schema import NOT_FOUND, RETRY_AFTER, THROTTLED, json_only
from sessions_app.api.serializers import ConsistencyErrors, ErrorResponse
from sessions_app.api.throttles import DeletionLogPer48Throttle, DeletionLogPer56Throttle, DeletionLogThrottle
from sessions_app.deletion_log import key as log_key
from sessions_app.deletion_log import store

LOOKUP = re.compile(r"[0-9a-f]{64}")
TEXT = "text/plain"
LARGEST_SIZE = 2**63 - 1  # a log's size fits a signed 64-bit column


class PlainTextRenderer(BaseRenderer):
    media_type = TEXT
    format = "txt"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data.encode(self.charset)


class LogRead(APIView):
    """A public read of the log: text on success, JSON errors whatever the client accepts."""

    authentication_classes = []
    permission_classes = []
    throttle_classes = [DeletionLogThrottle, DeletionLogPer56Throttle, DeletionLogPer48Throttle]
    renderer_classes = [PlainTextRenderer]

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if isinstance(response, Response) and not isinstance(response.data, str):
            response.accepted_renderer, response.accepted_media_type = JSONRenderer(), JSONRenderer.media_type
        if response.status_code == 404:
            del response["Allow"]  # the 404 looks the same everywhere
        return response

    @staticmethod
    def text(document: str | None) -> Response:
        if document is None:
            raise SessionNotFound
        return Response(document, content_type=f"{TEXT}; charset=utf-8")


def _text_answer(description: str) -> dict:
    return {
        (200, TEXT): OpenApiResponse(OpenApiTypes.STR, description=description),
        **json_only(
            {
                404: NOT_FOUND,
                406: OpenApiResponse(ErrorResponse, description="The Accept header allows no text/plain answer"),
                429: THROTTLED,
            }
        ),
    }


class DeletionReceiptView(LogRead):
    @extend_schema(
        parameters=[
            OpenApiParameter(
                "lookup",
                type=str,
                location=OpenApiParameter.PATH,
                description="The receipt lookup, 64 hex digits: HMAC-SHA256 of the session id under the owner id"
                ' its token gives (docs/API.md, "Deletion receipts"); the DELETE\'s Deletion-Receipt header and'
                " the export give it. The SHA-256 of the session id finds nothing.",
            ),
            RETRY_AFTER,
        ],
        responses=_text_answer(
            "The receipt of the session's erasure (a c2sp.org/tlog-proof@v1 document): the entry, its inclusion"
            " proof and the latest signed checkpoint it is proved against. Check it offline with"
            " `python -m sessions_app.deletion_log.formats.verify --key KEY --session-key-file FILE RECEIPT`"
            " (FILE holds the session key), or `--lookup LOOKUP`."
        ),
        summary="The receipt of a session's erasure (no token needed)",
    )
    def get(self, request, lookup):
        return self.text(store.receipt(lookup) if LOOKUP.fullmatch(lookup) else None)


class DeletionCheckpointView(LogRead):
    @extend_schema(
        parameters=[RETRY_AFTER],
        responses=_text_answer("The log's latest signed checkpoint (c2sp.org/tlog-checkpoint)."),
        summary="The deletion log's latest signed checkpoint",
    )
    def get(self, request):
        return self.text(store.checkpoint())


class ConsistencyQuery(serializers.Serializer):
    to = serializers.IntegerField(
        min_value=1, max_value=LARGEST_SIZE, required=False, help_text="The newer size (default: the latest)."
    )


# `from` is a Python keyword: declared beside the class body.
ConsistencyQuery._declared_fields["from"] = serializers.IntegerField(
    min_value=1, max_value=LARGEST_SIZE, help_text="The older size: a checkpoint the client saw."
)


class DeletionConsistencyView(LogRead):
    @extend_schema(
        parameters=[ConsistencyQuery, RETRY_AFTER],
        responses={
            **_text_answer(
                "The consistency proof (RFC 6962) that the log of `to` entries extends the log of `from`: one base64"
                " hash a line. Check it with"
                " `python -m sessions_app.deletion_log.formats.verify --key KEY --consistency OLDER NEWER PROOF`."
                " 404 when no checkpoint of `to` entries was signed, or `from` is larger than `to`."
            ),
            **json_only({400: OpenApiResponse(ConsistencyErrors, description="`from` or `to` is not a size")}),
        },
        summary="Prove that the deletion log only grew",
    )
    def get(self, request):
        query = ConsistencyQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        sizes = query.validated_data
        return self.text(selectors.deletion_consistency_proof(sizes["from"], sizes.get("to")))


class DeletionLogKeyView(LogRead):
    @extend_schema(
        parameters=[RETRY_AFTER],
        responses={
            (200, TEXT): OpenApiResponse(
                OpenApiTypes.STR,
                description="The log's public key, `<origin>+<key id>+<base64 key>` (a C2SP signed-note verifier key).",
            ),
            **json_only(
                {
                    406: OpenApiResponse(ErrorResponse, description="The Accept header allows no text/plain answer"),
                    429: THROTTLED,
                }
            ),
        },
        summary="The deletion log's public key",
    )
    def get(self, request):
        return self.text(log_key.verifier().vkey + "\n")
