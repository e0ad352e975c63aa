"""Measurement scripts; run them with `.venv/bin/python benchmarks/<name>.py`."""
