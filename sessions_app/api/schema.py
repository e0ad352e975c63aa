"""Declares the session token as an OpenAPI security scheme."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension

from ..ownership import TOKEN_HEADER


class SessionTokenScheme(OpenApiAuthenticationExtension):
    target_class = "sessions_app.api.authentication.SessionTokenAuthentication"
    name = "SessionToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": TOKEN_HEADER,
            "description": "The token returned once by POST /agent/sessions.",
        }
