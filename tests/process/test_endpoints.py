#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for the control plane: two rnotifyd handshake and prove the
RDMA path with a READ of each other's identity; dead peers are declared in
time and come back with a new generation; simultaneous calls leave one
endpoint; silent, mute and garbage-sending peers hurt only themselves;
endpoint churn leaks nothing. Over loopback, and between two network
namespaces when run as root. Prints TAP. Usage: test_endpoints.py RNOTIFYD"""

import os
import shutil
import signal
import socket
import subprocess

import rnproto
from rntest import (DEAD_AFTER_MS, FAKE_PEER_DEAD_AFTER_MS, NOTIFY, SLOW_QPS,
                    Daemon, Pair, endpoint, endpoints, free_port,
                    lcore_counters, node_text, rss_kib, run_tests,
                    skip_unless, status, stop_all, unique, wait_connected,
                    wait_until)

# How late the declaration may come: one tick (half a heartbeat), plus
# scheduling on a busy 2-core machine. The daemon measures the silence
# itself.
DETECT_SLACK_MS = 250


def test_handshake_and_rdma_probe():
    p = Pair("h")
    try:
        a, b = p.wait_connected(0), p.wait_connected(1)
        sa, sb = status(p.names[0]), status(p.names[1])
        assert a["peer_session"] == sb["session"], (a, sb)
        assert b["peer_session"] == sa["session"], (b, sa)
        assert a["peer_generation"] == b["generation"], (a, b)
        assert b["peer_generation"] == a["generation"], (a, b)
        # Both advertise a native notification channel, TCP fallback and
        # notifications on.
        assert a["peer_caps"] == b["peer_caps"] == 7, (a, b)
        # The RDMA READ of the peer's identity keeps succeeding.
        wait_until("two more probes", lambda: p.ep(0)["probes_ok"] >=
                   a["probes_ok"] + 2)
        assert p.ep(0)["probes_bad"] == 0
        # Exactly one endpoint each: 2 data QPs + 1 notify QP, one set;
        # and the one to the node itself, idle until first used.
        for name in p.names:
            assert endpoints(name) == \
                {n: "connected" if n != name else "idle" for n in p.names}
            wait_until(f"{name}: one QP set", lambda n=name:
                       lcore_counters(n) == (3, 1))
    finally:
        p.stop()


def test_configured_peer_known_by_its_address_however_written():
    # b has a configured at ::ffff:127.0.0.1, the IPv4 address as a
    # dual-stack socket shows it, and waits for a's call, which comes from
    # 127.0.0.1: the same address, accepted. (The sim device's wire is
    # IPv4 only, so b cannot listen on :: itself here.)
    a, b = unique("ia"), unique("ib")
    pa, pb = free_port(), free_port()
    da = Daemon(a, text=node_text(a, pa, [(b, "127.0.0.1", pb)]))
    db = Daemon(b, text=node_text(b, pb, [(a, "::ffff:127.0.0.1", pa)],
                                  connect="on_demand"))
    try:
        for d in (da, db):
            d.wait_running()
        wait_connected(a, b)
        assert endpoint(b, a)["state"] == "connected"
        assert "configured at another address" not in db.stderr()
    finally:
        stop_all((da, db))


def test_native_channel_only_where_buffers_allow():
    """One bay per lcore: the second peer gets no native channel, and a
    node with notifications off advertises none."""
    hub, first, second, off = (unique("bh"), unique("b1"), unique("b2"),
                               unique("bo"))
    ports = {n: free_port() for n in (hub, first, second, off)}

    def node(name, notify=NOTIFY):
        return Daemon(name, text=node_text(name, ports[name], [
            (hub, "127.0.0.1", ports[hub])], notify=notify))

    # The hub only answers (no crossing calls, whose loser could hold the
    # bay while draining).
    d = {hub: Daemon(hub, text=node_text(hub, ports[hub], [
        (p, "127.0.0.1", ports[p]) for p in (first, second, off)],
        notify=NOTIFY + "endpoints_per_lcore = 1\n", connect="on_demand"))}
    try:
        # One peer at a time, each once the one before is connected: the
        # first takes the hub's one bay.
        for p, notify in ((first, NOTIFY), (second, NOTIFY),
                          (off, NOTIFY + "enabled = false\n")):
            d[p] = node(p, notify)
            d[p].wait_running()
            wait_connected(hub, p)
        # The node with notifications off offers TCP fallback only.
        assert endpoint(hub, off)["peer_caps"] == 2, endpoint(hub, off)
        # The hub offered its one bay's notify QP to the first (caps 7)
        # and had none left for the second (6).
        assert endpoint(first, hub)["peer_caps"] == 7, endpoint(first, hub)
        assert endpoint(second, hub)["peer_caps"] == 6, endpoint(second, hub)
        # 2 data QPs per endpoint, and the notify QP of the one bay.
        assert lcore_counters(hub) == (3 * 2 + 1, 3), lcore_counters(hub)
        assert lcore_counters(off) == (2, 1), lcore_counters(off)
    finally:
        stop_all(d.values())


def test_kill_9_then_restart_gets_new_generation():
    p = Pair("k")
    try:
        before = p.wait_connected(0)
        p.d[1].kill()
        failed = wait_until("the killed peer declared dead", lambda: (
            lambda e: e if e["state"] != "connected" else None)(p.ep(0)))
        assert failed["last_detect_ms"] <= DEAD_AFTER_MS + DETECT_SLACK_MS, \
            failed
        assert failed["to_failed"] >= 1, failed
        p.d[1] = p.start(1)
        p.d[1].wait_running()
        new_session = status(p.names[1])["session"]
        assert new_session != before["peer_session"]
        after = p.wait_connected(0, newer_than=before["generation"],
                                 session=new_session)
        # The probe reads the new incarnation's identity, not the old one.
        wait_until("a probe of the new incarnation", lambda: p.ep(0)[
            "probes_ok"] > after["probes_ok"])
        assert p.ep(0)["probes_bad"] == 0
        wait_until("old QPs gone", lambda: lcore_counters(p.names[0]) ==
                   (3, 1))
    finally:
        p.stop()


def test_silent_peer_declared_dead_in_time():
    p = Pair("s")
    try:
        before = p.wait_connected(0)
        os.kill(p.d[1].proc.pid, signal.SIGSTOP)   # alive, but silent
        try:
            failed = wait_until("the silent peer declared dead", lambda: (
                lambda e: e if e["state"] != "connected" else None)(p.ep(0)))
        finally:
            os.kill(p.d[1].proc.pid, signal.SIGCONT)
        assert "declared dead" in failed["last_error"], failed
        assert DEAD_AFTER_MS <= failed["last_detect_ms"] <= \
            DEAD_AFTER_MS + DETECT_SLACK_MS, failed
        # Back: the same process (same session), a new generation.
        after = p.wait_connected(0, newer_than=before["generation"],
                                 session=before["peer_session"])
        assert after["peer_generation"] > before["peer_generation"]
    finally:
        p.stop()


class FakePeer:
    """A listener speaking the protocol by hand (tests/process/rnproto.py)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]

    def accept(self, timeout=10):
        self.sock.settimeout(timeout)
        conn, _ = self.sock.accept()
        return conn

    def close(self):
        self.sock.close()


def test_simultaneous_connect_leaves_one_endpoint():
    for peer_name, ours_wins in (("zz-peer", True), ("0-peer", False)):
        fake = FakePeer()
        name = unique("m" + ("1" if ours_wins else "2"))
        # The test plays the peer step by step: on a busy machine that can
        # take longer than a handshake phase's default second.
        d = Daemon(name, text=node_text(
            name, free_port(), [(peer_name, "127.0.0.1", fake.port)],
            nic=SLOW_QPS, dead_after=FAKE_PEER_DEAD_AFTER_MS,
            connect_timeout=10000, secret=None))   # we play HELLO only
        try:
            d.wait_running()
            port = status(name)["control_port"]
            theirs_in = fake.accept()        # the daemon calls us
            ftype, body = rnproto.read_frame_skipping_heartbeats(theirs_in)
            assert ftype == rnproto.HELLO, ftype
            _, session, generation, _, n_qps = rnproto.accept_fields(body)
            # ...and we call it at the same time.
            ours = rnproto.connect(port)
            ours.sendall(rnproto.hello(peer_name, 77, 1,
                                       [(rnproto.QP_DATA, 0x500, 1)]))
            ftype, body = rnproto.read_frame_skipping_heartbeats(ours)
            if ours_wins:
                # The daemon's name sorts first: its call stays, ours is
                # refused, and we answer its HELLO.
                assert ftype == rnproto.REFUSE, ftype
                assert rnproto.refusal(body)[0] == 3, body   # DUPLICATE
                theirs_in.sendall(rnproto.hello(
                    peer_name, 77, 1, [(rnproto.QP_DATA, 0x500, 1)],
                    ftype=rnproto.ACCEPT))
                ftype, body = rnproto.read_frame_skipping_heartbeats(
                    theirs_in)
                assert ftype == rnproto.READY, ftype
            else:
                # Ours sorts first: the daemon drops its own call and
                # serves ours.
                assert ftype == rnproto.ACCEPT, ftype
                assert rnproto.accept_fields(body)[0] == name, body
                ours.sendall(rnproto.ready(1))
            e = wait_until("one endpoint connected", lambda: (
                lambda e: e if e["state"] == "connected" else None)(
                endpoint(name, peer_name)))
            assert e["to_connected"] == 1, e
            assert endpoints(name) == {peer_name: "connected",
                                       name: "idle"}, \
                endpoints(name)
            # Two data QPs: the daemon's notify QP went back when it
            # connected the endpoint, since the peer offered none.
            wait_until("one QP set", lambda: lcore_counters(name) == (2, 1))
            theirs_in.close()
            ours.close()
        finally:
            fake.close()
            assert d.stop() == 0, d.stderr()


def test_mute_peer_does_not_stall_the_others():
    fake = FakePeer()       # accepts TCP, never says a word
    p_name = unique("q")
    good = unique("qg")
    good_port = free_port()
    port = free_port()
    d = Daemon(p_name, text=node_text(p_name, port, [
        ("mute", "127.0.0.1", fake.port), (good, "127.0.0.1", good_port)]))
    g = Daemon(good, text=node_text(good, good_port,
                                    [(p_name, "127.0.0.1", port)]))
    held = []
    try:
        d.wait_running()
        g.wait_running()
        held.append(fake.accept())
        e = wait_until("the mute peer given up on", lambda: (
            lambda e: e if "timed out" in e["last_error"] else None)(
            endpoint(p_name, "mute")))
        # With the tests' secret, our call waits for its ANSWER first.
        assert "waiting for ANSWER timed out" in e["last_error"], e
        assert endpoint(p_name, good)["state"] == "connected"
    finally:
        for c in held:
            c.close()
        fake.close()
        stop_all((d, g))


def test_bad_frames_close_only_their_connection():
    p = Pair("g")
    try:
        before = p.wait_connected(0)
        port = status(p.names[0])["control_port"]
        cases = [
            (b"GET / HTTP/1.0\r\n\r\n", "wrong magic 0x47455420", None),
            (rnproto.frame(rnproto.HELLO, b"", version=4),
             "protocol version 4; this side speaks 8", 1),
            (rnproto.frame(14, b""), "unknown frame type 14", None),
            (rnproto.ready(1), "READY out of order", None),
            (rnproto.hello("x", 1, 1, []), "hello: 0 QPs", None),
            (b"RNTP\x08\x01\x00\x00\x7f\x00\x00\x00",
             "frame of 2130706432 bytes", None),
        ]
        for data, reason, refusal in cases:
            s = rnproto.connect(port)
            s.sendall(data)
            if refusal is not None:
                ftype, body = rnproto.read_frame(s)
                assert ftype == rnproto.REFUSE, ftype
                assert rnproto.refusal(body)[0] == refusal, body
            s.settimeout(10)
            assert s.recv(100) == b"", reason   # closed by the daemon
            s.close()
            wait_until(f"log line for {reason!r}", lambda r=reason:
                       r in p.d[0].stderr())
        assert p.ep(0)["generation"] == before["generation"], \
            "the good peer's endpoint was disturbed"
        assert p.d[0].proc.poll() is None
    finally:
        p.stop()


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


CHURN_CYCLES = 1000
WARM_UP_CYCLES = 200


def test_endpoint_churn_leaks_nothing():
    name = unique("c")
    # A generous handshake budget: on a loaded machine a handshake may
    # stall past a second, and leaks, not timing, are what this test is
    # about.
    d = Daemon(name, text=node_text(name, 0, [], nic=SLOW_QPS,
                                    dead_after=FAKE_PEER_DEAD_AFTER_MS,
                                    connect_timeout=10000, secret=None))
    try:
        d.wait_running()
        port = status(name)["control_port"]

        def cycle(i):
            s = rnproto.connect(port)
            s.sendall(rnproto.hello("churn", 99, i + 1,
                                    [(rnproto.QP_DATA, 0x600, 1)]))
            ftype, body = rnproto.read_frame_skipping_heartbeats(s)
            assert ftype == rnproto.ACCEPT, (i, ftype, body)
            s.sendall(rnproto.ready(i + 1) + rnproto.close())
            s.close()

        # Warm up until the allocators' high-water marks settle (malloc
        # keeps freed memory; timing decides how much). What leaks per
        # cycle is counted exactly below; RSS catches leaks of 2 KiB a
        # cycle and more (a QP set or a connection buffer: 50+ MiB).
        # Closed connections are freed as the next is accepted, so their
        # 64 KiB buffers do not pile up between ticks.
        for i in range(WARM_UP_CYCLES):
            cycle(i)
        wait_until("warm-up drained", lambda: lcore_counters(name) == (0, 0))
        fds, rss = fd_count(d.proc.pid), rss_kib(d.proc.pid)
        for i in range(WARM_UP_CYCLES, WARM_UP_CYCLES + CHURN_CYCLES):
            cycle(i)
        wait_until("every QP destroyed", lambda: lcore_counters(name) ==
                   (0, 0))
        e = endpoint(name, "churn")
        assert e["to_connected"] == WARM_UP_CYCLES + CHURN_CYCLES, e
        # A telemetry connection just closed here may still be open in
        # the daemon for a moment: its thread closes it on its next read.
        wait_until("no fd left behind", lambda: fd_count(d.proc.pid) <= fds,
                   timeout=5)
        grown = rss_kib(d.proc.pid) - rss
        assert grown < 2048, f"RSS grew {grown} KiB over {CHURN_CYCLES} cycles"
    finally:
        assert d.stop() == 0, d.stderr()


def sh(cmd):
    subprocess.run(cmd, shell=True, check=True, capture_output=True)


def test_two_network_namespaces_and_a_cut_link():
    skip_unless(os.geteuid() == 0 and shutil.which("ip"),
                "network namespaces need root and iproute2")
    ns = (f"rn-ep-a-{os.getpid()}", f"rn-ep-b-{os.getpid()}")
    veth = (f"rnea{os.getpid() % 10000}", f"rneb{os.getpid() % 10000}")
    addrs = ("10.98.0.1", "10.98.0.2")
    sh(f"ip netns add {ns[0]} && ip netns add {ns[1]} && "
       f"ip link add {veth[0]} type veth peer name {veth[1]} && "
       f"ip link set {veth[0]} netns {ns[0]} && "
       f"ip link set {veth[1]} netns {ns[1]}")
    p = None
    try:
        for i in (0, 1):
            sh(f"ip -n {ns[i]} addr add {addrs[i]}/24 dev {veth[i]} && "
               f"ip -n {ns[i]} link set {veth[i]} up && "
               f"ip -n {ns[i]} link set lo up")
        p = Pair("n", netns=ns, addrs=addrs)
        before = p.wait_connected(0)
        p.wait_connected(1)
        sh(f"ip -n {ns[0]} link set {veth[0]} down")
        for i in (0, 1):
            failed = wait_until("the cut declared", lambda i=i: (
                lambda e: e if e["state"] != "connected" else None)(p.ep(i)))
            # No packet crosses a downed link: only silence tells.
            assert DEAD_AFTER_MS <= failed["last_detect_ms"] <= \
                DEAD_AFTER_MS + DETECT_SLACK_MS, failed
        sh(f"ip -n {ns[0]} link set {veth[0]} up")
        p.wait_connected(0, newer_than=before["generation"],
                         session=before["peer_session"])
        p.wait_connected(1)
    finally:
        try:
            if p is not None:
                p.stop()
        finally:   # also when a daemon failed: no namespace left behind
            subprocess.run(f"ip netns del {ns[0]}; ip netns del {ns[1]}",
                           shell=True, capture_output=True)


run_tests(globals())
