"""One seat of the dealer: a client's connection, read a line at a time with deadlines and
written to in one write per wait (see :mod:`protocol.dealer`)."""

from __future__ import annotations

import math
import socket
import time
from collections import deque

from protocol.acpc_client import LineBuffer
from protocol.socket_timeouts import EXPIRED, set_receive_timeout, use_kernel_timeouts


class Seat:
    """One player's connection on a blocking socket: buffered line reads with deadlines, and an
    outbox so every line the dealer sends between two reads goes out in one write.

    The dealer only ever waits on one seat at a time (the actor), so blocking calls with
    deadlines do what an event loop would, without its per-message tasks and callbacks. The
    deadlines are kernel timeouts (:mod:`protocol.socket_timeouts`): one system call per read
    or write. Writes give up after ``send_timeout`` seconds of a full buffer (a client that
    stops reading), reads at the deadline :meth:`readline` is given."""

    def __init__(self, index: int, sock: socket.socket, send_timeout: float) -> None:
        self.index = index
        self.sock = sock
        self.buffer = LineBuffer()
        self.lines: deque[str] = deque()
        self.outbox: list[str] = []
        self.match_seconds = 0.0
        use_kernel_timeouts(sock, None, send_timeout)
        self._armed = math.inf  # the read timeout set now, in seconds (none yet: forever)

    def readline(self, timeout: float) -> str | None:
        """The next line, or None on EOF; raises TimeoutError past ``timeout`` seconds."""
        lines = self.lines
        if lines:
            return lines.popleft()
        deadline = time.monotonic() + timeout
        while not lines:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            self._arm(remaining)
            try:
                data = self.sock.recv(65536)
            except EXPIRED:
                continue  # the loop checks the deadline
            except OSError:
                return None
            if not data:
                return None
            lines.extend(self.buffer.feed(data))
        return lines.popleft()

    def _arm(self, remaining: float) -> None:
        """Set the read timeout to ``remaining`` seconds unless the one set differs by at most
        a millisecond (the binding limit is usually the same per-response one, so most reads
        need no extra system call; a read may end up to 1 ms early, and the loop goes on, or
        late, which no limit here is fine enough to notice)."""
        if abs(self._armed - remaining) > 1e-3:
            set_receive_timeout(self.sock, remaining)
            self._armed = remaining

    def flush(self) -> None:
        """Send the outbox in one write (raises an OSError if the client is gone or has not
        read for the send timeout)."""
        if self.outbox:
            data = "".join(self.outbox).encode("ascii")
            self.outbox.clear()
            self.sock.sendall(data)

    def close(self) -> None:
        self.sock.close()
