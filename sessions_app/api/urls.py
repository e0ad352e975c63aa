from django.urls import path

from sessions_app.api import accounts, views

# <str:...>, not <uuid:...>: a malformed id must reach the view and get the
# same 404 as any other miss, not Django's own HTML 404.
urlpatterns = [
    path("sessions", views.SessionCreateView.as_view(), name="session-create"),
    path("sessions/<str:session_id>", views.SessionDetailView.as_view(), name="session-detail"),
    path("sessions/<str:session_id>/messages", views.SessionMessagesView.as_view(), name="session-messages"),
    path("sessions/<str:session_id>/export", views.SessionExportView.as_view(), name="session-export"),
    path("sessions/<str:session_id>/plan", views.SessionPlanView.as_view(), name="session-plan"),
    # Optional passkey accounts (docs/ACCOUNTS.md).
    path("account", accounts.AccountDetailView.as_view(), name="account"),
    path(
        "account/registration/options", accounts.RegistrationOptionsView.as_view(), name="account-registration-options"
    ),
    path("account/registration", accounts.RegistrationView.as_view(), name="account-registration"),
    path("account/sign-in/options", accounts.SignInOptionsView.as_view(), name="account-sign-in-options"),
    path("account/sign-in", accounts.SignInView.as_view(), name="account-sign-in"),
    path("account/recovery-sign-in", accounts.RecoverySignInView.as_view(), name="account-recovery-sign-in"),
    path("account/sign-out", accounts.SignOutView.as_view(), name="account-sign-out"),
    path("account/sessions", accounts.KeptSessionsView.as_view(), name="account-sessions"),
    path("account/sessions/<str:session_id>", accounts.KeptSessionView.as_view(), name="account-session"),
    path("account/passkeys/options", accounts.PasskeyOptionsView.as_view(), name="account-passkey-options"),
    path("account/passkeys", accounts.PasskeysView.as_view(), name="account-passkeys"),
    path("account/passkeys/<str:passkey_id>", accounts.PasskeyView.as_view(), name="account-passkey"),
]
