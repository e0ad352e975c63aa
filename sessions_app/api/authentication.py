"""The session token as a DRF authentication class.

It only says *who asks* (the owner id derived from the token); whether that
owner may see a session is decided by the one lookup in `selectors`.
"""

from django.utils.translation import gettext_lazy as _
from django.views.decorators.debug import sensitive_variables
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from sessions_app import account_selectors
from sessions_app.security.passkeys import ACCOUNT_TOKEN_HEADER
from sessions_app.security.tokens import TOKEN_HEADER, owner_id_for


class SessionOwner:
    """The caller: whoever holds a token. Not a Django user."""

    is_authenticated = True

    def __init__(self, owner_id: str):
        self.owner_id = owner_id


class SessionTokenAuthentication(BaseAuthentication):
    www_authenticate_realm = "resume-sessions"

    def authenticate(self, request):
        token = request.headers.get(TOKEN_HEADER)
        if token is None:
            raise exceptions.NotAuthenticated(_("The X-Session-Token header is required."))
        # Any value, well-formed or not, becomes an owner id: a wrong token is
        # told apart from a right one only by the session lookup.
        return SessionOwner(owner_id_for(token)), None

    def authenticate_header(self, request):
        # Without a WWW-Authenticate value DRF would turn 401 into 403.
        return f'{TOKEN_HEADER} realm="{self.www_authenticate_realm}"'


class AccountHolder:
    """The caller: whoever holds a live sign-in's token (docs/ACCOUNTS.md). Not a Django user."""

    is_authenticated = True

    def __init__(self, account):
        self.account = account


class AccountTokenAuthentication(BaseAuthentication):
    """The account's bearer token, in a header of its own: a browser never adds it by itself, so
    no other site can make a signed-in request (no cookie, so nothing for CSRF to ride on)."""

    www_authenticate_realm = "resume-accounts"

    @sensitive_variables("token")
    def authenticate(self, request):
        token = request.headers.get(ACCOUNT_TOKEN_HEADER)
        if token is None:
            raise exceptions.NotAuthenticated(_("Sign in first: the X-Account-Token header is required."))
        account = account_selectors.signed_in_account(token)
        if account is None:
            raise exceptions.AuthenticationFailed(_("This sign-in has ended. Sign in again with your passkey."))
        return AccountHolder(account), token

    def authenticate_header(self, request):
        return f'{ACCOUNT_TOKEN_HEADER} realm="{self.www_authenticate_realm}"'
