"""Offline-runnable evaluations of the resume agent (see evals/injection.py)."""
