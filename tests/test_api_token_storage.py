"""The token reaches the client once and never the database; only its derivation does."""

import pytest

from sessions_app.ownership import owner_id_for

from .privacy import database_files, find_markers

pytestmark = pytest.mark.django_db(transaction=True)


def test_token_is_never_stored_but_the_owner_id_is(api, new_session, db_path):
    session_id, token = new_session()
    for message in ("請幫我規劃求職", "Focus on remote roles"):
        response = api.post(
            f"/agent/sessions/{session_id}/messages", {"message": message}, format="json", HTTP_X_SESSION_TOKEN=token
        )
        assert response.status_code == 200
    assert api.get(f"/agent/sessions/{session_id}/export", HTTP_X_SESSION_TOKEN=token).status_code == 200

    files = database_files(db_path)
    assert find_markers(files, [token]) == []
    # The scan does find what is there: the derived owner id.
    assert find_markers(files, [owner_id_for(token)]) != []
