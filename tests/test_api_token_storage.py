"""The token reaches the client once and never the database; only its derivation does.

Nor do the keys derived from it: content is sealed with them and they live in
memory for one request.
"""

import pytest

from agent import APP_NAME
from sessions_app.security.crypto import derive_key
from sessions_app.security.tokens import owner_id_for
from tests.support.privacy import find_chunks, find_markers, sealed_chunks

pytestmark = pytest.mark.django_db(transaction=True)


def test_token_and_its_keys_are_never_stored_but_the_owner_id_is(api, new_session, stored_files):
    session_id, token = new_session()
    for message in ("請幫我規劃求職", "Focus on remote roles"):
        response = api.post(
            f"/agent/sessions/{session_id}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token
        )
        assert response.status_code == 200
    assert api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).status_code == 200

    files = stored_files()
    owner_id = owner_id_for(token)
    keys = [
        derive_key(token, f"{APP_NAME}/{owner_id}/{session_id}", "session"),
        derive_key(token, f"{APP_NAME}/{owner_id}", "owner"),
    ]
    assert find_markers(files, [token]) == []
    assert find_chunks(files, keys) == []
    # The scans do find what is there: the derived owner id, and the sealed values.
    assert find_markers(files, [owner_id]) != []
    chunks = sealed_chunks()
    assert {index for _, index in find_chunks(files, chunks)} == set(range(len(chunks)))
