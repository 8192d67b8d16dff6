"""The dealer's seat: reads with deadlines the kernel keeps, whole lines only, EOF as None, and
one write per flush."""

from __future__ import annotations

import socket
import struct

import pytest

from protocol.dealer_seat import Seat


def receive_timeout(sock: socket.socket) -> float:
    seconds, micros = struct.unpack(
        "@ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16)
    )
    return seconds + micros / 1e6


def test_a_deadline_shorter_than_a_millisecond_is_still_armed() -> None:
    ours, theirs = socket.socketpair()
    seat = Seat(0, ours, 1.0)
    assert receive_timeout(ours) == 0.0  # none until a read sets it
    with pytest.raises(TimeoutError):
        seat.readline(0.0005)
    assert 0.0 < receive_timeout(ours) < 1.0  # set (the kernel rounds it up to its tick)
    ours.close(), theirs.close()


def test_lines_split_across_writes_eof_and_one_write_per_flush() -> None:
    ours, theirs = socket.socketpair()
    seat = Seat(1, ours, 1.0)
    theirs.sendall(b"MATCHSTATE:0:1:c:9h")
    theirs.sendall(b"6s|:r\r\nsecond\n")
    assert seat.readline(5.0) == "MATCHSTATE:0:1:c:9h6s|:r\r"
    assert seat.readline(5.0) == "second"
    seat.outbox += ["a\r\n", "b\r\n"]
    seat.flush()
    assert seat.outbox == [] and theirs.recv(100) == b"a\r\nb\r\n"
    theirs.close()
    assert seat.readline(5.0) is None
    ours.close()
