"""Receipts for erasures: an append-only deletion log under an RFC 6962 Merkle tree, signed C2SP
checkpoints, and an offline verifier (`python -m sessions_app.deletion_log.formats.verify`).

Nothing here imports Django or the rest of sessions_app (an import-linter contract says so): only
the standard library and `cryptography`, so a person can check a receipt with this package alone.
"""
