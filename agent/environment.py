"""What the environment says: how a variable says yes (the agent's model choice and the settings
read flags alike), and which model service the credentials choose. No Django, no ADK: the
service's start-up and its checks read this without loading the agent's stack."""

import os

# The model services a deployment can run on (`model_service`).
OFFLINE = "offline"
GEMINI_API = "gemini-api"
VERTEX_AI = "vertex-ai"


def is_truthy(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}


def model_service() -> str:
    """Where the agent's model calls go, as google-genai reads the same variables: Vertex AI
    when GOOGLE_GENAI_USE_VERTEXAI is on with a GOOGLE_CLOUD_PROJECT (or an API key: Vertex AI's
    express mode), else the Gemini API with a GOOGLE_API_KEY, else nowhere (the offline model).
    Reads whether the key is set, never its value."""
    has_key = bool(os.environ.get("GOOGLE_API_KEY", "").strip())
    has_project = bool(os.environ.get("GOOGLE_CLOUD_PROJECT", "").strip())
    if is_truthy(os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "")) and (has_project or has_key):
        return VERTEX_AI
    return GEMINI_API if has_key else OFFLINE
