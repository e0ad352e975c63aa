"""The person's web page at /: one server-rendered template, one static script.

The page itself holds nothing personal. Its script talks to the same REST API
as every other client (fetch() with the X-Session-Token header, never a token
in a URL), so who may see a session and the one 404 are the API's. It sets no
cookie: no CSRF token (the API reads no cookie and takes no CSRF token), no
Django session. The language is the request's (LocaleMiddleware: the language cookie
that the page's switch makes Django's set_language set, else Accept-Language);
every string the script shows is translated here and handed over in a JSON
data block, so the script holds no text of its own.
"""

from django.conf import settings
from django.http import HttpResponse
from django.template.defaultfilters import filesizeformat
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.formats import number_format
from django.utils.translation import get_language, ngettext
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_cookie

from agent.environment import model_service
from agent.offline.model import OFFLINE_MODEL_NAME
from sessions_app import model_provider
from sessions_app.deletion_log.formats.lookup import LOOKUP_DOMAIN, OWNER_ID_PREFIX
from sessions_app.page.kept import kept_per_process
from sessions_app.security import passkeys
from sessions_app.security.tokens import TOKEN_HEADER

# Where the tab keeps the session's id and token (sessionStorage: gone with the tab).
STORAGE_KEY = "resume-agent.session"
# The file "Download as a text file" makes of the session key, in the tab.
KEY_FILE_NAME = "resume-agent-session-key.txt"
# The file "Download as a text file" makes of an account's recovery code, in the tab.
RECOVERY_CODE_FILE_NAME = "resume-agent-recovery-code.txt"


def _duration(hours: float) -> str:
    """A configured duration in words: "7 days", "36 hours"."""
    if hours >= 24 and hours % 24 == 0:
        days = int(hours // 24)
        return ngettext("%(count)d day", "%(count)d days", days) % {"count": days}
    whole = int(hours) if hours == int(hours) else hours
    return ngettext("%(count)s hour", "%(count)s hours", whole) % {"count": whole}


def _script_strings() -> dict[str, str]:
    """Every text the script shows, in the request's language; %(name)s is filled in by the script."""
    return {
        "chars": _("%(count)s / %(max)s characters"),
        "starting": _("Starting your session…"),
        "opening": _("Opening the session…"),
        "sending": _("The agent is answering…"),
        "exporting": _("Preparing the download…"),
        "exported": _("Downloaded %(filename)s."),
        "deleting": _("Deleting…"),
        "no_receipt": _("The receipt could not be fetched now; it stays available at %(url)s."),
        "receipt_searching": _("Looking for the deletion receipt…"),
        "receipt_not_found": _(
            "No deletion receipt for this key: the session has not been erased, or this is not the key you saved."
        ),
        "receipt_needs_secure_page": _(
            "This browser computes the receipt's address only on a page served over HTTPS. Use the command line"
            " instead (see the API documentation, “Deletion receipts”)."
        ),
        "maybe_erased": _(
            "If this session was deleted or has expired, “Look for its deletion receipt” finds its receipt."
        ),
        "copied": _("Copied."),
        "copy_reply": _("Copy the reply"),
        "copy_plan": _("Copy the plan"),
        "copy_text_failed": _("Could not copy: select the text and copy it yourself."),
        "key_stored": _("Handed to this browser's password manager: save it there if the browser asks."),
        "key_store_failed": _("The password manager did not take the key: copy it or download it instead."),
        "key_file": _(
            "The key to your session with the resume agent at %(address)s. It is the only key to the session:"
            " keep this file somewhere safe, or put the key in a password manager and delete the file."
        ),
        "copy_failed": _("Could not copy: select the key and copy it yourself."),
        "closed": _("Closed in this tab. The session stays on the server until it expires; open it with its key."),
        "stopped": _("Stopped. Nothing of this turn was saved; your message is back in the box."),
        "reply_announcement": _("The agent replied: %(reply)s"),
        "you": _("You"),
        "agent": _("Agent"),
        "checks": _("Claims checked against your resume"),
        "no_checks": _("No claims to check in this reply."),
        "supported": _("Supported by your resume"),
        "unsupported": _("Not supported by your resume"),
        "evidence": _("Evidence: %(evidence)s"),
        "tool_calls": _("Tool calls (%(count)s)"),
        "model": _("Model: %(model)s"),
        "offline_model": _("the offline demo model"),
        "expires": _(
            "Expires at %(time)s (in %(remaining)s), extended by each message, at most %(max_age)s after the start."
        ),
        "max_age": _duration(settings.AGENT_SESSION_MAX_AGE_HOURS),
        "remaining_hours": _("%(hours)s h %(minutes)s min"),
        "remaining_minutes": _("%(minutes)s min"),
        "remaining_less": _("less than a minute"),
        "no_plan": _("No plan yet: ask the agent to draft one."),
        "plan_version": _("Version %(version)s, saved %(time)s"),
        "earlier_versions": _("Earlier versions (%(count)s)"),
        "flag_line": _("Line %(line)s"),
        "file_chosen": _("%(name)s will be read when the session starts (the text box is not used)."),
        "reading_file": _("Reading your file and starting your session…"),
        "document_summary": _("Pages: %(pages)s · characters: %(characters)s · lines on each page: %(lines)s"),
        "hidden_line": _("Line %(line)s, page %(page)s, %(reason)s:"),
        "flag_screen": _("found by the screen when the session started"),
        "flag_model": _("flagged by the agent"),
        "error_status": _("Something went wrong (HTTP %(status)s). Please try again."),
        **_account_strings(),
        "network_error": _("The server could not be reached. Check your connection and try again."),
    }


def _account_strings() -> dict[str, str]:
    """The optional account's texts (docs/ACCOUNTS.md), for the script."""
    return {
        "account_waiting_passkey": _("Waiting for your passkey…"),
        "account_passkey_cancelled": _("The passkey was not used. Nothing changed."),
        "account_passkey_failed": _("This browser could not use a passkey here. Nothing changed."),
        "account_created": _("Account created and signed in. Save the recovery code now: it is shown once."),
        "account_signed_in": _("Signed in."),
        "account_signed_out": _("Signed out. The sessions stay in your account."),
        "account_summary": _("Signed in. Sessions in your account: %(count)s."),
        "account_session_line": _("Messages: %(turns)s."),
        "account_session_started": _("Started %(time)s."),
        "account_session_active": _("Last activity %(time)s."),
        "account_session_expires": _("Expires %(time)s."),
        "account_open": _("Open"),
        "account_let_go": _("Remove from my account"),
        "account_let_go_done": _("Removed from your account. The session itself stays, for whoever has its key."),
        "account_kept": _("Kept in your account: open it from any device where you sign in."),
        "account_no_key": _("This browser has no key to lock the session with: sign in with your recovery code first."),
        "account_cannot_open": _(
            "This browser has no key that opens this session: sign in with your recovery code to open it."
        ),
        "account_deleted": _(
            "Account deleted: %(sessions)s sessions erased for good, and %(passkeys)s passkeys. Remove the passkey"
            " from your device's passkey list too."
        ),
        "account_code_file": _(
            "The recovery code of your account with the resume agent at %(address)s. It opens the sessions in your"
            " account where your passkey cannot: keep this file somewhere safe, or put the code in a password"
            " manager and delete the file."
        ),
    }


@require_safe
@vary_on_cookie  # the language cookie picks the page's language, as Accept-Language does
async def session_page(request):
    # On the server's loop, no hop to a request thread and back: the page is ready-made (below).
    return HttpResponse(rendered_page(get_language(), model_service()))


@kept_per_process
def rendered_page(language: str, service: str) -> str:
    """The page as everyone reading `language` gets it from a server whose turns go to `service`:
    rendered once a process (its ~170 translated strings cost 6 ms of CPU a request, queued behind
    the turns at 128 clients: benchmarks/results/issue43_round3.md). It holds nothing of a request:
    no cookie, token or nonce."""
    provider = model_provider.configured()
    context = {
        "resume_max_chars": settings.RESUME_MAX_CHARS,
        "resume_max_text": number_format(settings.RESUME_MAX_CHARS, force_grouping=True),
        "message_max_chars": settings.MESSAGE_MAX_CHARS,
        "upload_max_text": filesizeformat(settings.UPLOAD_MAX_BYTES),
        "message_max_text": number_format(settings.MESSAGE_MAX_CHARS, force_grouping=True),
        "token_header": TOKEN_HEADER,
        # Who else receives what is pasted here: said next to the resume box, before pasting.
        "model_provider": provider,
        "offline_model": not provider.leaves_server,
        "script_config": {
            "sessionsUrl": reverse("session-create"),
            # The receipt's address, LOOKUP replaced by the receipt lookup the script computes.
            "receiptUrl": reverse("deletion-receipt", args=["LOOKUP"]),
            "ownerIdPrefix": OWNER_ID_PREFIX,
            "receiptLookupDomain": LOOKUP_DOMAIN.decode("ascii"),
            "tokenHeader": TOKEN_HEADER,
            "storageKey": STORAGE_KEY,
            # The key's text file: named by no session, as the export is (issue 39).
            "keyFileName": KEY_FILE_NAME,
            "resumeMaxChars": settings.RESUME_MAX_CHARS,
            "uploadMaxBytes": settings.UPLOAD_MAX_BYTES,
            "messageMaxChars": settings.MESSAGE_MAX_CHARS,
            "offlineModel": OFFLINE_MODEL_NAME,
            "account": {
                "url": reverse("account"),
                "tokenHeader": passkeys.ACCOUNT_TOKEN_HEADER,
                "prfInput": passkeys.PRF_INPUT,
                "wrapInfo": passkeys.WRAP_INFO,
                "recoveryVerifierInfo": passkeys.RECOVERY_VERIFIER_INFO,
                "codeFileName": RECOVERY_CODE_FILE_NAME,
            },
        },
        "script_strings": _script_strings(),
    }
    return render_to_string("page/index.html", context)
