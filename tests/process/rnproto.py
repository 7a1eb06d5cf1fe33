# SPDX-License-Identifier: BSD-3-Clause
"""The control protocol (docs/protocol.md), written independently of the C
codec so the process tests can speak it as a peer would."""

import socket
import struct
import time

MAGIC = 0x524E5450
VERSION = 3
HELLO, ACCEPT, REFUSE, READY, HEARTBEAT, CLOSE, NOTIFY, NOTIFY_QP = \
    range(1, 9)
QP_OFFER, QP_ACCEPT, QP_REFUSE, QP_READY, QP_CLOSED = range(1, 6)
QP_DISABLED, QP_NO_ROOM, QP_BUSY = range(1, 4)
CAP_NATIVE_NOTIFY, CAP_TCP_FALLBACK, CAP_NOTIFY_ENABLED = 1, 2, 4
QP_DATA, QP_NOTIFY = 1, 2


def frame(ftype, payload=b"", version=VERSION, magic=MAGIC):
    return struct.pack(">IBBHI", magic, version, ftype, 0, len(payload)) + payload


def hello(name, session, generation, qps, caps=CAP_TCP_FALLBACK, ftype=HELLO,
          lid=1, gid=b"\0" * 10 + b"\xff\xff" + bytes([127, 0, 0, 1])):
    """qps: list of (kind, qpn, psn) or (kind, qpn, psn, recv_depth,
    slot_size, credits)."""
    body = bytes([len(name)]) + name.encode()
    body += struct.pack(">QII", session, generation, caps) + gid
    body += struct.pack(">HBBQI", lid, 5, len(qps), 0, 0)
    for qp in qps:
        body += struct.pack(">B3xIIIII", *(tuple(qp) + (0, 0, 0))[:6])
    return frame(ftype, body)


def ready(generation):
    return frame(READY, struct.pack(">I", generation))


def close(reason=0):
    return frame(CLOSE, struct.pack(">H", reason))


def notify_qp(generation, step, reason, offer, qp=None):
    """A NOTIFY_QP step; qp (qpn, psn, recv_depth, slot_size, credits) for
    OFFER and ACCEPT."""
    body = struct.pack(">IBBH", generation, step, reason, offer)
    if qp is not None:
        body += struct.pack(">B3xIIIII", QP_NOTIFY, *qp)
    return frame(NOTIFY_QP, body)


def notify_qp_fields(payload):
    """generation, step, reason, offer of a NOTIFY_QP payload."""
    return struct.unpack(">IBBH", payload[:8])


def read_frame(sock, timeout=10):
    """(type, payload) of the next frame; raises on EOF or timeout."""
    sock.settimeout(timeout)
    head = _read_exact(sock, 12)
    magic, version, ftype, flags, length = struct.unpack(">IBBHI", head)
    assert magic == MAGIC and version == VERSION and flags == 0, head
    return ftype, _read_exact(sock, length)


def read_frame_skipping_heartbeats(sock, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        ftype, payload = read_frame(sock, max(deadline - time.monotonic(), 0.01))
        if ftype != HEARTBEAT:
            return ftype, payload


def accept_fields(payload):
    """name, session, generation, caps, n_qps of a HELLO/ACCEPT payload."""
    n = payload[0]
    name = payload[1:1 + n].decode()
    session, generation, caps = struct.unpack(">QII", payload[1 + n:17 + n])
    n_qps = payload[1 + n + 35]
    return name, session, generation, caps, n_qps


def refusal(payload):
    code, n = struct.unpack(">HB", payload[:3])
    return code, payload[3:3 + n].decode()


def _read_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("peer closed")
        buf += chunk
    return buf


def connect(port, host="127.0.0.1"):
    return socket.create_connection((host, port), timeout=10)
