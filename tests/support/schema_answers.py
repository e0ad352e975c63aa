"""An answer checked against what the OpenAPI schema declares for its operation and status
(OpenAPI 3.0's `nullable` read as JSON Schema's null type)."""

from __future__ import annotations

import jsonschema


def _as_json_schema(node):
    if isinstance(node, dict):
        converted = {key: _as_json_schema(value) for key, value in node.items() if key != "nullable"}
        if node.get("nullable"):
            converted = {"anyOf": [converted, {"type": "null"}]}
        return converted
    if isinstance(node, list):
        return [_as_json_schema(item) for item in node]
    return node


def assert_declared(client, path: str, method: str, response) -> None:
    document = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    declared = document["paths"][path][method]["responses"][str(response.status_code)]
    schema = declared["content"]["application/json"]["schema"]
    root = _as_json_schema({**schema, "components": document["components"]})
    jsonschema.Draft7Validator(root).validate(response.json())
