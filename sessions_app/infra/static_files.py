"""WhiteNoise's middleware, callable on the server's event loop as well.

WhiteNoise 6.12's middleware is sync only. Under ASGI Django then runs it in a thread and calls
everything inside it (every view) from that thread, which waits: an awaited turn would hold a
thread for as long as the model thinks. This one is async-capable, as Django's own middleware
are: under ASGI it finds a static file in WhiteNoise's table on the loop (a dictionary lookup:
the files are listed at start-up, `autorefresh` is off outside DEBUG), serves it from a thread,
and awaits everything else. `files`, `find_file` and `serve` are WhiteNoise's own, not
documented: tests/infra/test_framework_internals.py fails when its middleware changes or turns async.
"""

from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from whitenoise.middleware import WhiteNoiseMiddleware


class AsyncCapableWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        super().__init__(get_response)
        self.async_mode = iscoroutinefunction(self.get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request):
        if self.async_mode:
            return self.__acall__(request)
        return super().__call__(request)

    async def __acall__(self, request):
        if self.autorefresh:  # DEBUG: it looks at the disk
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            return await sync_to_async(self.serve)(static_file, request)
        return await self.get_response(request)
