"""What the kernel says of the TCP connections to a server on this machine (Linux's
/proc/net/tcp, IPv4: the servers the tests start listen on 127.0.0.1), to wait for a server's
state rather than for a fixed time: a connection accepted or not yet, bytes sent and not read.

On loopback each connection is listed twice: the server's end (its local port the server's)
and the client's (its remote port the server's).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path

ESTABLISHED, LISTEN = 0x01, 0x0A


@dataclass(frozen=True)
class End:
    local_port: int
    remote_port: int
    state: int
    unsent: int  # tx_queue: written and not yet acknowledged by the other end
    unread: int  # rx_queue: received and not yet read by the process holding this end
    inode: int  # 0 while no process holds it (a connection waiting in the listen queue)


def _ends() -> list[End]:
    ends = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        tx_queue, rx_queue = fields[4].split(":")
        ends.append(
            End(
                local_port=int(fields[1].split(":")[1], 16),
                remote_port=int(fields[2].split(":")[1], 16),
                state=int(fields[3], 16),
                unsent=int(tx_queue, 16),
                unread=int(rx_queue, 16),
                inode=int(fields[9]),
            )
        )
    return ends


def server_ends(port: int) -> list[End]:
    """The server's ends of the connections made to `port` (its listening socket left out)."""
    return [end for end in _ends() if end.local_port == port and end.state != LISTEN]


def not_yet_accepted(port: int) -> int:
    """Connections to `port` the kernel completed and the server has not accepted yet."""
    return sum(end.state == ESTABLISHED and end.inode == 0 for end in server_ends(port))


def held_by_server(port: int) -> int:
    """Connections to `port` whose server end a process still holds."""
    return sum(end.inode != 0 for end in server_ends(port))


def read_by_server(port: int, sock: socket.socket) -> bool:
    """Whether the server at `port` has read everything `sock` sent it (none left in either end's
    queue)."""
    client_port = sock.getsockname()[1]
    ends = _ends()
    client = [end for end in ends if end.local_port == client_port and end.remote_port == port]
    server = [end for end in ends if end.local_port == port and end.remote_port == client_port]
    return bool(client and server) and client[0].unsent == 0 and server[0].unread == 0
