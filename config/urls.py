from django.contrib import admin
from django.urls import include, path
from django.views.decorators.csrf import csrf_exempt
from django.views.i18n import set_language
from drf_spectacular.views import SpectacularSwaggerView

from sessions_app.api import health, scrape
from sessions_app.api.errors import bad_request_response, not_found_response
from sessions_app.api.schema_views import SchemaView
from sessions_app.deletion_log import views as deletion_log
from sessions_app.page.api_docs import api_docs
from sessions_app.page.views import session_page

urlpatterns = [
    # The person's web page, at exactly /; a path no pattern matches gets handler404 below.
    path("", session_page, name="page"),
    # The page's language switch: Django's view, which keeps the choice in the language cookie
    # (LANGUAGE_COOKIE_* in the settings) and sends the browser back to `next`, a path of this site
    # only. Exempt from CSRF so that the page still sets no cookie until a person switches: a forged
    # switch could change nothing but the language a browser is answered in.
    path("i18n/setlang/", csrf_exempt(set_language), name="set_language"),
    path("admin/", admin.site.urls),
    path("agent/", include("sessions_app.api.urls")),
    # The deletion log: public, no token (docs/API.md, "Deletion receipts").
    path("deletions/checkpoint", deletion_log.DeletionCheckpointView.as_view(), name="deletion-checkpoint"),
    path("deletions/consistency", deletion_log.DeletionConsistencyView.as_view(), name="deletion-consistency"),
    path("deletions/<str:lookup>", deletion_log.DeletionReceiptView.as_view(), name="deletion-receipt"),
    path(".well-known/deletion-log-key", deletion_log.DeletionLogKeyView.as_view(), name="deletion-log-key"),
    # The probes (docs/OBSERVABILITY.md, "Health"): public, never throttled, never in the access log.
    path("healthz", health.HealthView.as_view(), name="healthz"),
    path("readyz", health.ReadinessView.as_view(), name="readyz"),
    # Throttled per client (the schema is built on each request); the docs pages are not: the light
    # one is built once per language and kept, Swagger UI's is 5 kB of HTML that loads the schema.
    path("api/schema/", SchemaView.as_view(), name="schema"),
    # A light page of the schema, under the page's CSP (sessions_app/page/api_docs.py), and Swagger UI,
    # linked from it, to send requests from the browser (left out of the CSP: settings, the last block).
    path("api/docs/", api_docs, name="docs"),
    path("api/docs/try/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs-try"),
    # Prometheus's, with METRICS_TOKEN only; otherwise the 404 below (sessions_app/api/scrape.py).
    path("metrics", scrape.metrics_view, name="metrics"),
]


def not_found(request, exception=None):
    # Paths no view matches: under /agent/ (e.g. /agent/sessions/<id>/) the session API's one 404,
    # elsewhere a page for a browser and JSON for a program (sessions_app/api/errors.py).
    return not_found_response(request)


handler404 = not_found


def json_bad_request(request, exception=None):
    # A request Django refuses before any view (a Host not in ALLOWED_HOSTS, a malformed one): JSON,
    # as the API's errors are, instead of Django's HTML page.
    return bad_request_response()


handler400 = json_bad_request
