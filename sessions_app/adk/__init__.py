"""ADK's adapters on the storage: the session service for ADK tooling and the conformance suite
(`service`), the in-memory buffer every turn runs on (`buffer`), and the one private seam of
ADK's Session they use (`marker`)."""
