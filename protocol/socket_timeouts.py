"""Read and write timeouts kept by the kernel on a blocking socket (``SO_RCVTIMEO``,
``SO_SNDTIMEO``, socket(7)).

Python's own socket timeouts (``settimeout``) put the socket in non-blocking mode and wait in
``poll()`` before every ``recv`` and ``send``, and ``settimeout`` itself is a system call: up
to three calls per message where one does. The dealer and the client trade a few dozen short
lines per hand, so those calls were a good part of their cost. With the kernel's timeouts the
socket stays blocking and each read or write is one system call; an expired timeout ends the
call with ``EAGAIN`` (``BlockingIOError``), which :data:`EXPIRED` names for ``except``.

>>> import socket
>>> a, b = socket.socketpair()
>>> use_kernel_timeouts(a, 0.01, None)
>>> try:
...     a.recv(1)
... except EXPIRED:
...     print("expired")
expired
>>> a.close(); b.close()
"""

from __future__ import annotations

import socket
import struct
import sys

#: What a read or write raises when the kernel's timeout expires (``TimeoutError`` where a
#: platform reports it so).
EXPIRED = (BlockingIOError, TimeoutError)


def _option_value(seconds: float | None) -> bytes:
    """The option's bytes: a ``struct timeval`` (POSIX) or milliseconds (Windows); ``None``
    means no timeout, and a positive time never rounds down to 0 (which would mean none)."""
    if seconds is None:
        return struct.pack("@ll", 0, 0) if sys.platform != "win32" else struct.pack("@L", 0)
    micros = max(1, int(seconds * 1e6))
    if sys.platform == "win32":
        return struct.pack("@L", max(1, micros // 1000))
    return struct.pack("@ll", micros // 1_000_000, micros % 1_000_000)


def use_kernel_timeouts(
    sock: socket.socket, receive: float | None, send: float | None
) -> None:
    """Make ``sock`` blocking, with reads that give up after ``receive`` seconds and writes
    after ``send`` seconds of a full buffer (None: never)."""
    sock.settimeout(None)
    set_receive_timeout(sock, receive)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, _option_value(send))


def set_receive_timeout(sock: socket.socket, seconds: float | None) -> None:
    """Change the read timeout of a socket set up by :func:`use_kernel_timeouts`."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, _option_value(seconds))
