"""The deletion log, one package: its one writer and its reads (`store`), the public reads
(`views`), the admin's page (`admin`), the signing key (`key`), the whole-log check
(`verification`), and the formats with their offline verifier (`formats/`, the standard library
and `cryptography` only: `python -m sessions_app.deletion_log.formats.verify`). Nothing is
imported here, so the verifier loads no Django."""
