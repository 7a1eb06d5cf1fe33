# SPDX-License-Identifier: BSD-3-Clause
"""The control protocol (docs/protocol.md), written independently of the C
codec so the process tests can speak it as a peer would."""

import hashlib
import hmac
import secrets
import socket
import struct
import time

MAGIC = 0x524E5450
VERSION = 8
HELLO, ACCEPT, REFUSE, READY, HEARTBEAT, CLOSE, NOTIFY, NOTIFY_QP, \
    CHALLENGE, ANSWER, PROOF, DESC_REQUEST, DESC_ANSWER = range(1, 14)
DESC_OK, DESC_UNKNOWN, DESC_UNAUTHENTICATED, DESC_UNAVAILABLE = range(4)
REFUSE_DUPLICATE, REFUSE_NAME, REFUSE_AUTH = 3, 4, 7
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


def challenge(name, session, nonce):
    """CHALLENGE: the caller's name, session id and 32-byte nonce."""
    return frame(CHALLENGE, bytes([len(name)]) + name.encode() +
                 struct.pack(">Q", session) + nonce)


def answer_fields(payload):
    """name, session, nonce, proof of an ANSWER payload."""
    n = payload[0]
    name = payload[1:1 + n].decode()
    (session,) = struct.unpack(">Q", payload[1 + n:9 + n])
    return name, session, payload[9 + n:41 + n], payload[41 + n:73 + n]


def desc_request(request_id, name):
    """DESC_REQUEST for the region published as name."""
    return frame(DESC_REQUEST, struct.pack(">IB", request_id, len(name)) +
                 name.encode())


def desc_answer_fields(payload):
    """(request id, status, blob) of a DESC_ANSWER payload."""
    request_id, status, n = struct.unpack(">IHH", payload[:8])
    assert len(payload) == 8 + n, payload
    return request_id, status, payload[8:]


def proof(mac):
    return frame(PROOF, mac)


def proof_mac(key, role, caller, callee, caller_session, callee_session,
              caller_nonce, callee_nonce):
    """HMAC-SHA256 of the transcript docs/protocol.md describes; role is
    "caller" or "callee" (or "simwir": wire_token())."""
    msg = struct.pack(">IB", MAGIC, VERSION) + role.encode()
    msg += bytes([len(caller)]) + caller.encode()
    msg += bytes([len(callee)]) + callee.encode()
    msg += struct.pack(">QQ", caller_session, callee_session)
    msg += caller_nonce + callee_nonce
    return hmac.new(key, msg, hashlib.sha256).digest()


def wire_token(key, *transcript):
    """The sim wire token of an exchange: transcript as proof_mac() takes
    it after the role (caller, callee, sessions, nonces)."""
    return proof_mac(key, "simwir", *transcript)[:16]


def authenticate(sock, key, name, session, callee):
    """The caller's side of the challenge exchange with key: returns the
    callee's (session, proof_ok) after sending PROOF (made with key even
    when the callee's proof did not check)."""
    peer_session, ok, _ = authenticate_transcript(sock, key, name, session,
                                                  callee)
    return peer_session, ok


def authenticate_transcript(sock, key, name, session, callee):
    """authenticate(), and the transcript (for wire_token()) last."""
    nonce = secrets.token_bytes(32)
    sock.sendall(challenge(name, session, nonce))
    ftype, payload = read_frame(sock)
    if ftype != ANSWER:
        raise ConnectionError(f"frame {ftype} instead of ANSWER: {payload!r}")
    peer, peer_session, peer_nonce, peer_proof = answer_fields(payload)
    args = (name, callee, session, peer_session, nonce, peer_nonce)
    ok = peer == callee and hmac.compare_digest(
        peer_proof, proof_mac(key, "callee", *args))
    sock.sendall(proof(proof_mac(key, "caller", *args)))
    return peer_session, ok, args


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


def accept_address(payload):
    """(IPv4 address, LID) of a HELLO/ACCEPT payload's GID and LID: where
    the sender's sim device listens."""
    n = payload[0]
    gid = payload[1 + n + 16:1 + n + 32]
    (lid,) = struct.unpack(">H", payload[1 + n + 32:1 + n + 34])
    return socket.inet_ntoa(gid[12:]), lid


# The sim device's wire (dataplane/nic/sim/sim_frame_pvt.h): a 40-byte
# header in host order (little endian here), HELLO first.
SIM_HELLO, SIM_REQUEST, SIM_READ_RESP, SIM_ACK = 1, 2, 3, 4
SIM_HEADER_SIZE = 40
SIM_MTU = 4096   # RN_SIM_MTU: no frame carries more


def sim_frame(ftype, payload=b"", length=None):
    """A wire frame; length (announced) defaults to the payload's."""
    head = struct.pack("<IBBBBIIIIQII", len(payload) if length is None
                       else length, ftype, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    return head + payload


def sim_hello(ip, port, token=b"\0" * 16):
    """HELLO of the device at ip:port presenting token; token=None: the
    8-byte HELLO of protocol 4, with no token at all."""
    body = socket.inet_aton(ip) + struct.pack("<HH", port, 0)
    return sim_frame(SIM_HELLO, body if token is None else body + token)


def sim_hello_fields(frame_bytes):
    """(ip, port, token) of a whole wire HELLO frame."""
    length, ftype = struct.unpack("<IB", frame_bytes[:5])
    assert ftype == SIM_HELLO and length == 24, (ftype, length)
    body = frame_bytes[SIM_HEADER_SIZE:SIM_HEADER_SIZE + 24]
    (port,) = struct.unpack("<H", body[4:6])
    return socket.inet_ntoa(body[:4]), port, body[8:24]


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
