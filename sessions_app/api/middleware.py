"""No cache may keep an answer of the session API.

Create answers with the token, export with everything stored, the other
endpoints with metadata or the conversation; errors too carry state. A
middleware covers every answer under the prefix, whichever layer made it
(views, DRF's error handling, the URL resolver's 404, Django's 500).

Only `no-store`: Django's `never_cache` would add an `Expires` date, which
would make the uniform 404's headers differ with the clock.
"""

from django.utils.cache import patch_cache_control

API_PREFIX = "/agent/"


def forbid_storing(response):
    patch_cache_control(response, no_store=True)
    return response


class NoStoreForSessionAPI:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if request.path_info.startswith(API_PREFIX):
            forbid_storing(response)
        return response
