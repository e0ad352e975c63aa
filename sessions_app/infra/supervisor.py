"""The root of the `make run` process tree once the service runs: it starts the web server
(gunicorn) and the purge scheduler (qcluster) and stops both on Ctrl-C.

On SQLite (`make run`'s database) the root is `manage.py serve` itself: it loads the whole
application once (config.asgi, the agent stack included), freezes it out of the garbage collector's
passes, and forks both children, gunicorn through its own entry point and qcluster through its
command. The eleven processes then share one copy of those pages where each of the two trees held
its own (idle PSS of the tree, benchmarks/results/memory.md).

On PostgreSQL the web workers keep a pool of connections and the scheduler must not (its forked
workers would share the pool's connections), and settings choose the pool when they load: there
`manage.py serve` checks and purges first, then becomes this program (exec, same pid), which starts
each child as a program of its own, with its own environment.

Each child gets its own process group, so the terminal's Ctrl-C reaches only this
process, which then stops the children the way each stops cleanly: SIGINT to qcluster's
main process (SIGTERM to its whole process group deadlocks its shutdown) and SIGTERM to
gunicorn's master.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Callable

# Four processes on any machine: a process's Python runs one thread at a time, and at many clients
# a worker's requests waited for its interpreter while a core had time to spare. On 2 cores,
# 128 clients and a 2 s model, 4 workers carried 15-28 % more turns than 2 (A/B runs taken in
# turn, docs/SERVING.md), 3 about as many as 4; 62 MB more PSS idle.
DEFAULT_WORKERS = 4
# gunicorn's access line without the query string (%(U)s is the path alone, where %(r)s is the
# request line) and without the Referer: a token sent as `?token=` must not reach a log
# (the API refuses it, 401, but the line was written first).
ACCESS_LOG_FORMAT = '%(h)s %(l)s %(u)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s"'
# Open connections per web worker (gunicorn's --worker-connections, which its ASGI worker only
# counts: asgi_worker.py checks it); past it a new connection is closed and a warning logged.
WORKER_CONNECTIONS = "1000"
# An idle kept-alive connection's life (gunicorn's --keep-alive; its default, now said).
KEEPALIVE_SECONDS = "2"
STOP_SIGNALS = {"web": signal.SIGTERM, "scheduler": signal.SIGINT}
STOPPING = {signal.SIGINT, signal.SIGTERM}  # what stops the root, and with it both children
# PostgreSQL connections each web worker keeps in its pool (config/settings/service.py), unless the
# environment says: 4 workers x 10 leave room under PostgreSQL's default max_connections (100)
# for the scheduler and a second server's pool. Not the scheduler's: its forked workers must not
# share one.
WEB_POOL_SIZE = "10"


def web_environment() -> dict:
    """The web server's environment: this one, with a pool size where it names none."""
    return {"DATABASE_POOL_SIZE": WEB_POOL_SIZE, **os.environ}


def gunicorn_command(python: str, bind: str, workers: int = DEFAULT_WORKERS, environ=None) -> list[str]:
    """The production web server's command line (benchmarks start the same one), its bounds from
    `environ` (this process's environment unless given)."""
    environ = os.environ if environ is None else environ
    return [
        python,
        "-m",
        "gunicorn",
        "config.asgi:application",
        # gunicorn's own ASGI worker: one event loop per process, where a turn awaits the model
        # without holding a thread (sessions_app/api/asynchronous.py); the other views run in
        # Django's threads. With the bounds it lacks (sessions_app/infra/asgi_worker.py): a
        # header and a send timeout, and at most WORKER_CONNECTIONS connections, checked.
        "--worker-class",
        "sessions_app.infra.asgi_worker.BoundedASGIWorker",
        "--worker-connections",
        environ.get("SERVER_WORKER_CONNECTIONS", WORKER_CONNECTIONS),
        # Each worker's loop: uvloop (libuv) where the standard library's selector loop spent
        # a seventh of the server's CPU at 128 clients; SERVER_EVENT_LOOP=asyncio is the other
        # (benchmarks/results/issue43_inflight.md).
        "--asgi-loop",
        environ.get("SERVER_EVENT_LOOP", "uvloop"),
        # An idle kept-alive connection is closed after this long.
        "--keep-alive",
        environ.get("SERVER_KEEPALIVE_SECONDS", KEEPALIVE_SECONDS),
        "--bind",
        bind,
        "--workers",
        str(workers),
        # A listening socket per worker (SO_REUSEPORT): the kernel shares connections out among
        # the workers, where one shared socket let the first worker awake accept a burst whole.
        "--reuse-port",
        "--preload",
        "--access-logfile",
        "-",
        "--access-logformat",
        ACCESS_LOG_FORMAT,
        # Each value of the access line escaped, and no session id (sessions_app/infra/log_lines.py).
        "--logger-class",
        "sessions_app.infra.access_log.AccessLogger",
        # Its server hooks: a worker that ended is marked so in the metrics (gunicorn_hooks.py).
        "--config",
        "python:sessions_app.infra.gunicorn_hooks",
    ]


def scheduler_command(python: str) -> list[str]:
    # The checks ran in `serve` already; run here, they would import the URLconf and with
    # it the agent stack (ADK, google-genai) into a process that never runs a turn.
    return [python, "manage.py", "qcluster", "--skip-checks"]


def address_taken(bind: str) -> bool:
    """Does something listen on `bind` (host:port) already? With --reuse-port gunicorn would not
    say so: a second `make run` would share the port with the first."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed server's TIME_WAIT is no listener
        try:
            probe.bind((host, int(port)))
        except OSError:
            return True
    return False


class ForkedChild:
    """What supervise() uses of subprocess.Popen, for a child forked from this process that runs
    `main` and exits."""

    def __init__(self, main: Callable[[], None] | None = None, pid: int | None = None):
        """Forks a child that runs `main`, or (`pid`) takes over one this process's program forked
        before it exec'd this one (a process's children stay its own across exec)."""
        self.returncode = None
        self.pid = pid if main is None else os.fork()
        if main is not None and self.pid == 0:
            os.setsid()  # as Popen's start_new_session: the terminal's Ctrl-C is the root's alone
            status = 1
            try:
                main()
                status = 0
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 1
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(status)  # never back into the root's code (its loop, its atexit hooks)

    def poll(self):
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum):
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def run_gunicorn(bind: str, workers: int) -> None:
    """gunicorn's own entry point (its console script), on the command line `make run` gives it;
    with --preload its master finds config.asgi already imported."""
    from gunicorn.app.wsgiapp import run

    sys.argv = ["gunicorn", *gunicorn_command(sys.executable, bind, workers)[3:]]
    run()


def run_qcluster() -> None:
    """`manage.py qcluster`, then what the interpreter's exit would do: wait for the cluster's
    processes (its command returns once they run)."""
    from django.core.management import call_command

    call_command("qcluster", skip_checks=True)
    for child in multiprocessing.active_children():
        child.join()


def programs(python: str, bind: str, workers: int) -> dict:
    """Each child a program of its own (PostgreSQL: the web workers' pool set by their environment)."""
    return {
        "web": subprocess.Popen(gunicorn_command(python, bind, workers), env=web_environment(), start_new_session=True),
        "scheduler": subprocess.Popen(scheduler_command(python), start_new_session=True),
    }


def forks(python: str, bind: str, workers: int) -> dict:
    """Each child forked from this process, the application loaded and frozen (SQLite)."""
    return {"web": ForkedChild(lambda: run_gunicorn(bind, workers)), "scheduler": ForkedChild(run_qcluster)}


def supervise_forks(python: str, bind: str, workers: int) -> int:
    """supervise() with forked children, from a process with Django set up: the application loaded
    first, as gunicorn's --preload would (config.asgi ends in gc.freeze()), so that the web
    server's and the scheduler's processes share its pages. Then this process, which needs none
    of them any more, becomes the bare supervisor (watch_in_bare_process)."""
    import importlib

    from django.conf import settings

    importlib.import_module(settings.ASGI_APPLICATION.rpartition(".")[0])
    if address_taken(bind):
        return refuse(bind)
    return watch_in_bare_process(python, bind, forks(python, bind, workers))


def watch_in_bare_process(python: str, bind: str, children: dict) -> int:
    """Watches `children` from this program run afresh in this process (exec: same pid, so the
    children stay its own and the terminal's Ctrl-C still reaches it): the loaded application's
    pages, which only the children use now, are no longer held here too (36 -> 7 MB PSS,
    benchmarks/results/memory.md). Ctrl-C or SIGTERM during the exec is held back until the new
    program has its handlers (a blocked signal stays pending across exec)."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOPPING)
    sys.stdout.flush()
    sys.stderr.flush()
    pids = [f"{name}={child.pid}" for name, child in children.items()]
    os.execv(python, [python, "-m", "sessions_app.infra.supervisor", "--watch", bind, *pids])


def refuse(bind: str) -> int:
    print(f"{bind} is in use already (another `make run`?): not starting", file=sys.stderr, flush=True)
    return 1


def supervise(python: str, bind: str, workers: int, start=programs) -> int:
    """Starts both children as programs of their own and watches them."""
    if address_taken(bind):
        return refuse(bind)
    return watch(bind, start(python, bind, workers))


def watch(bind: str, children: dict) -> int:
    """Runs until Ctrl-C (0) or until one of the children ends on its own (1)."""
    stopping = False

    def stop(signum=None, frame=None):
        nonlocal stopping
        stopping = True

    for signum in STOPPING:
        signal.signal(signum, stop)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, STOPPING)
    print(f"serving on http://{bind} with the purge scheduler; Ctrl-C stops both", flush=True)
    while not stopping and all(child.poll() is None for child in children.values()):
        time.sleep(0.2)
    for name, child in children.items():
        if child.poll() is None:
            child.send_signal(STOP_SIGNALS[name])
    for name, child in children.items():
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            print(f"{name} did not stop in 20 s; killing it", file=sys.stderr, flush=True)
            child.kill()
            child.wait()
    return 0 if stopping else 1  # a child died on its own: say so with the exit status


if __name__ == "__main__":
    if sys.argv[1] == "--watch":  # the children forked before this program (watch_in_bare_process)
        named = (argument.partition("=") for argument in sys.argv[3:])
        sys.exit(watch(sys.argv[2], {name: ForkedChild(pid=int(pid)) for name, _, pid in named}))
    sys.exit(supervise(sys.executable, sys.argv[1], int(sys.argv[2])))
