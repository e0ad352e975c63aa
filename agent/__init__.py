"""Resume-analysis agent on Google ADK. Entry point: `agent.agent.build_agent()`.

The package itself imports nothing: the processes that never run a turn (the `serve` supervisor,
the django-q2 cluster) need `APP_NAME` only, and ADK (about 100 MB of modules) is imported by the
modules that use it, where they are imported, so import-linter sees every edge.
"""

APP_NAME = "resume_agent"
