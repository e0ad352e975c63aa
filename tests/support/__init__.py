"""What the tests share: clients of the API (`session_client`, `asgi_client`), the doubles of what
the service talks to (`gemini_double`, `scripted_llm`, `large_answer_app`), rows made directly
(`factories`), the browser (`browser`), waiting for a condition (`waiting`), and the privacy scans
(`privacy`, `text_work`). `dashboard_pictures` is no test's: run by hand, it makes the dashboard's
pictures in docs/ (docs/OBSERVABILITY.md)."""
