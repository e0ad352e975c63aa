"""How an environment variable says yes: the agent's model choice and the settings read flags alike."""


def is_truthy(value: str) -> bool:
    return value.strip().lower() in {"1", "true", "yes", "on"}
