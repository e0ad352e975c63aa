"""DRF's own messages that our API can answer with and that DRF's Traditional Chinese catalogue
leaves in English. Named here so that `makemessages` puts them in our catalogue (locale/, which
Django searches before DRF's), where they are translated like our own strings."""

from django.utils.translation import gettext_noop

DRF_MESSAGES = [
    gettext_noop('Unsupported media type "{media_type}" in request.'),  # 415
    gettext_noop("Could not satisfy the request Accept header."),  # 406
    gettext_noop("Not a valid string."),  # 400, a field
    gettext_noop("Malformed request."),  # 400
    gettext_noop("Authentication credentials were not provided."),  # 401
    gettext_noop("A server error occurred."),  # 500
]
