#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for who may become a peer (docs/security.md): with a
shared secret configured, a Python peer speaking our protocol (rnproto.py)
tries to pose as a configured peer without the secret, with a wrong one,
with a replayed handshake, to take over a live session, and under a name
nobody configured. Each gets a refusal and nothing else: no ACCEPT (no QPN,
PSN or rkey), and the real pair stays connected with the same generation.
Prints TAP. Usage: test_strangers.py RNOTIFYD"""

import os
import re
import secrets
import shutil
import socket
import struct
import subprocess
import time

import rnproto
from rntest import (FAKE_PEER_DEAD_AFTER_MS, RNOTIFYD, SECRET_FILE, SLOW_QPS,
                    TMP, Daemon, endpoint, endpoints, free_port,
                    lcore_counters, node_text, rss_kib, run_tests,
                    seeded_random,
                    secret_keys, status, stop_all, unique, wait_connected,
                    wait_until, write_config)

DATA_QP = [(rnproto.QP_DATA, 0x100, 0)]


def secret_file(tag, mode=0o600):
    """A fresh secret in a file of its own, as scripts/setup.sh makes one."""
    path = os.path.join(TMP, f"secret-{tag}")
    key = secrets.token_hex(32).encode()
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode),
              "wb") as f:
        f.write(key + b"\n")
    os.chmod(path, mode)
    return path, key


def with_secret(text, path, more=""):
    """node_text() with [control] secret_file = path (and more keys) in
    place of the tests' secret and its accept_unknown = true: here the
    names are under test."""
    line = secret_keys(SECRET_FILE)
    assert line in text, text
    return text.replace(line, f"secret_file = {path}\n{more}", 1)


def start_pair(tag, secret_a, secret_b=None, more_b=""):
    """Daemons a and b, calling each other eagerly, each with its secret
    file(s). Returns (a, b, port of b, daemons)."""
    a, b = unique(tag + "a"), unique(tag + "b")
    pa, pb = free_port(), free_port()
    da = Daemon(a, text=with_secret(
        node_text(a, pa, [(b, "127.0.0.1", pb)]), secret_a))
    db = Daemon(b, text=with_secret(
        node_text(b, pb, [(a, "127.0.0.1", pa)]), secret_b or secret_a,
        more_b))
    for d in (da, db):
        d.wait_running()
    return a, b, pb, (da, db)


def start_callee(tag, **node):
    """A running daemon with a secret and one configured peer, which it
    does not call (node: more node_text() keywords). Returns (its name,
    the peer's, its port, the daemon, the secret)."""
    path, key = secret_file(tag)
    me, peer = unique(tag + "a"), unique(tag + "b")
    port = free_port()
    d = Daemon(me, text=with_secret(
        node_text(me, port, [(peer, "127.0.0.1", free_port())],
                  connect="on_demand", **node), path))
    d.wait_running()
    return me, peer, port, d, key


# A Python peer that has the secret plays a whole handshake; it sends no
# heartbeats and its QPs never answer, so the daemon gives it time.
PATIENT = dict(nic=SLOW_QPS, dead_after=FAKE_PEER_DEAD_AFTER_MS)


def join_with_secret(port, key, me, peer, gid_ip="127.0.0.1", lid=1):
    """Call the daemon me as its configured peer, with the secret, with
    a HELLO whose GID names gid_ip and whose LID is lid; READY after its
    ACCEPT. Returns (the socket, the ACCEPT's payload, the sim wire token
    both sides derive)."""
    s = rnproto.connect(port)
    session = secrets.randbits(63) | 1
    _, ok, transcript = rnproto.authenticate_transcript(s, key, peer,
                                                        session, me)
    assert ok
    gid = b"\0" * 10 + b"\xff\xff" + socket.inet_aton(gid_ip)
    s.sendall(rnproto.hello(peer, session, 1, DATA_QP, lid=lid, gid=gid))
    ftype, body = rnproto.read_frame_skipping_heartbeats(s)
    assert ftype == rnproto.ACCEPT, (ftype, body)
    s.sendall(rnproto.ready(1))
    return s, body, rnproto.wire_token(key, *transcript)


def listener(host, port=0):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))
    s.listen(64)
    return s



def expect_refusal(sock, code):
    """The next frame is REFUSE with code, then the daemon closes."""
    ftype, body = rnproto.read_frame_skipping_heartbeats(sock)
    assert ftype == rnproto.REFUSE, (ftype, body)
    got, text = rnproto.refusal(body)
    assert got == code, (got, text)
    sock.settimeout(10)
    try:
        rest = sock.recv(100)
    except ConnectionResetError:   # closed with our frames still unread
        rest = b""
    assert rest == b"", "not closed after the refusal"
    return text


def live(a, b):
    """What must not change while strangers try: each side's generation
    of the session and how often it connected."""
    ea, eb = endpoint(a, b), endpoint(b, a)
    assert ea["state"] == eb["state"] == "connected", (ea, eb)
    return (ea["generation"], ea["peer_generation"], ea["to_connected"],
            eb["generation"], eb["peer_generation"], eb["to_connected"])


def test_pair_with_the_secret_connects_and_rotates():
    """Two nodes with one secret connect; during a rotation, a node whose
    current secret is the other's next one connects too."""
    old, _ = secret_file("rot-old")
    new, _ = secret_file("rot-new")
    a, b, _, ds = start_pair("r", old, new, f"secret_file_next = {old}\n")
    try:
        wait_connected(a, b)
        wait_connected(b, a)
        assert status(a)["session"] == endpoint(b, a)["peer_session"]
    finally:
        stop_all(ds)


def test_impersonation_without_the_secret():
    """HELLO with a configured peer's name, from its address, before any
    proof: refused, and no ACCEPT with QP numbers ever comes."""
    me, peer, port, d, _ = start_callee("imp")
    try:
        s = rnproto.connect(port)
        s.sendall(rnproto.hello(peer, 1234, 1, DATA_QP))
        assert "requires authentication" in \
            expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        # A CHALLENGE, then a proof made up without the secret.
        s = rnproto.connect(port)
        s.sendall(rnproto.challenge(peer, 1234, secrets.token_bytes(32)))
        ftype, _ = rnproto.read_frame(s)
        assert ftype == rnproto.ANSWER, ftype
        s.sendall(rnproto.proof(secrets.token_bytes(32)))
        s.sendall(rnproto.hello(peer, 1234, 1, DATA_QP))
        expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        assert endpoint(me, peer)["state"] == "idle"
        assert endpoint(me, peer)["to_connected"] == 0
    finally:
        stop_all((d,))


def test_refusals_are_logged_at_a_bounded_rate():
    """200 HELLOs without a proof: each refused, but at most 10 lines a
    second are logged, and the next line logged says how many were not."""
    me, peer, port, d, _ = start_callee("log")
    try:
        t0 = time.monotonic()
        for _ in range(200):
            s = rnproto.connect(port)
            s.sendall(rnproto.hello(peer, 1, 1, DATA_QP))
            expect_refusal(s, rnproto.REFUSE_AUTH)
            s.close()
        seconds = time.monotonic() - t0
        time.sleep(1.1)   # a new window: the next refusal is logged
        s = rnproto.connect(port)
        s.sendall(rnproto.hello(peer, 1, 1, DATA_QP))
        expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        wait_until("the line with the count", lambda:
                   "more not logged]" in d.stderr())
        logged = d.stderr().count("requires authentication")
        assert logged <= 10 * (int(seconds) + 2) + 1, (logged, seconds)
        # Every refusal is either a line or counted in one.
        untold = sum(int(n) for n in re.findall(
            r"\[and (\d+) more not logged\]", d.stderr()))
        assert logged + untold == 201, (logged, untold)
    finally:
        stop_all((d,))


def test_wrong_secret():
    """A Python peer with another secret: the daemon's proof does not check
    for it, and its proof is refused. Two daemons with different secrets
    never connect."""
    right, _ = secret_file("ws-right")
    wrong, wrong_key = secret_file("ws-wrong")
    a, b, pb, ds = start_pair("w", right, wrong)
    try:
        s = rnproto.connect(pb)
        _, ok = rnproto.authenticate(s, b"another secret, not b's", a, 99, b)
        assert not ok, "b's proof checked with a wrong key"
        expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        wait_until("a failing to authenticate b", lambda: endpoint(a, b)
                   ["to_failed"] >= 2 and "proof" in endpoint(a, b)
                   ["last_error"])
        assert endpoint(a, b)["to_connected"] == 0
        assert endpoint(b, a)["to_connected"] == 0
        # With b's secret, the same Python peer gets through the proofs.
        s = rnproto.connect(pb)
        _, ok = rnproto.authenticate(s, wrong_key, a, 99, b)
        assert ok
        s.close()
    finally:
        stop_all(ds)


def test_replayed_handshake():
    """A caller's recorded CHALLENGE and PROOF, sent again on a new
    connection: the callee's nonce is new, so the old proof fails."""
    me, peer, port, d, key = start_callee("rep")
    try:
        # The recording: a real exchange, as a peer with the secret made it.
        s = rnproto.connect(port)
        nonce = secrets.token_bytes(32)
        challenge = rnproto.challenge(peer, 77, nonce)
        s.sendall(challenge)
        ftype, body = rnproto.read_frame(s)
        assert ftype == rnproto.ANSWER, ftype
        name, session, their_nonce, _ = rnproto.answer_fields(body)
        proof = rnproto.proof(rnproto.proof_mac(
            key, "caller", peer, name, 77, session, nonce, their_nonce))
        s.sendall(proof)
        s.close()
        # The replay.
        s = rnproto.connect(port)
        s.sendall(challenge)
        ftype, body = rnproto.read_frame(s)
        assert ftype == rnproto.ANSWER, ftype
        assert rnproto.answer_fields(body)[2] != their_nonce
        s.sendall(proof)
        s.sendall(rnproto.hello(peer, 77, 1, DATA_QP))
        assert "does not check" in expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        assert endpoint(me, peer)["to_connected"] == 0
    finally:
        stop_all((d,))


def test_hijack_of_a_live_session():
    """While a and b are connected, strangers call b as a: without the
    secret, and with it but the live session's id. The pair stays
    connected, same generations, no reconnection."""
    path, key = secret_file("hij")
    a, b, pb, ds = start_pair("h", path)
    try:
        wait_connected(a, b)
        wait_connected(b, a)
        before = live(a, b)
        session = int(status(a)["session"], 16)
        s = rnproto.connect(pb)
        s.sendall(rnproto.hello(a, session, 1, DATA_QP))
        expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        s = rnproto.connect(pb)
        _, ok = rnproto.authenticate(s, b"not the secret", a, session, b)
        assert not ok
        expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        # With the secret, only a new incarnation replaces the session.
        s = rnproto.connect(pb)
        _, ok = rnproto.authenticate(s, key, a, session, b)
        assert ok
        s.sendall(rnproto.hello(a, session, 1, DATA_QP))
        assert "already connected" in \
            expect_refusal(s, rnproto.REFUSE_DUPLICATE)
        s.close()
        time.sleep(0.3)   # a heartbeat period or more: nothing fell over
        assert live(a, b) == before, (live(a, b), before)
    finally:
        stop_all(ds)


def test_unknown_name():
    """A name no [peer] section gives: refused before its proof without
    the secret, and after it with the secret (accept_unknown is off)."""
    path, key = secret_file("unk")
    me, stranger = unique("ua"), unique("uz")
    port = free_port()
    d = Daemon(me, text=with_secret(node_text(me, port, []), path))
    try:
        d.wait_running()
        s = rnproto.connect(port)
        s.sendall(rnproto.hello(stranger, 5, 1, DATA_QP))
        expect_refusal(s, rnproto.REFUSE_AUTH)
        s.close()
        s = rnproto.connect(port)
        _, ok = rnproto.authenticate(s, key, stranger, 5, me)
        assert ok
        s.sendall(rnproto.hello(stranger, 5, 1, DATA_QP))
        assert "unknown name" in expect_refusal(s, rnproto.REFUSE_NAME)
        s.close()
        assert stranger not in endpoints(me)
    finally:
        stop_all((d,))


def test_unknown_name_with_accept_unknown():
    """accept_unknown = true: an unknown name that proves the secret gets
    its endpoint (and ACCEPT)."""
    path, key = secret_file("acc")
    me, stranger = unique("va"), unique("vz")
    port = free_port()
    d = Daemon(me, text=with_secret(node_text(me, port, []), path,
                                    "accept_unknown = true\n"))
    try:
        d.wait_running()
        s = rnproto.connect(port)
        _, ok = rnproto.authenticate(s, key, stranger, 5, me)
        assert ok
        s.sendall(rnproto.hello(stranger, 5, 1, DATA_QP))
        ftype, body = rnproto.read_frame_skipping_heartbeats(s)
        assert ftype == rnproto.ACCEPT, (ftype, body)
        assert rnproto.accept_fields(body)[0] == me
        assert stranger in endpoints(me)
        s.close()
    finally:
        stop_all((d,))


def test_bad_secret_files_are_refused():
    """--check-config (and start-up, which loads the same way) refuses a
    secret others can read, one too short, and a next without a current."""
    readable, _ = secret_file("perm", mode=0o644)
    short = os.path.join(TMP, "secret-short")
    with open(os.open(short, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("tooshort\n")
    good, _ = secret_file("good")
    cases = [
        (f"secret_file = {readable}\n",
         "readable by nobody else (chmod 600)"),
        (f"secret_file = {short}\n", "8 bytes; a secret has at least 16"),
        (f"secret_file_next = {good}\n",
         "secret_file_next without secret_file"),
        (f"secret_file = {good}\nsecret_file_next = {TMP}/none\n",
         "No such file or directory"),
    ]
    name = unique("sp")
    for keys, error in cases:
        cfg = os.path.join(TMP, name + ".ini")
        with open(cfg, "w") as f:
            f.write(node_text(name, 0, [], secret=None).replace(
                "[control]\n", "[control]\n" + keys))
        p = subprocess.run([RNOTIFYD, "--check-config", cfg],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode != 0, (keys, p.stdout)
        assert error in p.stderr, (keys, p.stderr)


def test_examples_name_the_secret_setup_writes():
    """Every example configuration names ~/.config/rnotify/secret, the file
    scripts/setup.sh writes, in the home of whoever runs the daemon: with
    it there (mode 0600), --check-config passes; without it, it fails
    naming the file it looked for."""
    examples = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                            "..", "..", "config", "examples")
    home = os.path.join(TMP, "home")
    key_dir = os.path.join(home, ".config", "rnotify")
    env = dict(os.environ, HOME=home)
    for example in ("rnotifyd.ini", "pair-a.ini", "pair-b.ini"):
        path = os.path.join(examples, example)
        with open(path) as f:
            assert "secret_file = ~/.config/rnotify/secret\n" in f.read()
        if os.path.exists(key_dir):
            shutil.rmtree(key_dir)
        p = subprocess.run([RNOTIFYD, "--check-config", path], env=env,
                           capture_output=True, text=True, timeout=30)
        assert p.returncode != 0, (example, p.stdout)
        assert f"{key_dir}/secret': No such file" in p.stderr, p.stderr
        os.makedirs(key_dir)
        # As scripts/setup.sh does it.
        subprocess.run(["bash", "-c", "umask 077 && openssl rand -hex 32 > "
                        f"{key_dir}/secret"], check=True)
        p = subprocess.run([RNOTIFYD, "--check-config", path], env=env,
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, (example, p.stderr)


def test_unproven_callee_cannot_close_or_refuse_our_call():
    """Whoever answers at a peer's address, without the secret: a CLOSE or
    a REFUSE DUPLICATE in reply to our CHALLENGE fails that connection
    only, logged as such: neither closes the endpoint as if the peer had,
    nor is taken for a real duplicate's refusal."""
    path, _ = secret_file("unproven")
    me, peer = unique("unpa"), unique("unpb")
    fake = socket.socket()
    fake.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    fake.bind(("127.0.0.1", 0))
    fake.listen(4)
    fake.settimeout(10)
    d = Daemon(me, text=with_secret(
        node_text(me, free_port(), [(peer, "127.0.0.1",
                                     fake.getsockname()[1])]), path))
    try:
        d.wait_running()
        replies = [rnproto.close(),
                   rnproto.frame(rnproto.REFUSE,
                                 struct.pack(">HB", rnproto.REFUSE_DUPLICATE,
                                             4) + b"dupl")]
        for reply in replies:
            s, _ = fake.accept()
            ftype, _ = rnproto.read_frame(s)
            assert ftype == rnproto.CHALLENGE, ftype
            s.sendall(reply)
            s.settimeout(10)
            try:
                assert s.recv(100) == b"", "our call not closed"
            except ConnectionResetError:
                pass
            s.close()
        wait_until("both replies logged", lambda: all(
            w in d.stderr() for w in ("bad frame: CLOSE out of order",
                                      "refused our CHALLENGE")))
        assert "the peer closed it" not in d.stderr(), d.stderr()
        assert endpoint(me, peer)["state"] != "closed", endpoint(me, peer)
    finally:
        fake.close()
        stop_all((d,))


def test_listener_beyond_this_host_without_a_secret_warns():
    name = unique("lw")
    d = Daemon(name, text=node_text(name, 0, [], listen="0.0.0.0",
                                    secret=None))
    try:
        d.wait_running()
        assert "with no secret: any process that reaches it can pose as a " \
            "peer" in d.stderr(), d.stderr()
    finally:
        stop_all((d,))
    # --check-config says it too, and the file is still valid.
    path = write_config(name + "-check", node_text(name, 0, [],
                                                    listen="0.0.0.0",
                                                    secret=None))
    p = subprocess.run([RNOTIFYD, "--check-config", path],
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "with no secret_file: any process that reaches it can pose as " \
        "a peer" in p.stderr, p.stderr


def test_sim_wire_calls_only_the_peers_own_address():
    """A peer with the secret names, in its HELLO, a GID and LID of a
    listener of the test's at another address (127.0.0.2): the worker
    never connects there. It calls the address the peer's control
    connection came from (127.0.0.1, that LID), and its first bytes there
    are a wire HELLO that presents the token both sides derived."""
    for _ in range(20):   # the same free port on both addresses
        elsewhere = listener("127.0.0.2")
        lid = elsewhere.getsockname()[1]
        try:
            here = listener("127.0.0.1", lid)
            break
        except OSError:
            elsewhere.close()
    me, peer, port, d, key = start_callee("redir", **PATIENT)
    try:
        s, body, token = join_with_secret(port, key, me, peer,
                                          gid_ip="127.0.0.2", lid=lid)
        # The probe, an RDMA READ over data QP 0, makes the worker call.
        here.settimeout(10)
        try:
            wire, _ = here.accept()
        except socket.timeout:
            raise AssertionError("the worker never called 127.0.0.1 port "
                                 f"{lid}: elsewhere got "
                                 f"{elsewhere_calls(elsewhere, 0.1)}")
        wire.settimeout(10)
        hello = rnproto._read_exact(wire, rnproto.SIM_HEADER_SIZE + 24)
        ip, wire_port, presented = rnproto.sim_hello_fields(hello)
        assert (ip, wire_port) == rnproto.accept_address(body), \
            (ip, wire_port, rnproto.accept_address(body))
        assert presented == token, (presented.hex(), token.hex())
        assert elsewhere_calls(elsewhere, 1.0) == 0
        wire.close()
        s.close()
    finally:
        here.close()
        elsewhere.close()
        stop_all((d,))


def elsewhere_calls(sock, seconds):
    """Connections sock's listener took within seconds."""
    sock.settimeout(seconds)
    n = 0
    try:
        while True:
            c, _ = sock.accept()
            c.close()
            n += 1
    except socket.timeout:
        return n


def closed_within(sock, seconds):
    """Whether the other end closes sock within seconds."""
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def no_descriptor_then_closed(sock, when):
    """Frames until the daemon closes sock: never a DESC_ANSWER."""
    try:
        while True:
            ftype, body = rnproto.read_frame(sock)
            assert ftype != rnproto.DESC_ANSWER, \
                f"{when}: a descriptor answer {body!r}"
    except (ConnectionError, socket.timeout):
        pass
    sock.close()


def test_descriptor_requests_from_strangers():
    """DESC_REQUEST (docs/protocol.md, "Descriptor requests") as the first
    frame, after a made-up proof, and after a true proof but before HELLO:
    the connection closes and no DESC_ANSWER (no blob, no rkey) comes. The
    proven, established peer gets an answer: "unknown" for a name nothing
    is published under (rnotifyd's own application publishes none)."""
    me, peer, port, d, key = start_callee("desc", **PATIENT)
    try:
        s = rnproto.connect(port)
        s.sendall(rnproto.desc_request(1, "kv/0"))
        no_descriptor_then_closed(s, "first frame")
        s = rnproto.connect(port)
        s.sendall(rnproto.challenge(peer, 1234, secrets.token_bytes(32)))
        ftype, _ = rnproto.read_frame(s)
        assert ftype == rnproto.ANSWER, ftype
        s.sendall(rnproto.proof(secrets.token_bytes(32)))
        s.sendall(rnproto.desc_request(2, "kv/0"))
        no_descriptor_then_closed(s, "made-up proof")
        s = rnproto.connect(port)
        _, ok = rnproto.authenticate(s, key, peer, 1235, me)
        assert ok
        s.sendall(rnproto.desc_request(3, "kv/0"))
        no_descriptor_then_closed(s, "proven, before HELLO")
        assert "not given" not in d.stderr(), "a stranger's request served"
        s, _, _ = join_with_secret(port, key, me, peer)
        s.sendall(rnproto.desc_request(4, "kv/0"))
        ftype, body = rnproto.read_frame_skipping_heartbeats(s)
        assert ftype == rnproto.DESC_ANSWER, (ftype, body)
        assert rnproto.desc_answer_fields(body) == \
            (4, rnproto.DESC_UNKNOWN, b""), body
        wait_until("the refusal logged", lambda: "descriptor 'kv/0' not "
                   "given: none published so" in d.stderr())
        s.close()
    finally:
        stop_all((d,))


def test_sim_wire_takes_only_the_endpoints_token():
    """Strangers on the daemon's sim wire, next to a peer with the secret:
    garbage, a HELLO without a token (protocol 4's), with a wrong one, the
    right token for another device, the token and then a frame larger
    than its type carries (1 GiB, an ACK with data, a packet over the
    path MTU), half a frame: each
    closed at once; silence closed at the HELLO deadline. The worker grows
    by no frame's size, its log lines about them are bounded, and the
    token's own HELLO is kept."""
    rng = seeded_random()
    me, peer, port, d, key = start_callee("wire", **PATIENT)
    ours = listener("127.0.0.1")   # where the worker calls the peer
    lid = ours.getsockname()[1]
    try:
        s, body, token = join_with_secret(port, key, me, peer, lid=lid)
        wire_ip, wire_port = rnproto.accept_address(body)
        wrong = bytes(rng.getrandbits(8) for _ in range(16))
        garbage = bytes(rng.getrandbits(8) for _ in range(200))
        garbage = garbage[:4] + bytes([rnproto.SIM_HELLO + 1 +
                                       garbage[4] % 200]) + garbage[5:]
        other_port = lid % 65535 + 1
        hello = rnproto.sim_hello("127.0.0.1", lid, token)
        cases = [
            ("garbage first bytes", garbage),
            ("a HELLO with no token", rnproto.sim_hello("127.0.0.1", lid,
                                                        None)),
            ("a wrong token", rnproto.sim_hello("127.0.0.1", lid, wrong)),
            ("the token for another device",
             rnproto.sim_hello("127.0.0.1", other_port, token)),
            ("the token, then 1 GiB announced",
             hello + rnproto.sim_frame(rnproto.SIM_REQUEST, b"x" * 64,
                                       length=1 << 30)),
            ("the token, then an ACK with 1 MiB",
             hello + rnproto.sim_frame(rnproto.SIM_ACK, b"x" * 64,
                                       length=1 << 20)),
            ("the token, then a packet over the path MTU",
             hello + rnproto.sim_frame(rnproto.SIM_REQUEST, b"x" * 64,
                                       length=rnproto.SIM_MTU + 1)),
            ("no token, then half a frame",
             rnproto.sim_hello("127.0.0.1", lid, None) +
             rnproto.sim_frame(rnproto.SIM_REQUEST, b"x" * 1000,
                               length=1 << 20)),
        ]
        rss_before = rss_kib(d.proc.pid)
        t0 = time.monotonic()
        for what, data in cases:
            c = socket.create_connection((wire_ip, wire_port), timeout=10)
            c.sendall(data)
            # At once: well before the HELLO deadline (1 s) would.
            assert closed_within(c, 0.8), f"{what}: not closed"
            c.close()
        silent = socket.create_connection((wire_ip, wire_port), timeout=10)
        start = time.monotonic()
        assert closed_within(silent, 5), "silence: not closed"
        waited = time.monotonic() - start
        assert waited >= 0.9, f"silence closed after {waited:.2f} s"
        good = socket.create_connection((wire_ip, wire_port), timeout=10)
        good.sendall(hello)
        assert not closed_within(good, 1.5), "the token's HELLO: closed"
        seconds = time.monotonic() - t0
        grown = rss_kib(d.proc.pid) - rss_before
        refused = d.stderr().count("rnotify.sim: wire connection from")
        untold = sum(int(n) for n in re.findall(
            r"refused: .*\[and (\d+) more not logged\]", d.stderr()))
        print(f"# {len(cases) + 1} strangers closed in {seconds:.1f} s; "
              f"{refused} lines logged ({untold} counted in them); "
              f"RSS grew {grown} KiB")
        assert 1 <= refused <= 10 * (int(seconds) + 2), refused
        assert grown < 16 * 1024, grown
        good.close()
        s.close()
    finally:
        ours.close()
        stop_all((d,))


def flood(port, sources, each, stop, opened):
    """Strangers from the addresses in sources keep as many connections to
    port open as they can, up to each per address: a quarter only
    connect, half send a CHALLENGE and no proof, a quarter a HELLO without
    one. Whatever closes is opened again, at most 2,000 a second in all."""
    import selectors
    sel = selectors.DefaultSelector()
    challenge = rnproto.challenge("flood", 1, b"\0" * 32)
    kinds = [b"", challenge, challenge, rnproto.hello("flood", 1, 1, DATA_QP)]
    import collections
    want = collections.deque((src, i) for i in range(each) for src in sources)
    slots = opened[1]

    def open_one(src, i):
        c = socket.socket()
        c.setblocking(False)
        c.bind((src, 0))
        try:
            c.connect((("127.0.0.1", port)))
        except BlockingIOError:
            pass
        except OSError:   # out of ports for now: later
            c.close()
            want.append((src, i))
            return
        sel.register(c, selectors.EVENT_WRITE, (src, i, kinds[i % 4]))
        opened[0] += 1
        slots.add((src, i))

    budget, last = 0.0, time.monotonic()
    while not stop.is_set():
        now = time.monotonic()
        budget = min(budget + (now - last) * 2000, 100)
        last = now
        while want and budget >= 1:
            open_one(*want.popleft())
            budget -= 1
        for key, events in sel.select(timeout=0.02):
            c, (src, i, first) = key.fileobj, key.data
            try:
                if events & selectors.EVENT_WRITE:
                    if first:
                        c.send(first)
                    sel.modify(c, selectors.EVENT_READ, key.data)
                    continue
                if c.recv(4096):
                    continue
            except OSError:
                pass
            sel.unregister(c)
            c.close()
            want.append((src, i))
    for key in list(sel.get_map().values()):
        key.fileobj.close()


# A configured peer that restarts is connected again this soon, flood or
# not: a handshake takes milliseconds, and the reconnection about a second
# on a loaded machine. Without the caps, it waits for the strangers'
# handshake budget to run out, which is made long enough that a bound
# this far above a second still tells the two apart: 28 s for 30 s.
RECONNECT_BOUND_S = 15
STRANGERS_BUDGET_MS = 30000


def test_hello_flood_while_a_peer_reconnects():
    """While strangers on 16 other loopback addresses keep the callee's
    control port full of handshakes (more than its whole connection table
    without the caps), the configured peer restarts and calls again: it
    is connected again within the bound, no stranger got a QP, and the
    callee's log stays bounded."""
    import resource
    import threading
    # Descriptors for the flood, here and in the callee (which inherits
    # them): without the caps, enough to fill its table (2 x 1024).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want_fds = 4096 if hard == resource.RLIM_INFINITY else min(hard, 4096)
    if soft != resource.RLIM_INFINITY and soft < want_fds:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want_fds, hard))
    sources = [f"127.0.0.{i}" for i in range(2, 18)]
    each = max(8, (want_fds - 300) // len(sources))
    path, _ = secret_file("flood")
    a, b = unique("fla"), unique("flb")
    pa, pb = free_port(), free_port()
    # b never reaches a (a wrong port): a's call into the flood is the
    # only way back. A generous handshake budget keeps each stranger's
    # connection as long as it may.
    da = Daemon(a, text=with_secret(
        node_text(a, pa, [(b, "127.0.0.1", pb)]), path))
    text_b = with_secret(node_text(b, pb, [(a, "127.0.0.1", free_port())],
                                   connect_timeout=STRANGERS_BUDGET_MS),
                         path)
    db = Daemon(b, text=text_b)
    stop = threading.Event()
    opened = [0, set()]   # connections opened, slots opened once
    flooder = threading.Thread(target=flood, args=(pb, sources, each, stop,
                                                   opened))
    try:
        for d in (da, db):
            d.wait_running()
        wait_connected(a, b)
        wait_connected(b, a)
        qps = lcore_counters(b)
        gen = endpoint(b, a)["generation"]
        lines_before = db.stderr().count("\n")
        flooder.start()
        wait_until("the flood opening its connections",
                   lambda: len(opened[1]) == len(sources) * each)
        time.sleep(0.5)   # their handshakes under way
        da.kill()
        killed = time.monotonic()
        da = Daemon(a, text=with_secret(
            node_text(a, pa, [(b, "127.0.0.1", pb)]), path))
        da.wait_running()
        t0 = time.monotonic()   # a calls b from now on
        wait_until("a connected again through the flood", lambda: (
            lambda e: e["state"] == "connected" and e["generation"] > gen)(
                endpoint(b, a)), timeout=RECONNECT_BOUND_S)
        took = time.monotonic() - killed
        assert lcore_counters(b) == qps, (lcore_counters(b), qps)
        seconds = time.monotonic() - t0 + 1
        stop.set()
        flooder.join()
        lines = db.stderr().count("\n") - lines_before
        print(f"# peer back {took:.2f} s after its kill (start-up "
              f"included) under a flood of {opened[0]} "
              f"connections from {len(sources)} addresses, {each} at once "
              f"from each; callee logged {lines} lines")
        assert lines <= 10 * (int(seconds) + 4) + 20, lines
    finally:
        stop.set()
        if flooder.is_alive():
            flooder.join()
        stop_all((da, db))


def handshake_times(port, name, key, n=50):
    """Sorted seconds from connect to the refusal of a HELLO with the
    callee's own name, the challenge exchange first when key is given."""
    spent = []
    for _ in range(n):
        t0 = time.perf_counter()
        s = rnproto.connect(port)
        # As the daemon's own connections are: no Nagle delay between
        # PROOF and HELLO.
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if key is not None:
            rnproto.authenticate(s, key, "timer", 5, name)
        s.sendall(rnproto.hello(name, 5, 1, DATA_QP))
        expect_refusal(s, rnproto.REFUSE_NAME)
        spent.append(time.perf_counter() - t0)
        s.close()
    return sorted(spent)


def test_handshake_time_with_and_without_the_secret():
    """Not a pass/fail on time: prints what the challenge exchange adds on
    loopback, the figure docs/security.md quotes (goal: under 1 ms)."""
    path, key = secret_file("time")
    with_key, without = unique("ta"), unique("tb")
    pa, pb = free_port(), free_port()
    da = Daemon(with_key, text=with_secret(node_text(with_key, pa, []), path))
    db = Daemon(without, text=node_text(without, pb, [], secret=None))
    try:
        for d in (da, db):
            d.wait_running()
        auth = handshake_times(pa, with_key, key)
        plain = handshake_times(pb, without, None)
        n = len(auth)
        print(f"# handshake to a refused HELLO on loopback, {n} runs, median "
              f"(p90): with the secret {auth[n // 2] * 1e6:.0f} us "
              f"({auth[n * 9 // 10] * 1e6:.0f}), without "
              f"{plain[n // 2] * 1e6:.0f} us ({plain[n * 9 // 10] * 1e6:.0f})")
    finally:
        stop_all((da, db))


run_tests(globals())
