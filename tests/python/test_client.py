# SPDX-License-Identifier: BSD-3-Clause
"""The module rnotify between two daemons on loopback: notifications
byte-exact and in order per sender to exactly the agent they name,
refusals, peer events, errors as OSError by errno, the client fd with
select and asyncio, the GIL released while waiting, peers added and
removed at run time."""

import asyncio
import errno
import os
import select
import subprocess
import sys
import threading
import time

import pytest

import rntest
from clienttest import (DEADLINE_S, Nodes, agent_name, connected,
                        events_until, first_send, has, lone_daemon, reaped,
                        send_retry,
                        take)

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "dataplane", "client", "python",
                        "examples")


def random_bytes(rng, lo, hi):
    return bytes(rng.randrange(256) for _ in range(rng.randint(lo, hi)))


def transfer(sender, receiver, node, agent, items):
    """Send items [(name, msg)] to agent on node; take what receiver gets
    meanwhile (a full ring or no credits: EAGAIN, then the receiver
    polls). Returns the notifications, once as many as were sent came."""
    got = []
    for name, msg in items:
        send_retry(sender, node, agent, name, msg,
                   drain=lambda: got.extend(receiver.poll()))
    got += take(receiver, receiver.poll, len(items) - len(got),
                f"deliveries to {agent}")
    return got


def test_send_poll_byte_exact(clients, rng):
    n = clients
    a = n.attach(n.a, agent_name("sender"))
    b = n.attach(n.b, agent_name("receiver"))
    assert (a.node, b.node) == (n.a, n.b)
    # Names and messages of every byte value, NUL included; empty ones;
    # some near the buffer (slot_size 4096, less the frame's lengths and
    # the agent).
    items = [(b"", b""), (b"\0", b"\0\xff\0"), (b"kv-7", b"block 7 ready"),
             (b"x" * 40, b"\xfe" * 3900)]
    items += [(random_bytes(rng, 0, 64), random_bytes(rng, 0, 2000))
              for _ in range(200)]
    got = transfer(a, b, n.b, b.agent, items)
    assert [(x.node, x.agent) for x in got] == [(n.a, a.agent)] * len(items)
    for i, (x, (name, msg)) in enumerate(zip(got, items)):
        assert (x.name, x.msg) == (name, msg), f"notification {i}"
        assert type(x.name) is bytes and type(x.msg) is bytes
    assert len(got) == len(items), got[len(items):]
    # The other way, str as UTF-8.
    send_retry(b, n.a, a.agent, "é", "ünïcode")
    assert take(a, a.poll, 1, "reply") == [(n.b, b.agent, "é".encode(),
                                            "ünïcode".encode())]
    assert b.poll() == [] and a.poll() == []


def test_order_per_sender_to_the_agent_named(clients, rng):
    # Three senders (two on a, one on b) send to two receivers on b and
    # one on a, each notification to a receiver drawn at random: each
    # receiver gets exactly those that named it, in send order per sender.
    n = clients
    senders = [n.attach(n.a, agent_name("s0")), n.attach(n.a, agent_name("s1")),
               n.attach(n.b, agent_name("s2"))]
    receivers = [n.attach(n.b, agent_name("r0")),
                 n.attach(n.b, agent_name("r1")),
                 n.attach(n.a, agent_name("r2"))]
    expect = {r.agent: [] for r in receivers}
    got = {r.agent: [] for r in receivers}

    def drain():
        for r in receivers:
            got[r.agent].extend(r.poll())

    for i in range(600):
        s = rng.choice(senders)
        r = rng.choice(receivers)
        msg = f"{s.agent}:{i}".encode()
        send_retry(s, r.node, r.agent, b"seq", msg, drain=drain)
        expect[r.agent].append((s.node, s.agent, b"seq", msg))
    for r in receivers:
        got[r.agent] += take(r, r.poll, len(expect[r.agent]) -
                             len(got[r.agent]), f"deliveries to {r.agent}")
    for r in receivers:
        # Per sender, the order sent; across senders, any interleaving.
        for s in senders:
            mine = [x for x in got[r.agent] if x.agent == s.agent]
            want = [x for x in expect[r.agent] if x[1] == s.agent]
            assert [tuple(x) for x in mine] == want, (r.agent, s.agent)
        assert len(got[r.agent]) == len(expect[r.agent]), r.agent
        assert r.poll() == []


def test_refused_for_an_absent_agent(clients):
    n = clients
    a, b = connected(n, "refused")
    absent = agent_name("absent")
    send_retry(a, n.b, absent, b"kv", b"to no one", cookie=77)
    events = events_until(a, has("refused"), "refusal")
    assert [(e.type, e.node, e.agent, e.cookie, e.status) for e in events] \
        == [("refused", n.b, absent, 77, -errno.ENOENT)], events
    # Nothing reached the agent that is there.
    assert b.poll() == []
    # An agent that detached is absent too, once its daemon saw it go: a
    # send in the moment before is delivered to the going client (and
    # lost with it), so send again until one is refused.
    b.detach()
    events, cookies = [], []
    deadline = time.monotonic() + DEADLINE_S
    while not any(e.type == "refused" for e in events):
        assert time.monotonic() < deadline, \
            f"refusal after detach: none after {DEADLINE_S} s ({cookies})"
        cookies.append(78 + len(cookies))
        send_retry(a, n.b, b.agent, b"kv", b"gone", cookie=cookies[-1])
        a.wait(1.0)
        events += a.events()
    refused = [(e.type, e.agent) for e in events]
    assert refused == [("refused", b.agent)] * len(refused), events
    assert {e.cookie for e in events} <= set(cookies), (events, cookies)


def test_busy_agent_is_refused_and_others_served(rnotify):
    """b never polls: past its deliver ring and [client] hold_max = 2
    frames kept for it, what comes for b is refused back to a as busy
    (-ENOBUFS), and c, another agent of b's node, is still served (the
    node pair's slots are not all kept for b). When b polls it gets
    exactly what was not refused, in order."""
    n = Nodes(rnotify, "busy", client="hold_max = 2\nring_size = 16\n")
    try:
        a, b = connected(n, "busy")
        c = n.attach(n.b, agent_name("busy-c"))
        total = 64
        for i in range(total):
            send_retry(a, n.b, b.agent, b"n", b"%d" % i, cookie=i)
        events = events_until(a, has("refused"), "a busy refusal")
        # The rest of the refusals (each send was refused or kept).
        first_send(a, n.b, c.agent, b"c", b"served")
        assert [(p.agent, p.msg) for p in take(c, c.poll, 1, "c's")] == \
            [(a.agent, b"served")]
        events += a.events()
        refused = [e for e in events if e.type == "refused"]
        assert all((e.agent, e.status, e.node) ==
                   (b.agent, -errno.ENOBUFS, n.b) for e in refused), refused
        # b takes what was kept for it: in order, none of it refused. A
        # poll gives the last one's ring entries back, and only then can
        # the lcore hand over what it held: poll until every frame is
        # either here or counted as refused at b's node.
        got = take(b, b.poll, 1, "b's kept ones")
        deadline = time.monotonic() + DEADLINE_S
        while sum(rntest.status(n.b)["client_busy"]) + len(got) < total:
            assert time.monotonic() < deadline, (len(got), total)
            b.wait(0.2)
            got += b.poll()
        refused += [e for e in a.events() if e.type == "refused"]
        seqs = [int(p.msg) for p in got]
        assert seqs == sorted(seqs), seqs
        assert not set(seqs) & {e.cookie for e in refused}, (seqs, refused)
        # Every frame was kept for b, at most its ring (15) and hold (2),
        # or refused as busy at b's node (a refusal that found no credit
        # back to a, which does not take its events while it sends, is
        # dropped on the way: counted at b's node all the same).
        assert len(seqs) <= 15 + 2, seqs
        busy = sum(rntest.status(n.b)["client_busy"])
        assert busy + len(seqs) == total, (busy, seqs)
    finally:
        n.stop()


def test_completion_when_asked(clients):
    n = clients
    a, b = connected(n, "acked")
    send_retry(a, n.b, b.agent, b"kv", b"ack me", cookie=2**64 - 1,
               want_completion=True)
    assert take(a, a.completions, 1, "completion") == [(2**64 - 1, 0)]
    assert take(b, b.poll, 1, "delivery")[0].msg == b"ack me"


def test_errors(clients):
    n = clients
    agent = agent_name("dup")
    a = n.attach(n.a, agent)
    with pytest.raises(OSError) as e:
        n.attach(n.a, agent)
    assert e.value.errno == errno.EADDRINUSE, e.value
    # The same name on the other daemon is another agent.
    n.attach(n.b, agent)
    with pytest.raises(FileNotFoundError) as e:
        a.send("no-such-node", "x", b"n", b"m")
    assert e.value.errno == errno.ENOENT
    for bad in ("", "x" * (a_max() + 1)):
        with pytest.raises(OSError) as e:
            n.attach(n.a, bad)
        assert e.value.errno == errno.EINVAL, (bad, e.value)
    with pytest.raises(ValueError):
        n.attach(n.a, "nul\0inside")
    # NIXL's agents are 36-character UUIDs; the longest name is allowed.
    n.attach(n.a, "a" * a_max())
    with pytest.raises(OSError) as e:
        a.send(n.b, "x", b"n", b"m" * 8192)
    assert e.value.errno == errno.EMSGSIZE
    with pytest.raises(TypeError):
        a.send(n.b, "x", 5, b"m")
    with pytest.raises(ValueError):
        a.poll(0)
    with pytest.raises(ValueError):
        a.poll(65)
    with pytest.raises(FileNotFoundError) as e:
        n.rn.Client("x", socket="/nonexistent/rnotify.sock")
    # Detached: the name is free again (once the daemon let go of it),
    # and the object says so.
    a.detach()
    a.detach()
    assert not a.attached
    with pytest.raises(ValueError):
        a.poll()
    rntest.wait_until("agent name free again",
                      lambda: n.attach_if_free(n.a, agent))


def a_max():
    import rnotify
    return rnotify.AGENT_MAX


def test_enotconn_after_the_daemon_stops(rnotify):
    name = rntest.unique("pystop")
    d = rntest.Daemon(name)
    try:
        d.wait_running()
        c = rnotify.Client(agent_name("orphan"),
                           socket=rnotify.socket_path(name))
        try:
            assert c.poll() == []
            assert not c.wait(0)
            assert d.stop() == 0
            # The daemon's end closes: the fd says so at once.
            r, _, _ = select.select([c.fileno()], [], [], DEADLINE_S)
            assert r == [c.fileno()], "fd not readable after the stop"
            for call in (c.poll, c.events, c.completions, c.wait,
                         lambda: c.send(name, "x", b"n", b"m")):
                with pytest.raises(OSError) as e:
                    call()
                assert e.value.errno == errno.ENOTCONN, (call, e.value)
        finally:
            c.detach()
        with pytest.raises(OSError) as e:
            rnotify.Client("late", socket=rnotify.socket_path(name))
        assert e.value.errno in (errno.ENOENT, errno.ECONNREFUSED), e.value
    finally:
        rntest.stop_all([d])


def test_peer_down_then_restarted(rnotify):
    n = None
    try:
        n = Nodes(rnotify, "pyev")
        a, _ = connected(n, "observer")
        assert a.events() == []
        n.pair.restart(1)   # kill -9 b, start it again
        events = events_until(a, has("peer_restarted"), "peer back")
        # Down, then back as a new incarnation of b: what it held is gone.
        assert [(e.type, e.node, e.agent, e.cookie) for e in events] == \
            [("peer_down", n.b, None, 0), ("peer_restarted", n.b, None, 0)], \
            events
        # And it works again, to a client of the new b.
        b = n.attach(n.b, agent_name("reborn"))
        send_retry(a, n.b, b.agent, b"after", b"restart")
        assert take(b, b.poll, 1, "after restart")[0].msg == b"restart"
    finally:
        if n is not None:
            n.stop()


def test_fd_readable_with_select(clients):
    n = clients
    a = n.attach(n.a, agent_name("fd-s"))
    b = n.attach(n.b, agent_name("fd-r"))
    fd = b.fileno()
    assert fd >= 0 and fd == b.fileno()
    assert select.select([fd], [], [], 0)[0] == []
    send_retry(a, n.b, b.agent, b"n", b"wake")
    assert select.select([fd], [], [], DEADLINE_S)[0] == [fd]
    assert take(b, b.poll, 1, "delivery")[0].msg == b"wake"
    # Readable until a call finds nothing left to take; then not.
    assert b.poll() == []
    assert select.select([fd], [], [], 0)[0] == []


def test_asyncio_add_reader(clients):
    n = clients
    a = n.attach(n.a, agent_name("aio-s"))
    b = n.attach(n.b, agent_name("aio-r"))
    count = 50

    async def main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        got = []

        def readable():
            got.extend(b.poll())
            if len(got) >= count and not done.done():
                done.set_result(list(got))

        loop.add_reader(b.fileno(), readable)
        try:
            for i in range(count):
                # Sent from the loop, between its turns.
                await loop.run_in_executor(None, send_retry, a, n.b,
                                           b.agent, b"aio", str(i))
            return await asyncio.wait_for(done, DEADLINE_S)
        finally:
            loop.remove_reader(b.fileno())

    got = asyncio.run(main())
    assert [x.msg for x in got] == [str(i).encode() for i in range(count)]


def test_asyncio_example_runs(clients):
    n = clients
    a = n.attach(n.a, agent_name("ex-s"))
    agent = agent_name("ex-r")
    p = subprocess.Popen([sys.executable,
                          os.path.join(EXAMPLES, "asyncio_watch.py"),
                          "--socket", n.socket(n.b), "--count", "3", agent],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    with reaped(p):
        # It says so once attached.
        line = p.stderr.readline()
        assert line.startswith(f"attached as {agent} on {n.b}"), line
        for i in range(3):
            send_retry(a, n.b, agent, f"kv-{i}", f"block {i} ready")
        out, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 0, err
    assert out.splitlines() == [f"{n.a} {a.agent} kv-{i} block {i} ready"
                                for i in range(3)], (out, err)


def test_sender_example_runs(clients):
    n = clients
    b = n.attach(n.b, agent_name("ex-send-r"))
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "send.py"),
                        "--socket", n.socket(n.a), n.b, b.agent, "kv-9",
                        "block 9 ready"],
                       capture_output=True, text=True, timeout=DEADLINE_S)
    assert r.returncode == 0, r.stderr
    x = take(b, b.poll, 1, "the example's send")[0]
    assert (x.node, x.name, x.msg) == (n.a, b"kv-9", b"block 9 ready")


def test_wait_releases_the_gil(clients):
    n = clients
    a, b = connected(n, "gil")
    result = []
    t = threading.Thread(target=lambda: result.append(b.wait(DEADLINE_S)))
    t.start()
    # The waiting thread holds no GIL: this one runs meanwhile.
    spins, end = 0, time.monotonic() + 0.3
    while time.monotonic() < end:
        spins += 1
    assert t.is_alive() and spins > 1000, spins
    send_retry(a, n.b, b.agent, b"n", b"wake up")
    t.join(DEADLINE_S)
    assert result == [True]
    assert b.poll()[0].msg == b"wake up"


def test_wait_times_out(clients):
    n = clients
    b = n.attach(n.b, agent_name("idle"))
    assert b.wait(0) is False
    t0 = time.monotonic()
    assert b.wait(0.05) is False
    assert time.monotonic() - t0 >= 0.04


def test_wait_refuses_a_bad_timeout(clients):
    """A timeout that is negative, NaN or past 2^31 ms is a ValueError, one
    that is not a number or comes twice a TypeError; None and numbers in
    range wait."""
    n = clients
    b = n.attach(n.b, agent_name("timeouts"))
    for bad in (-1, -0.001, float("nan"), float("inf"), 1e12):
        with pytest.raises(ValueError, match="timeout must be None or 0"):
            b.wait(bad)
        with pytest.raises(ValueError, match="timeout must be None or 0"):
            b.wait(timeout=bad)
    for bad in ("1", [1]):
        with pytest.raises(TypeError):
            b.wait(bad)
    with pytest.raises(TypeError):
        b.wait(1, 2)
    with pytest.raises(TypeError):
        b.wait(seconds=1)
    assert b.wait(0) is False
    assert b.wait(timeout=0.01) is False


def test_peers_added_and_removed_at_run_time(clients, rnotify):
    n = clients
    with lone_daemon("pyc") as name:
        c = rnotify.Client(agent_name("adder"),
                           socket=rnotify.socket_path(name))
        n.clients.append(c)
        b = n.attach(n.b, agent_name("added-r"))
        with pytest.raises(FileNotFoundError):
            c.send(n.b, b.agent, b"n", b"before")
        c.add_peer(n.b, "127.0.0.1", n.pair.ports[1])
        with pytest.raises(FileExistsError):
            c.add_peer(n.b, "127.0.0.1", n.pair.ports[1])
        for bad in (("bad name!", "127.0.0.1", 1), ("x", "not-an-ip", 1),
                    ("x", "127.0.0.1", 0)):
            with pytest.raises(OSError) as e:
                c.add_peer(*bad)
            assert e.value.errno == errno.EINVAL, (bad, e.value)
        with pytest.raises(ValueError):
            c.add_peer("x", "127.0.0.1", 70000)
        send_retry(c, n.b, b.agent, b"n", b"via an added peer")
        x = take(b, b.poll, 1, "delivery over the added peer")[0]
        assert (x.node, x.msg) == (name, b"via an added peer")
        assert rntest.endpoint(name, n.b)["state"] == "connected"
        c.remove_peer(n.b)
        events = events_until(c, has("peer_removed"), "removed")
        # Up when it connected, removed now (never down: it was removed).
        assert [(e.type, e.node) for e in events] == \
            [("peer_up", n.b), ("peer_removed", n.b)], events
        assert n.b not in rntest.endpoints(name)
        with pytest.raises(FileNotFoundError):
            c.send(n.b, b.agent, b"n", b"after")
        with pytest.raises(FileNotFoundError):
            c.remove_peer(n.b)
        # Added again: it works again.
        c.add_peer(n.b, "127.0.0.1", n.pair.ports[1])
        send_retry(c, n.b, b.agent, b"n", b"again")
        assert take(b, b.poll, 1, "again")[0].msg == b"again"
        n.detach_all()


def test_pingpong_example_runs(clients):
    n = clients
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, "pingpong.py"),
                        "--count", "50", n.socket(n.a), n.a, n.socket(n.b),
                        n.b],
                       capture_output=True, text=True, timeout=DEADLINE_S * 2)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("round trips: 50 of 64 bytes, waiting: p50 "), \
        r.stdout


def test_socket_from_the_environment(clients, monkeypatch):
    n = clients
    monkeypatch.setenv("RNOTIFY_SOCKET", n.socket(n.b))
    c = n.rn.Client(agent_name("env"))
    n.clients.append(c)
    assert c.node == n.b and isinstance(c, n.rn.Client)
    # Unset: the default daemon's socket (rnotify, not running here).
    monkeypatch.delenv("RNOTIFY_SOCKET")
    monkeypatch.setattr(n.rn, "socket_path", lambda: "/nonexistent/x.sock")
    with pytest.raises(FileNotFoundError) as e:
        n.rn.Client(agent_name("default"))
    assert "/nonexistent/x.sock" in str(e.value), e.value
