"""The API's documentation at /api/docs/: a light page, rendered on the server from the OpenAPI schema.

Every path and method the schema names, each with its summary, its description and the status codes
it answers, under the person's page's strict Content-Security-Policy and stylesheet: no script at
all, so it loads fast on a phone (Lighthouse, tests/page/test_page_lighthouse.py). Swagger UI, a
1.6 MB script, is one link away at /api/docs/try/ for whoever wants to send requests from the
browser. The schema is drf-spectacular's, as /api/schema/ serves it; it is built once per language
and process and the page kept (it holds nothing personal and changes only with the code).
"""

from django.http import HttpResponse
from django.template.loader import render_to_string
from django.utils.translation import get_language
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_cookie
from drf_spectacular.generators import SchemaGenerator

# OpenAPI's operations in a path item, in the order the page lists them.
METHODS = ("get", "post", "put", "patch", "delete", "head", "options", "trace")

# The rendered page, by language: built on the first request in each (about 0.1 s of CPU).
_PAGES: dict[str, str] = {}


def _paths(schema: dict) -> list[dict]:
    """The schema's paths, each with its operations: method, id, summary, description, responses."""
    paths = []
    for path, item in schema["paths"].items():
        operations = [
            {
                "method": method.upper(),
                "id": operation["operationId"],
                "summary": operation.get("summary", ""),
                "description": operation.get("description", ""),
                "responses": [
                    {"status": status, "description": response.get("description", "")}
                    for status, response in sorted(operation["responses"].items(), key=lambda pair: pair[0])
                ],
            }
            for method, operation in ((method, item[method]) for method in METHODS if method in item)
        ]
        paths.append({"path": path, "operations": operations})
    return paths


def render_page() -> str:
    """The page in the active language."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    context = {"info": schema["info"], "paths": _paths(schema)}
    return render_to_string("page/api_docs.html", context)


@require_safe
@vary_on_cookie  # the language cookie picks the page's language, as Accept-Language does
def api_docs(request):
    language = get_language()
    if language not in _PAGES:
        _PAGES[language] = render_page()
    return HttpResponse(_PAGES[language])
