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

from sessions_app.page.kept import kept_per_process

# OpenAPI's operations in a path item, in the order the page lists them.
METHODS = ("get", "post", "put", "patch", "delete", "head", "options", "trace")


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


@require_safe
@vary_on_cookie  # the language cookie picks the page's language, as Accept-Language does
def api_docs(request):
    # A thread's view, not the loop's: the first request in a language builds the schema (0.1 s).
    return HttpResponse(rendered_docs(get_language()))


@kept_per_process
def rendered_docs(language: str) -> str:
    """The page in `language` (the active one), rendered once a process: the schema takes about 0.1 s
    of CPU to build. It holds nothing of a request."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return render_to_string("page/api_docs.html", {"info": schema["info"], "paths": _paths(schema)})
