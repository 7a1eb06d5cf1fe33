#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for notifications between two rnotifyd, driven through the
diagnostic telemetry commands /rnotify/send and /rnotify/poll (each client
connection is its own application thread in the daemon). Native delivery in
order, credits and a slow receiver, the TCP fallback allowed and strict,
send order across the native and TCP channels, native channels off,
unknown and failed peers, a restarted receiver, many
concurrent senders, notifications to self, peers found by name among many
and in a slot taken back, a stuck worker lcore. Prints TAP.
Usage: test_notify.py RNOTIFYD"""

import contextlib
import errno
import math
import os
import re
import signal
import threading
import time

import rnproto
from rntest import (FAKE_PEER_DEAD_AFTER_MS, SLOW_QPS, Daemon, HeldReadyPair,
                    Pair, endpoint, endpoints, free_port, lcore_counters,
                    node_text, note, run_tests, seeded_random, status,
                    stop_all, telemetry, threads_of, unique,
                    wait_connected, wait_until)

SLOTS = 16
SLOT_SIZE = 4096
# A reconnection loses what was in flight (never replayed), and gives fresh
# credits: on a loaded machine, test_endpoints' 300 ms of silence must not
# count as a dead peer here.
NOTIFY_DEAD_AFTER_MS = 3000
# The sender's environment for a strict TCP fallback: a notification over a
# slot is refused, not sent over TCP.
STRICT = dict(os.environ, MC_RDMA_NOTIFY_OOB_FALLBACK="0")


def notify_cfg(extra="", slot_size=SLOT_SIZE, slots=SLOTS):
    return f"slots = {slots}\nslot_size = {slot_size}\n{extra}"


def send(sender, peer, name, msg):
    return telemetry(sender, f"/rnotify/send,{peer},{name},{msg}")["result"]


def first_send(src, dst, name, msg):
    """Send until the endpoint is up: -EAGAIN (connecting) sends nothing."""
    result = []

    def sent():
        result[:] = [send(src, dst, name, msg)]
        return result[0] != -errno.EAGAIN
    wait_until(f"{src} first send to {dst}", sent, every=0.01)
    return result[0]


def poll(node):
    r = telemetry(node, "/rnotify/poll")
    return list(zip(r["peer"], r["name"], r["msg"]))


def poll_all(node, want, what="deliveries"):
    got = []

    def enough():
        got.extend(poll(node))
        return len(got) >= want
    wait_until(what, enough)
    return got


def counters(node):
    s = status(node)
    return {k: s[k][0] for k in ("notify_sent", "notify_received",
                                 "notify_rejected", "notify_stale")}


def notify_pair(tag, notify=("", ""), env=(None, None), slot_size=SLOT_SIZE,
                connect="eager", dead_after=NOTIFY_DEAD_AFTER_MS,
                slots=(SLOTS, SLOTS), nic=""):
    """A Pair for notifications: notify, more [notify] keys for each side;
    nic, [nic] keys for both."""
    return Pair(tag, env=env, connect=connect, dead_after=dead_after,
                nic=nic,
                sides=[{"notify": notify_cfg(notify[i], slot_size, slots[i])}
                       for i in (0, 1)])


def test_native_delivery_in_order():
    p = notify_pair("o")
    try:
        for i in range(10):
            r = send(p.a, p.b, f"kv{i}", f"block {i} ready")
            assert r == 0, (i, r, endpoint(p.a, p.b))
        got = poll_all(p.b, 10)
        assert got == [(p.a, f"kv{i}", f"block {i} ready")
                       for i in range(10)], got
        assert counters(p.a)["notify_sent"] == 10, counters(p.a)
        assert counters(p.b)["notify_received"] == 10, counters(p.b)
        # Empty name, empty msg: the frame is just its two lengths.
        assert send(p.a, p.b, "", "") == 0
        got = poll_all(p.b, 1)
        assert got == [(p.a, "", "")], got
    finally:
        p.stop()


def test_simultaneous_first_send_both_ways():
    # on_demand on both sides: the two first sends make both call at once,
    # and the crossing handshakes must end in one endpoint that carries
    # both notifications, natively, once each.
    p = notify_pair("x", connect="on_demand")
    try:
        assert endpoint(p.a, p.b)["state"] == "idle"
        results = {}

        def send_first(src, dst):
            results[src] = first_send(src, dst, "first", f"from {src}")

        threads = [threading.Thread(target=send_first, args=(x, y))
                   for x, y in ((p.a, p.b), (p.b, p.a))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert results == {p.a: 0, p.b: 0}, results
        assert poll_all(p.b, 1) == [(p.a, "first", f"from {p.a}")]
        assert poll_all(p.a, 1) == [(p.b, "first", f"from {p.b}")]
        for x, y in ((p.a, p.b), (p.b, p.a)):
            assert endpoint(x, y)["state"] == "connected"
            assert counters(x)["notify_sent"] == 1
            assert counters(x)["notify_received"] == 1
        assert poll(p.a) == [] and poll(p.b) == []
    finally:
        p.stop()


def test_answer_to_a_first_notification_goes():
    """The application of the node whose handshake ends last answers the
    first notification it polls, at once: the answer goes (0), never
    -ENOTCONN nor -EAGAIN (test_clients.py has the same for a client).
    b's handshake is held open (a's READY held back) while a, connected,
    sends natively; whatever b's poll gets by then, and after, b can
    answer."""
    p = HeldReadyPair("hr")
    try:
        assert first_send(p.a, p.b, "n", "ping") == 0
        assert p.holder.held.is_set(), "a sent before its READY went"
        # b's lcore has the ping: delivered, or kept until b's endpoint
        # is connected.
        wait_until(f"{p.b}'s lcore has the ping", lambda: sum(
            sum(status(p.b).get(k, [0])) for k in ("notify_received",
                                                   "notify_early")) > 0)
        got = poll(p.b)
        note(f"polled before b's handshake ended: {got}")
        if got:
            assert got == [(p.a, "n", "ping")], got
            r = send(p.b, p.a, "n", "pong")
            assert r == 0, f"b's answer while its handshake was open: {r}"
        p.holder.release()
        if not got:
            got = poll_all(p.b, 1)
            assert got == [(p.a, "n", "ping")], got
            r = send(p.b, p.a, "n", "pong")
            assert r == 0, f"b's answer: {r}"
        assert poll_all(p.a, 1) == [(p.b, "n", "pong")]
        p.stop()
    finally:
        p.kill()


def test_slow_receiver_gets_backpressure_not_rnr():
    p = notify_pair("r")
    try:
        failures = endpoint(p.a, p.b)["to_failed"]   # start-up races count
        results = [send(p.a, p.b, "n", str(i)) for i in range(SLOTS + 4)]
        # Exactly the receiver's slots go out; then -EAGAIN, nothing lost.
        assert results[:SLOTS] == [0] * SLOTS, results
        assert results[SLOTS:] == [-errno.EAGAIN] * 4, results
        got = poll_all(p.b, SLOTS)
        poll(p.b)   # releases the slots: credits flow back
        wait_until("credits back", lambda: send(p.a, p.b, "n", "again") == 0)
        got += poll_all(p.b, 1)
        assert [m for _, _, m in got] == [str(i) for i in range(SLOTS)] + \
            ["again"], got
        e = endpoint(p.a, p.b)
        assert e["state"] == "connected" and e["to_failed"] == failures, e
    finally:
        p.stop()


def sim_fault(node, fault, peer):
    """/rnotify/sim_fault,FAULT,PEER on node: its result."""
    return telemetry(node, f"/rnotify/sim_fault,{fault},{peer}")["result"]


def send_burst(sender, peer, count, name, msg):
    """COUNT notifications NAME0.. in one rn_notify_send_burst()."""
    return telemetry(sender, f"/rnotify/send_burst,{peer},{count},{name},"
                     f"{msg}")["result"]


def test_burst_in_order_up_to_the_credits():
    # One request of many: each goes natively, in order, once; a burst over
    # the receiver's credits goes as far as they reach and says how far,
    # and the rest, sent again after the receiver polled, follows in order.
    # a has twice b's slots: its send slots never bind before b's credits.
    p = notify_pair("u", slots=(2 * SLOTS, SLOTS))
    try:
        assert send_burst(p.a, p.b, 10, "n", "ten") == 10
        # 22 of a's send slots are free, but b, not polling, has 6
        # credits left.
        r = send_burst(p.a, p.b, SLOTS, "c", "x")
        assert r == 6, r
        r = send_burst(p.a, p.b, SLOTS, "c", "x")
        assert r == -errno.EAGAIN, r

        def credits_back(writes, more):
            wait_until("credit WRITEs", lambda:
                       status(p.b)["credit_writes"][0] >= writes + more)
            # A SEND after them on the same QP lands after them (RC
            # order): once a has it, a's credit word has them too.
            assert send(p.b, p.a, "fence", "x") == 0
            assert poll_all(p.a, 1) == [(p.b, "fence", "x")]

        writes = status(p.b)["credit_writes"][0]
        got = poll_all(p.b, 16)   # and releases them: credits flow back
        assert [name for _, name, _ in got] == \
            [f"n{i}" for i in range(10)] + [f"c{i}" for i in range(6)], got
        # Two credit WRITEs (one per 8 reposts) give a its 16 credits back:
        # a burst reads the credit word once and sends all it asks for.
        credits_back(writes, 2)
        r = send_burst(p.a, p.b, 4, "w", "x")
        assert r == 4, r
        assert [name for _, name, _ in poll_all(p.b, 4)] == \
            [f"w{i}" for i in range(4)]
        # The rest, as the credits come back (a WRITE per 8 reposts).
        rest = []

        def send_rest():
            k = len(rest)
            r = send_burst(p.a, p.b, 10 - k, f"r{k}-", "x")
            if r <= 0 and r != -errno.EAGAIN:
                rest.append(r)   # unexpected: stop waiting, fail below
                return True
            rest.extend(f"r{k}-{i}" for i in range(max(r, 0)))
            return len(rest) == 10
        wait_until("the rest sent", send_rest)
        assert all(isinstance(x, str) for x in rest), rest
        writes = status(p.b)["credit_writes"][0]
        got = poll_all(p.b, 10)
        assert [name for _, name, _ in got] == rest, got
        # Over max_inline, from send slots, in the same request, once the
        # WRITE for reposts 17 to 24 came (30 sent, 10 credits then).
        credits_back(writes, 1)
        r = send_burst(p.a, p.b, 3, "s", "m" * 200)
        assert r == 3, r
        got = poll_all(p.b, 3)
        assert [(name, len(msg)) for _, name, msg in got] == \
            [(f"s{i}", 127) for i in range(3)], got   # telemetry: 127 shown
        assert counters(p.a)["notify_sent"] == 33, counters(p.a)
    finally:
        p.stop()


def test_burst_unknown_and_failed_peers():
    p = notify_pair("v")
    try:
        assert send_burst(p.a, "nosuchpeer", 3, "n", "x") == -errno.ENOENT
        p.d[1].kill()
        wait_until("failed", lambda: endpoint(p.a, p.b)["state"] != "connected")
        assert send_burst(p.a, p.b, 3, "n", "x") in (-errno.ENOTCONN,
                                                     -errno.EAGAIN)
    finally:
        p.stop()


SMALL_SLOT = 256   # telemetry commands carry at most ~1000 bytes


def test_fallback_allowed_and_strict():
    big = "x" * (SMALL_SLOT - 8)   # name "y" makes it one byte too many
    p = notify_pair("f", slot_size=SMALL_SLOT)
    try:
        r = send(p.a, p.b, "y", big)
        assert r == 0, r
        got = poll_all(p.b, 1)
        # Telemetry strings stop at 127 characters: compare what shows.
        assert got == [(p.a, "y", big[:len(got[0][2])])], got[0][:2]
        assert counters(p.a)["notify_sent"] == 0, counters(p.a)  # TCP
    finally:
        p.stop()
    p = notify_pair("s", env=(STRICT, None), slot_size=SMALL_SLOT)
    try:
        r = send(p.a, p.b, "y", big)
        assert r == -errno.EMSGSIZE, r
        assert send(p.a, p.b, "fits", "yes") == 0
        assert poll_all(p.b, 1) == [(p.a, "fits", "yes")]
    finally:
        p.stop()


def test_burst_over_a_slot_sends_its_first_over_tcp():
    # Only a request's first notification goes over TCP: a burst of ones
    # over a slot sends one at a time, each in order, and one among others
    # stops the burst before it; with the fallback off, the first is
    # refused as a single send would be.
    big = "b" * SMALL_SLOT
    p = notify_pair("z", slot_size=SMALL_SLOT)
    try:
        for k in range(3):
            assert send_burst(p.a, p.b, 3 - k, f"t{k}-", big) == 1, k
        got = poll_all(p.b, 3)
        assert [name for _, name, _ in got] == ["t0-0", "t1-0", "t2-0"], got
        assert counters(p.a)["notify_sent"] == 0, counters(p.a)  # TCP
    finally:
        p.stop()
    # Mixed: inline, from a send slot, inline go in one request; one over a
    # slot stops it there, and goes first in the next, over TCP, alone.
    p = notify_pair("w", slot_size=SMALL_SLOT)
    try:
        r = [send_burst(p.a, p.b, "8;100;8;300", "a", "m"),
             send_burst(p.a, p.b, "300;8", "b", "m"),
             send_burst(p.a, p.b, "8;8", "c", "m")]
        assert r == [3, 1, 2], r
        got = poll_all(p.b, 6)
        assert [(name, len(msg)) for _, name, msg in got] == \
            [("a0", 8), ("a1", 100), ("a2", 8), ("b0", 127), ("c0", 8),
             ("c1", 8)], got
        assert counters(p.a)["notify_sent"] == 5, counters(p.a)
        assert status(p.b)["notify_order_overdue"] == 0, status(p.b)
    finally:
        p.stop()
    p = notify_pair("y", env=(STRICT, None), slot_size=SMALL_SLOT)
    try:
        assert send_burst(p.a, p.b, 2, "n", big) == -errno.EMSGSIZE
        assert send_burst(p.a, p.b, 2, "n", "fits") == 2
        assert [name for _, name, _ in poll_all(p.b, 2)] == ["n0", "n1"]
    finally:
        p.stop()


def test_send_order_kept_across_native_and_tcp():
    # Small notifications go natively, those over a slot over TCP: from one
    # sender to one receiver they still arrive in send order, though the
    # receiver's poll takes one ring before the other when both wait.
    # Each one's name is its place in the send order.
    p = notify_pair("q", slot_size=SMALL_SLOT)
    try:
        # At most SLOTS small ones: the receiver does not poll meanwhile.
        sizes = ["s"] * SLOTS + ["b"] * 24
        seeded_random().shuffle(sizes)
        for i, kind in enumerate(sizes):
            msg = kind * (SMALL_SLOT if kind == "b" else 8)
            assert send(p.a, p.b, str(i), msg) == 0, i
        got = poll_all(p.b, len(sizes))
        assert [int(name) for _, name, _ in got] == list(range(len(sizes)))
        assert counters(p.a)["notify_sent"] == sizes.count("s")
        s = status(p.b)
        assert s["notify_order_parked"] > 0, s   # both channels were used
        assert s["notify_order_overdue"] == 0, s
    finally:
        p.stop()


def test_peer_without_native_channel():
    # b has notifications off: a falls back to TCP, or refuses if strict.
    p = notify_pair("w", notify=("", "enabled = false\n"))
    try:
        assert endpoint(p.a, p.b)["peer_caps"] == 2
        assert send(p.a, p.b, "k", "over tcp") == 0
        assert poll_all(p.b, 1) == [(p.a, "k", "over tcp")]
        assert counters(p.a)["notify_sent"] == 0
    finally:
        p.stop()
    p = notify_pair("x", notify=("", "enabled = false\n"), env=(STRICT, None))
    try:
        assert send(p.a, p.b, "k", "v") == -errno.ENOTSUP
    finally:
        p.stop()


def test_refused_notify_qp_leaves_the_endpoint_on_tcp():
    """A device that refuses the notify QP leaves the endpoint without a
    native channel, not without a connection: here a send ring of 4096
    slots of frames up to 512 bytes inline (36864 BBs, past the 32768 the
    sim allows). Notifications go over TCP, and a line says why."""
    a, b = unique("qa"), unique("qb")
    ports = {a: free_port(), b: free_port()}
    big = notify_cfg("max_inline = 504\nendpoints_per_lcore = 1\n",
                     slot_size=1024, slots=4096)
    d = [Daemon(x, text=node_text(x, ports[x], [(y, "127.0.0.1", ports[y])],
                                  nic="cq_size = 131072\n", notify=big,
                                  dead_after=NOTIFY_DEAD_AFTER_MS))
         for x, y in ((a, b), (b, a))]
    try:
        for x in d:
            x.wait_running()
        for x, y in ((a, b), (b, a)):
            wait_connected(x, y)
        for x in (a, b):   # data QPs only, and their CQEs (2 x 129)
            assert (status(x)["qps"], status(x)["cq_reserved"]) == \
                ([2], [258]), status(x)
        assert endpoint(a, b)["native"] == 0, endpoint(a, b)
        assert send(a, b, "k", "over tcp") == 0
        assert poll_all(b, 1) == [(a, "k", "over tcp")]
        assert counters(a)["notify_sent"] == 0
        # Said by the side that made its QP first (the other then hears
        # that there is no channel to have).
        logs = d[0].stderr() + d[1].stderr()
        assert "no native channel: the notify QP (4096 slots, frames up " \
               "to 512 bytes inline) failed: Invalid argument (said once " \
               "per worker)" in logs, logs
    finally:
        stop_all(d)


def test_cq_too_small_for_a_native_channel_is_said_at_start():
    """4096 slots need more CQEs than a CQ of the default [nic] cq_size
    (8192) holds: no endpoint could ever have a native channel, and the
    worker says so as it starts, with the size that would do."""
    name = unique("cq")
    d = Daemon(name, text=node_text(name, free_port(), [], notify=notify_cfg(
        "endpoints_per_lcore = 1\n", slot_size=256, slots=4096)))
    try:
        d.wait_running()
        # Data QPs 2 x 129, notify QP 4096 x 4 BBs + 4096 receives.
        assert "needs 20738 CQEs, more than a CQ of [nic] cq_size = 8192 " \
               "holds (8192): its endpoints get none; raise cq_size to " \
               "20738" in d.stderr(), d.stderr()
    finally:
        assert d.stop() == 0, d.stderr()


def test_native_off_by_environment():
    off = dict(os.environ, MC_RDMA_NOTIFY_ENABLED="0")
    p = notify_pair("e", env=(off, off))
    try:
        assert status(p.a)["qps"][0] == 2   # data QPs only
        assert send(p.a, p.b, "k", "v") == 0
        assert poll_all(p.b, 1) == [(p.a, "k", "v")]
        assert counters(p.a)["notify_sent"] == 0
    finally:
        p.stop()


def test_unknown_and_failed_peers():
    p = notify_pair("u")
    try:
        assert send(p.a, "nobody", "k", "v") == -errno.ENOENT
        p.d[1].kill()
        wait_until("the peer declared dead", lambda: endpoint(p.a, p.b)[
            "state"] != "connected")
        # Fails fast with a clear error, and never queues for later.
        assert send(p.a, p.b, "k", "v") == -errno.ENOTCONN
    finally:
        p.stop()


CONNECT_TIMEOUT_S = 1.0   # node_text's connect_timeout_ms


def test_sends_to_unreachable_peer_fail_in_bounded_time():
    # Nobody listens (refused at once), or nobody answers at all (a
    # documentation address: the call waits out connect_timeout_ms). Sends
    # never block, never succeed, and turn into -ENOTCONN within the
    # connect timeout; nothing is queued for later.
    me = unique("g")
    ghosts = [("refused", "127.0.0.1", free_port()),
              ("silent", "198.51.100.7", free_port())]
    d = Daemon(me, text=node_text(me, free_port(), ghosts,
                                  notify=notify_cfg(), connect="on_demand"))
    try:
        d.wait_running()
        for ghost, _, _ in ghosts:
            start = time.monotonic()
            results = []
            while len(results) < 8:
                results.append(send(me, ghost, "k", str(len(results))))
                if results[-1] == -errno.EAGAIN:
                    time.sleep(0.25)
            elapsed = time.monotonic() - start
            assert set(results) <= {-errno.EAGAIN, -errno.ENOTCONN}, results
            assert results[-1] == -errno.ENOTCONN, (ghost, results)
            assert elapsed < CONNECT_TIMEOUT_S + 2.5, (ghost, elapsed)
            assert endpoint(me, ghost)["last_error"] != "", ghost
        assert poll(me) == []
    finally:
        assert d.stop() == 0, d.stderr()


def test_restarted_receiver_gets_only_new_notifications():
    p = notify_pair("t")
    try:
        assert send(p.a, p.b, "before", "1") == 0
        assert poll_all(p.b, 1) == [(p.a, "before", "1")]
        p.restart(1)
        wait_until("sendable", lambda: send(p.a, p.b, "after", "2") == 0)
        assert poll_all(p.b, 1) == [(p.a, "after", "2")]
        # The new incarnation got that one only: nothing of the old one
        # (which its fresh counters could not show as stale) came again.
        assert poll(p.b) == []
        assert counters(p.b)["notify_received"] == 1, counters(p.b)
    finally:
        p.stop()


def test_retired_incarnation_never_touches_its_replacement():
    # a holds every slot b filled (its application has not polled) when b
    # restarts. The old incarnation's slots, completions and releases must
    # stay its own: the replacement's credits are exactly its own slots,
    # both ways, and only its own notifications reach it.
    p = notify_pair("z")
    try:
        for i in range(SLOTS):
            for x, y in ((p.b, p.a), (p.a, p.b)):
                r = send(x, y, "old", str(i))
                assert r == 0, (x, i, r)
        wait_until("all held", lambda: counters(p.a)["notify_received"] ==
                   SLOTS)
        p.restart(1)
        now = endpoint(p.a, p.b)
        # Delivered before b died: still a's, once, in order; releasing
        # them goes to the retired incarnation, not to the new one.
        got = poll_all(p.a, SLOTS)
        assert got == [(p.b, "old", str(i)) for i in range(SLOTS)], got
        poll(p.a)
        for x, y in ((p.b, p.a), (p.a, p.b)):
            wait_until(f"{x} sendable", lambda x=x, y=y: send(
                x, y, "new", "0") == 0)
            results = [send(x, y, "new", str(i)) for i in range(1, SLOTS + 1)]
            assert results == [0] * (SLOTS - 1) + [-errno.EAGAIN], (x, results)
            got = poll_all(y, SLOTS)
            assert got == [(x, "new", str(i)) for i in range(SLOTS)], got
        left = poll(p.a) + poll(p.b)
        assert left == [], left
        assert counters(p.a)["notify_rejected"] == 0, counters(p.a)
        assert_same_incarnation(p, now)
        # Its slots all given back, the retired incarnation is gone: one
        # QP set left (2 data QPs + 1 notify QP).
        wait_until("retired QPs freed", lambda: lcore_counters(p.a) ==
                   (3, 1))
    finally:
        p.stop()


def test_restarted_sender_loses_nothing_that_arrived():
    # Notifications that reached the receiver before the sender died are
    # still delivered, in order, and before those of its next incarnation.
    p = notify_pair("s")
    try:
        for i in range(3):
            assert send(p.a, p.b, f"before{i}", str(i)) == 0
        wait_until("all three arrived", lambda: counters(p.b)[
            "notify_received"] == 3)
        p.restart(0)
        wait_until("sendable", lambda: send(p.a, p.b, "after", "x") == 0)
        got = poll_all(p.b, 4)
        assert got == [(p.a, f"before{i}", str(i)) for i in range(3)] + \
            [(p.a, "after", "x")], got
        assert counters(p.b)["notify_stale"] == 0
    finally:
        p.stop()


SENDERS = 4
EACH = 40


def send_in_order(src, dst, tag, errors):
    """EACH notifications named tag, msg 0, 1, ...; on backpressure, again
    (the receiver polls meanwhile). A failure goes to errors: an exception
    in a thread would vanish."""
    try:
        for i in range(EACH):
            while (r := send(src, dst, tag, str(i))) != 0:
                if r != -errno.EAGAIN:
                    errors.append((tag, r))
                    return
    except AssertionError as e:
        errors.append((tag, str(e)))


def test_concurrent_senders_keep_order_and_lose_nothing():
    p = notify_pair("c")
    failures = endpoint(p.a, p.b)["to_failed"]
    errors = []

    def sender(k):
        send_in_order(p.a, p.b, f"s{k}", errors)

    try:
        threads = [threading.Thread(target=sender, args=(k,))
                   for k in range(SENDERS)]
        for t in threads:
            t.start()
        got = []
        while any(t.is_alive() for t in threads) or \
                len(got) < SENDERS * EACH:
            got += poll(p.b)
            if not any(t.is_alive() for t in threads) and \
                    len(got) < SENDERS * EACH:
                got += poll_all(p.b, SENDERS * EACH - len(got))
        for t in threads:
            t.join()
        assert endpoint(p.a, p.b)["to_failed"] == failures, endpoint(p.a,
                                                                     p.b)
        assert errors == [], errors
        assert len(got) == SENDERS * EACH, len(got)
        for k in range(SENDERS):
            mine = [int(m) for _, n, m in got if n == f"s{k}"]
            assert mine == list(range(EACH)), (k, mine)
    finally:
        p.stop()


def test_senders_on_several_lcores_keep_order_and_lose_nothing():
    # Two worker lcores on each node (sharing CPU 1: this machine has two).
    # a's endpoint to b is on one worker, its endpoint to itself on the
    # other; b sends to a meanwhile. Threads send on every stream at once:
    # a's lcores both send, and a's application polls deliveries from both.
    two = "lcores = 0-2\ncpus = 0,1,1\n"
    a, b = unique("la"), unique("lb")
    pa, pb = free_port(), free_port()
    d = [Daemon(x, text=node_text(x, port, [(y, "127.0.0.1", peer_port)],
                                  notify=notify_cfg(), dataplane=two,
                                  dead_after=NOTIFY_DEAD_AFTER_MS))
         for x, port, y, peer_port in ((a, pa, b, pb), (b, pb, a, pa))]
    streams = [(a, b, f"ab{k}") for k in range(2)] + \
              [(a, a, f"aa{k}") for k in range(2)] + \
              [(b, a, f"ba{k}") for k in range(2)]
    errors = []
    try:
        for x in d:
            x.wait_running()
        assert len(status(a)["worker_lcores"]) == 2, status(a)
        first_send(a, b, "warm", "up")
        first_send(a, a, "warm", "up")
        first_send(b, a, "warm", "up")
        assert endpoint(a, b)["lcore"] != endpoint(a, a)["lcore"]
        threads = [threading.Thread(target=send_in_order, args=s + (errors,))
                   for s in streams]
        for t in threads:
            t.start()
        got = {a: [], b: []}
        want = {a: 4 * EACH + 2, b: 2 * EACH + 1}
        while any(t.is_alive() for t in threads) or \
                any(len(got[n]) < want[n] for n in got):
            for n in got:
                got[n] += poll(n)
            if not any(t.is_alive() for t in threads):
                for n in got:
                    if len(got[n]) < want[n]:
                        got[n] += poll_all(n, want[n] - len(got[n]))
        for t in threads:
            t.join()
        assert errors == [], errors
        for n in got:
            assert len(got[n]) == want[n], (n, len(got[n]))
        for src, dst, tag in streams:
            mine = [int(m) for p, t, m in got[dst] if p == src and t == tag]
            assert mine == list(range(EACH)), (tag, mine)
    finally:
        stop_all(d)


def test_poll_takes_every_ring_in_turn():
    # A worker whose ring always holds a full batch must not keep another's
    # waiting: each poll starts at the next ring. Node a has two workers,
    # its endpoint to b on one, to itself on the other. One stream floods
    # its ring with three batches (the poll takes 64); the other's single
    # notification comes within three polls (three rings: two workers',
    # TCP's). Both ways round, so that the flooded ring is once the first.
    two = "lcores = 0-2\ncpus = 0,1,1\n"
    a, b = unique("ra"), unique("rb")
    pa, pb = free_port(), free_port()
    d = [Daemon(x, text=node_text(x, port, [(y, "127.0.0.1", peer_port)],
                                  notify="slots = 256\nslot_size = 4096\n",
                                  dataplane=two,
                                  dead_after=NOTIFY_DEAD_AFTER_MS))
         for x, port, y, peer_port in ((a, pa, b, pb), (b, pb, a, pa))]

    def received():
        return sum(status(a)["notify_received"])
    try:
        for x in d:
            x.wait_running()
        first_send(b, a, "warm", "up")
        first_send(a, a, "warm", "up")
        poll_all(a, 2)
        assert endpoint(a, b)["lcore"] != endpoint(a, a)["lcore"]
        for flood, single in ((b, a), (a, b)):
            base = received()
            for k in range(3):
                assert send_burst(flood, a, 64, f"f{k}-", "x") == 64
            assert send(single, a, "single", "x") == 0
            wait_until("all in the rings", lambda: received() == base + 193)
            got = []
            for _ in range(3):
                got += poll(a)
                if (single, "single", "x") in got:
                    break
            assert (single, "single", "x") in got, (flood, len(got))
            got += poll_all(a, 193 - len(got))
            assert len(got) == 193, len(got)
    finally:
        stop_all(d)


def assert_same_incarnation(p, before):
    """a's endpoint to b is still the one it was: connected, never reset."""
    after = endpoint(p.a, p.b)
    assert after["state"] == "connected", after
    assert after["generation"] == before["generation"], after
    assert after["to_failed"] == before["to_failed"], after


def test_malformed_frame_is_rejected_and_its_slot_reposted():
    # A SEND one byte longer than its frame's lengths say: the receiver
    # counts and logs it, never delivers it, and reposts its slot; the
    # endpoint, and the notifications around it, go on untouched.
    p = notify_pair("m")
    try:
        e = endpoint(p.a, p.b)
        assert send(p.a, p.b, "k", "before") == 0
        assert sim_fault(p.a, "bad_frame", p.b) == 0
        assert send(p.a, p.b, "k", "after") == 0
        assert poll_all(p.b, 2) == [(p.a, "k", "before"), (p.a, "k", "after")]
        wait_until("rejected", lambda: counters(p.b)["notify_rejected"] == 1)
        assert counters(p.b)["notify_received"] == 2, counters(p.b)
        assert "rejected: lengths do not add up" in p.d[1].stderr()
        # The rejected slot was reposted: once b has reposted the rest too,
        # its credit WRITEs (one per SLOTS / 2 reposts) give a every one of
        # b's slots again; without that one, a would get only half back.
        poll(p.b)   # releases the two
        writes = status(p.b)["credit_writes"][0]
        rest = [send(p.a, p.b, "r", str(i)) for i in range(SLOTS - 3)]
        assert rest == [0] * (SLOTS - 3), rest
        assert len(poll_all(p.b, SLOTS - 3)) == SLOTS - 3
        poll(p.b)   # releases them
        wait_until("credit WRITEs", lambda: status(p.b)["credit_writes"][0]
                   == writes + 2)
        time.sleep(0.2)   # for the last to land
        results = [send(p.a, p.b, "n", str(i)) for i in range(SLOTS + 1)]
        assert results == [0] * SLOTS + [-errno.EAGAIN], results
        assert [m for _, _, m in poll_all(p.b, SLOTS)] == \
            [str(i) for i in range(SLOTS)]
        assert_same_incarnation(p, e)
    finally:
        p.stop()


def test_tcp_notification_after_a_rejected_frame_does_not_wait():
    # The rejected frame counted in the TCP one's place in send order: the
    # receiver still counts it, and the TCP one goes at once, in order,
    # instead of waiting for it (a second, then out of order, overdue).
    p = notify_pair("r", slot_size=SMALL_SLOT)
    try:
        big = "b" * SMALL_SLOT   # over a slot: over TCP
        assert send(p.a, p.b, "1", "native") == 0
        assert sim_fault(p.a, "bad_frame", p.b) == 0
        assert send(p.a, p.b, "2", big) == 0
        assert send(p.a, p.b, "3", "native") == 0
        got = poll_all(p.b, 3)
        assert [name for _, name, _ in got] == ["1", "2", "3"], got
        assert counters(p.b)["notify_rejected"] == 1, counters(p.b)
        assert status(p.b)["notify_order_overdue"] == 0, status(p.b)
    finally:
        p.stop()


REJECTED_LINE = re.compile(r"rejected: lengths do not add up \(and (\d+) more "
                           r"on this lcore since its last such line\)")


def test_rejected_frames_logged_at_most_once_a_second():
    # A peer that sends malformed frames by the thousand must not make the
    # receiving worker write as many log lines: each is counted, and a line
    # a second says how many more there were.
    p = notify_pair("k")
    try:
        def suppressed():
            """Per log line, how many it says went unlogged before it."""
            return [int(n) for n in REJECTED_LINE.findall(p.d[1].stderr())]

        start = time.monotonic()
        for _ in range(10):
            assert sim_fault(p.a, "bad_frame", p.b) == 0
        elapsed = time.monotonic() - start
        wait_until("rejected", lambda: counters(p.b)["notify_rejected"] == 10)
        # A second after the last, every line of the burst is written, and
        # the next rejected frame gets a line.
        time.sleep(1.1)
        burst = suppressed()
        assert 1 <= len(burst) <= 1 + math.ceil(elapsed), (burst, elapsed)
        assert burst[0] == 0, burst   # nothing came before the first
        # The next line says how many of the burst went unlogged since the
        # burst's last line: more, a second apart, until one is logged.
        sent = 10

        def one_more_logged():
            nonlocal sent
            assert sim_fault(p.a, "bad_frame", p.b) == 0
            sent += 1
            wait_until("rejected", lambda: counters(p.b)[
                "notify_rejected"] == sent)
            time.sleep(1.1)   # its line written, if it has one
            return len(suppressed()) > len(burst)
        wait_until("a line after the burst", one_more_logged, timeout=30)
        lines = suppressed()
        assert len(lines) == len(burst) + 1, (lines, burst)
        # Every rejected frame has a line of its own or is counted by the
        # next line: a count that is wrong, or never said, breaks the sum
        # (with the burst's frames mostly unlogged, a real one: 9 when the
        # burst took less than a second).
        assert len(lines) + sum(lines) == sent, (lines, sent)
        assert send(p.a, p.b, "k", "after") == 0
        assert poll_all(p.b, 1) == [(p.a, "k", "after")]
    finally:
        p.stop()


def test_device_events_are_logged_and_counted():
    # An asynchronous event of a worker's NIC, which no CQE reports (here
    # the sim's port going down; a CQ overrun or a fatal device error on a
    # ConnectX), is logged and counted by the control thread.
    p = notify_pair("v")
    try:
        assert sum(status(p.a)["device_events"]) == 0, status(p.a)
        assert sim_fault(p.a, "port_event", p.b) == 0
        wait_until("counted", lambda: sum(status(p.a)["device_events"]) == 1)
        assert "device event: port error, port 1" in p.d[0].stderr()
        assert sum(status(p.b)["device_events"]) == 0, status(p.b)
        assert send(p.a, p.b, "k", "after") == 0
        assert poll_all(p.b, 1) == [(p.a, "k", "after")]
    finally:
        p.stop()


def test_fatal_device_event_fails_the_workers_endpoints():
    # A fatal device event (a CQ that stopped, or the whole device) leaves
    # the worker's queues dead: its endpoints fail, saying why, and stay
    # failed, so that sends say so instead of vanishing into queues that
    # never complete; a peer calling in is refused, told why. (The sim
    # raises the event alone.)
    p = notify_pair("w")
    try:
        assert sim_fault(p.a, "cq_event", p.b) == 0
        wait_until("failed", lambda: endpoint(p.a, p.b)["state"] ==
                   "failed")
        e = endpoint(p.a, p.b)
        assert e["last_error"] == "its worker's device failed (CQ error " \
            "(overrun)); restart rnotifyd", e
        assert "device event: CQ error (overrun)" in p.d[0].stderr()
        failures = e["to_failed"]
        wait_until("b refused", lambda: "worker for it failed" in
                   endpoint(p.b, p.a)["last_error"])
        e = endpoint(p.a, p.b)   # no retry, none of b's calls taken
        assert e["state"] == "failed" and e["to_failed"] == failures, e
        assert send(p.a, p.b, "k", "v") == -errno.ENOTCONN
        # An endpoint first used there (to itself: the same one worker)
        # fails at once instead of connecting for ever.
        assert first_send(p.a, p.a, "k", "v") == -errno.ENOTCONN
        assert "its worker's device failed" in \
            endpoint(p.a, p.a)["last_error"]
        assert sum(status(p.a)["device_events"]) == 1
        assert status(p.a)["out_of_service"] == [1], status(p.a)
        assert status(p.b)["out_of_service"] == [0], status(p.b)
    finally:
        p.stop()


def send_report(sender, peer, cookie, name, msg):
    return telemetry(sender, f"/rnotify/send_report,{peer},{cookie},{name},"
                     f"{msg}")["result"]


def reports_until(node, want):
    """The completion reports node gives, until there are want of them."""
    got = []

    def enough():
        r = telemetry(node, "/rnotify/completions")
        got.extend(zip(r["cookie"], r["status"]))
        return len(got) >= want
    wait_until("completion reports", enough)
    return got


@contextlib.contextmanager
def stopped(daemon):
    """daemon stopped (SIGSTOP): its NIC acknowledges nothing. The body
    runs once every thread of it stopped, not once the signal was sent: a
    thread running on another core may still answer for a moment."""
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        wait_until(f"{daemon.name} stopped", lambda: all(
            state == "T" for _, state, _ in threads_of(daemon.proc.pid)),
            every=0.01)
        yield
    finally:
        daemon.proc.send_signal(signal.SIGCONT)


def test_completion_reports_acknowledged_and_failed():
    # A send that asks for it gets one report: 0 once the peer's NIC
    # acknowledged it, -EPIPE when its QP failed with it in flight (the
    # peer may or may not have it), also when the endpoint is freed
    # without the CQEs that would have said so (its CQ overran).
    # The fault must find the SEND to the stopped peer still in flight.
    # With the default ACK timeout, the retries of that SEND, or of the
    # endpoint's RDMA probe (a READ every 500 ms), give up about half a
    # second (8 x 67 ms) after it went: the endpoint fails on its own and
    # the fault finds none (-ENOTCONN); a loaded machine can take that
    # long between two telemetry calls. SLOW_QPS keeps both in flight for
    # 34 s, and the peer is found dead after 30 s: longer than any wait.
    slow = dict(nic=SLOW_QPS, dead_after=FAKE_PEER_DEAD_AFTER_MS)
    p = notify_pair("k", **slow)
    try:
        assert send_report(p.a, p.b, 7, "k", "acked") == 0
        assert reports_until(p.a, 1) == [(7, 0)]
        assert poll_all(p.b, 1) == [(p.a, "k", "acked")]
        # b stops: nothing is acknowledged. a's notify QP fails locally
        # with the SEND in flight; its flush fails it at once, long before
        # its retries run out or a finds b dead and frees the endpoint.
        with stopped(p.d[1]):
            assert send_report(p.a, p.b, 8, "k", "in flight") == 0
            assert sim_fault(p.a, "local_qp", p.b) == 0
            assert reports_until(p.a, 1) == [(8, -errno.EPIPE)]
            assert endpoint(p.a, p.b)["state"] == "connected"
    finally:
        p.stop()
    p = notify_pair("o", **slow)
    try:
        with stopped(p.d[1]):
            assert send_report(p.a, p.b, 9, "k", "in flight") == 0
            # a's CQ stops: no CQE comes for that SEND, nor any flush;
            # the endpoint fails and is freed once its drain gives up.
            assert sim_fault(p.a, "cq_overrun", p.b) == 0
            assert reports_until(p.a, 1) == [(9, -errno.EPIPE)]
            e = endpoint(p.a, p.b)
            assert e["state"] == "failed" and "CQ error (overrun)" in \
                e["last_error"], e
        assert telemetry(p.a, "/rnotify/completions")["cookie"] == []
    finally:
        p.stop()


def test_local_notify_fault_leaves_data_qps_working():
    # A local fault closes the native channel, never the endpoint: the
    # peer is told, the data QPs go on, and once both sides drained the
    # failed channel a new one is added, in the same incarnation.
    p = notify_pair("l")
    try:
        # A window's worth each way first: the credit words count them.
        for x, y in ((p.a, p.b), (p.b, p.a)):
            for i in range(SLOTS):
                assert send(x, y, "before", str(i)) == 0
            assert poll_all(y, SLOTS) == [(x, "before", str(i))
                                          for i in range(SLOTS)]
        # One delivery held on each side (not polled yet): a failed
        # channel waits for its slots before it retires.
        for x, y in ((p.a, p.b), (p.b, p.a)):
            got = counters(y)["notify_received"]
            assert send(x, y, "held", "1") == 0
            wait_until("held", lambda y=y, got=got: counters(y)[
                "notify_received"] == got + 1)
        e = endpoint(p.a, p.b)
        eb = endpoint(p.b, p.a)
        assert sim_fault(p.a, "local_qp", p.b) == 0
        # The failed channel never falls back: -EPIPE, not TCP.
        wait_until("the channel closed", lambda: send(p.a, p.b, "k", "x") ==
                   -errno.EPIPE)
        assert "failed locally" in p.d[0].stderr()
        # The peer is told, and stops sending into the failed QP: its
        # SENDs would exhaust their retries there and reset the endpoint.
        wait_until("the peer told", lambda: send(p.b, p.a, "k", "y") ==
                   -errno.EPIPE)
        assert "the peer's notify QP failed" in p.d[1].stderr()
        # The endpoint and its data QPs go on, both sides: more RDMA
        # probes succeed, and neither side reconnected.
        for x, y, before in ((p.a, p.b, e), (p.b, p.a, eb)):
            wait_until("more probes", lambda x=x, y=y, before=before:
                       endpoint(x, y)["probes_ok"] >= before["probes_ok"] + 2)
            assert endpoint(x, y)["native"] == 0
        assert_same_incarnation(p, e)
        after = endpoint(p.b, p.a)
        assert after["generation"] == eb["generation"], after
        assert after["to_failed"] == eb["to_failed"], after
        # The held deliveries released, both channels retire and a new
        # one is added: native again both ways, still the same incarnation.
        assert poll(p.a) == [(p.b, "held", "1")]
        assert poll(p.b) == [(p.a, "held", "1")]
        for x, y in ((p.a, p.b), (p.b, p.a)):
            wait_until("native again", lambda x=x, y=y: endpoint(x, y)[
                "native"] == 1)
        assert endpoint(p.a, p.b)["native_added"] + \
            endpoint(p.b, p.a)["native_added"] == 2
        # Natively, with the new channel's credits: exactly its slots
        # (the old channel's credit count is none of them).
        for x, y in ((p.a, p.b), (p.b, p.a)):
            got = counters(y)["notify_received"]
            results = [send(x, y, "k", str(i)) for i in range(SLOTS + 1)]
            assert results == [0] * SLOTS + [-errno.EAGAIN], (x, results)
            assert poll_all(y, SLOTS) == [(x, "k", str(i))
                                          for i in range(SLOTS)]
            assert counters(y)["notify_received"] == got + SLOTS
        assert_same_incarnation(p, e)
    finally:
        p.stop()


def hub_text(name, cqs):
    # One data QP (129 CQEs) and a notify QP of 16 slots (80 CQEs: 16 x 4
    # BBs, room for an agent frame inline, and 16 receives) per endpoint:
    # a 1024-entry CQ holds four such endpoints (836), then one more
    # without its notify QP (965), then none.
    return node_text(name, 0, [], nic=SLOW_QPS + "data_qps = 1\n"
                     f"cq_size = 1024\ncqs_per_lcore = {cqs}\n",
                     notify=notify_cfg("endpoints_per_lcore = 16\n"),
                     dead_after=FAKE_PEER_DEAD_AFTER_MS, connect_timeout=10000,
                     secret=None)   # fake peers without the challenge


def call(port, name, native=True):
    """A fake peer calls the hub, with a notify QP if native; returns
    (socket, the hub's capabilities)."""
    qps = [(rnproto.QP_DATA, 0x700, 1)]
    caps = rnproto.CAP_TCP_FALLBACK
    if native:   # and notifications on: a channel may be offered later
        qps.append((rnproto.QP_NOTIFY, 0x701, 1, SLOTS, SLOT_SIZE, SLOTS))
        caps |= rnproto.CAP_NATIVE_NOTIFY | rnproto.CAP_NOTIFY_ENABLED
    s = rnproto.connect(port)
    s.sendall(rnproto.hello(name, 5, 1, qps, caps=caps))
    try:
        ftype, body = rnproto.read_frame_skipping_heartbeats(s)
    except ConnectionError:
        ftype = None   # the hub could not open the endpoint
    if ftype != rnproto.ACCEPT:
        s.close()
        return None, None
    s.sendall(rnproto.ready(1))
    return s, rnproto.accept_fields(body)[3]


def self_node(tag, notify="", env=None):
    name = unique(tag)
    d = Daemon(name, text=node_text(name, free_port(), [],
                                    notify=notify_cfg(notify, SMALL_SLOT)),
               env=env)
    d.wait_running()
    return name, d


def test_notification_to_self():
    # A node's own name is a peer like any other: the endpoint's QPs are
    # looped back, so the same native path carries it, in order, once.
    me, d = self_node("me")
    try:
        assert endpoint(me, me)["state"] == "idle"   # made at first use
        assert first_send(me, me, "kv0", "block 0") == 0
        for i in range(1, SLOTS):
            assert send(me, me, f"kv{i}", f"block {i}") == 0
        # Every receive slot is taken now: backpressure, nothing lost.
        assert send(me, me, "over", "credit") == -errno.EAGAIN
        got = poll_all(me, SLOTS)
        assert got == [(me, f"kv{i}", f"block {i}") for i in range(SLOTS)], \
            got
        c = counters(me)
        assert c["notify_sent"] == SLOTS and c["notify_received"] == SLOTS, c
        poll(me)   # gives the slots back: credits return to ourselves
        wait_until("credits back", lambda: send(me, me, "again", "") == 0)
        assert poll_all(me, 1) == [(me, "again", "")]
        # The RDMA READ probe of our own identity, over the loopback.
        wait_until("probed", lambda: endpoint(me, me)["probes_ok"] > 0)
        e = endpoint(me, me)
        assert e["state"] == "connected" and e["probes_bad"] == 0, e
        assert e["peer_caps"] == 7, e   # native, fallback, notify on
        # Too large for a slot: handed over locally, not natively, and in
        # send order with the native ones around it.
        big = "x" * (SMALL_SLOT - 8)
        kinds = ["s", "b", "s", "s", "b", "b", "s", "b"]
        for i, kind in enumerate(kinds):
            assert send(me, me, str(i), big if kind == "b" else "v") == 0
        got = poll_all(me, len(kinds))
        assert [name for _, name, _ in got] == \
            [str(i) for i in range(len(kinds))], got
        assert counters(me)["notify_sent"] == SLOTS + 1 + kinds.count("s")
    finally:
        assert d.stop() == 0, d.stderr()
    me, d = self_node("ms", env=STRICT)
    try:
        assert first_send(me, me, "y", "x" * (SMALL_SLOT - 8)) == \
            -errno.EMSGSIZE
    finally:
        assert d.stop() == 0, d.stderr()
    # No native channel at all: still delivered, without any QP send.
    me, d = self_node("mo", notify="enabled = false\n")
    try:
        assert first_send(me, me, "k", "v") == 0
        assert poll_all(me, 1) == [(me, "k", "v")]
        assert counters(me)["notify_sent"] == 0
        assert endpoint(me, me)["peer_caps"] == 2
    finally:
        assert d.stop() == 0, d.stderr()


def test_self_gets_a_native_channel_when_a_bay_frees():
    # One bay. A peer's endpoint takes it; the endpoint to this node itself,
    # made next, has none and hands its notifications over locally. The
    # peer goes: the bay goes to the endpoint to itself, its new QP is
    # connected to itself, and what follows goes natively, in order.
    me, x = unique("sm"), unique("sx")
    pm, px = free_port(), free_port()
    common = dict(dead_after=NOTIFY_DEAD_AFTER_MS, connect_timeout=10000)
    d = {me: Daemon(me, text=node_text(
        me, pm, [], notify=notify_cfg("endpoints_per_lcore = 1\n"),
        **common))}
    try:
        d[me].wait_running()
        d[x] = Daemon(x, text=node_text(x, px, [(me, "127.0.0.1", pm)],
                                        notify=notify_cfg(), **common))
        d[x].wait_running()
        wait_connected(me, x)
        assert endpoint(me, x)["native"] == 1
        sent = counters(me)["notify_sent"]
        assert first_send(me, me, "0", "local") == 0
        assert send(me, me, "1", "local") == 0
        assert endpoint(me, me)["native"] == 0
        assert counters(me)["notify_sent"] == sent   # not by a SEND
        assert d[x].stop() == 0, d[x].stderr()
        wait_until("a native channel added", lambda: endpoint(me, me)[
            "native"] == 1)
        e = endpoint(me, me)
        # peer_caps stays what the start said (6: no notify QP then), as
        # for a peer's endpoint given a channel later.
        assert e["native_added"] == 1 and e["peer_caps"] == 6, e
        for i in range(2, 5):
            assert send(me, me, str(i), "native") == 0
        got = poll_all(me, 5)
        assert [name for _, name, _ in got] == [str(i) for i in range(5)], \
            got
        assert counters(me)["notify_sent"] == sent + 3, counters(me)
        assert endpoint(me, me)["state"] == "connected"
    finally:
        stop_all(d.values())


def test_cq_capacity_growth_and_failure():
    # Without growth: the fifth endpoint has no native channel, the next
    # ones cannot open at all, and the ones already open never notice.
    hub = unique("cq1")
    d = Daemon(hub, text=hub_text(hub, 1))
    held = []
    try:
        d.wait_running()
        port = status(hub)["control_port"]
        caps = []
        for i in range(8):
            s, c = call(port, f"f{i}")
            held.append(s)
            caps.append(c)
        assert caps[:4] == [7] * 4, caps
        assert caps[4] == 6, caps          # data QP only: TCP fallback
        assert caps[5:] == [None] * 3, caps   # no room even for that
        s = status(hub)
        assert s["cqs"][0] == 1 and s["no_cq_room"][0] >= 3, s
        for i in range(5):
            assert endpoint(hub, f"f{i}")["state"] == "connected", i
        # A closed endpoint's reservation comes back once it drained, and
        # the hub offers it to f4, which connected without a native
        # channel; f4 refuses (no buffers on its side), and the room goes
        # to the next caller.
        held[0].sendall(rnproto.close())
        ftype, body = rnproto.read_frame_skipping_heartbeats(held[4])
        assert ftype == rnproto.NOTIFY_QP, ftype
        gen, step, _, offer = rnproto.notify_qp_fields(body)
        assert step == rnproto.QP_OFFER and len(body) == 8 + 24, body
        held[4].sendall(rnproto.notify_qp(1, rnproto.QP_REFUSE,
                                          rnproto.QP_NO_ROOM, offer))
        wait_until("offer dropped", lambda: "no buffers free" in d.stderr())

        def room_again():
            s, c = call(port, "g0")
            held.append(s)
            return c == 7
        wait_until("room again", room_again)
    finally:
        for x in held:
            if x is not None:
                x.close()
        assert d.stop() == 0, d.stderr()
    # With room to grow: a second CQ, and every endpoint native.
    hub = unique("cq2")
    d = Daemon(hub, text=hub_text(hub, 2))
    held = []
    try:
        d.wait_running()
        port = status(hub)["control_port"]
        for i in range(8):
            s, c = call(port, f"f{i}")
            held.append(s)
            assert c == 7, (i, c)
        assert status(hub)["cqs"][0] == 2
        # A caller without a native channel is given no notify QP: its
        # CQEs and a bay stay free for callers that have one.
        qps = status(hub)["qps"][0]
        s, c = call(port, "h0", native=False)
        held.append(s)
        assert c == 6 and status(hub)["qps"][0] == qps + 1, (c, status(hub))
    finally:
        for x in held:
            x.close()
        assert d.stop() == 0, d.stderr()


def names_hub(tag):
    # One data QP (129 CQEs) per caller: a 32768-entry CQ holds 250.
    name = unique(tag)
    return name, Daemon(name, text=node_text(
        name, 0, [], nic=SLOW_QPS + "data_qps = 1\ncq_size = 32768\n",
        notify=notify_cfg(), dead_after=FAKE_PEER_DEAD_AFTER_MS,
        connect_timeout=10000, secret=None))


def read_notify(sock):
    """(name, msg) of the next NOTIFY frame on a fake peer's socket, which
    has no native channel: no native notification came before it."""
    ftype, body = rnproto.read_frame_skipping_heartbeats(sock)
    assert ftype == rnproto.NOTIFY, (ftype, body)
    assert body[:4] == b"\0\0\0\0", body[:4]   # native_before
    body = body[4:]
    n = int.from_bytes(body[:4], "little")
    m = int.from_bytes(body[4 + n:8 + n], "little")
    assert len(body) == 8 + n + m, body
    return body[4:4 + n].decode(), body[8 + n:].decode()


def test_every_grown_cq_carries_notifications():
    # The hub's CQ holds one endpoint's QPs (a data QP, 129 CQEs, and a
    # notify QP of 16 slots, 48, in 256): its second peer's endpoint makes
    # its lcore grow a second CQ. Notifications then go natively both ways
    # on both endpoints: the lcore polls the CQ it grew too.
    hub, p1, p2 = unique("gh"), unique("g1"), unique("g2")
    ports = {n: free_port() for n in (hub, p1, p2)}

    def text(me, peers):
        return node_text(me, ports[me], [(x, "127.0.0.1", ports[x])
                                         for x in peers],
                         nic="data_qps = 1\ncq_size = 256\n"
                         "cqs_per_lcore = 2\n", notify=notify_cfg(),
                         dead_after=NOTIFY_DEAD_AFTER_MS)
    ds = [Daemon(hub, text=text(hub, [p1, p2])),
          Daemon(p1, text=text(p1, [hub])), Daemon(p2, text=text(p2, [hub]))]
    try:
        for d in ds:
            d.wait_running()
        for x, y in ((hub, p1), (hub, p2), (p1, hub), (p2, hub)):
            wait_connected(x, y)
            assert endpoint(x, y)["native"] == 1, (x, y)
        assert status(hub)["cqs"][0] == 2
        for peer in (p1, p2):
            for x, y in ((hub, peer), (peer, hub)):
                got = counters(y)["notify_received"]
                assert send(x, y, "k", peer) == 0, (x, y)
                assert poll_all(y, 1) == [(x, "k", peer)], (x, y)
                assert counters(y)["notify_received"] == got + 1   # natively
    finally:
        stop_all(ds)


def test_peers_found_by_name_among_many():
    # Each send looks its peer up by name in an index: among many callers
    # (without a notify QP, so each notification arrives on its caller's
    # socket), each one reaches the caller it names, in any order, and
    # names that only look alike are not found. The second round finds
    # most names where the sending thread last found them (its guesses,
    # 64 for 33 names: some share one, and each must still be right).
    hub, d = names_hub("nm")
    names = [f"p{i}" for i in range(30)] + ["x" * 31, "p1x", "P2"]
    socks = {}
    try:
        d.wait_running()
        port = status(hub)["control_port"]
        for n in names:
            socks[n], caps = call(port, n, native=False)
            assert caps is not None, n
        for i, n in enumerate(reversed(names)):
            wait_connected(hub, n)
            assert send(hub, n, "k", f"v{i}") == 0, n
        for i, n in enumerate(reversed(names)):
            assert read_notify(socks[n]) == ("k", f"v{i}"), n
        for i, n in enumerate(names):
            assert send(hub, n, "again", f"w{i}") == 0, n
        for i, n in enumerate(names):
            assert read_notify(socks[n]) == ("again", f"w{i}"), n
        for n in ["p", "p3x", "p10 ", "x" * 30, "x" * 32, "x" * 40]:
            assert send(hub, n, "k", "v") == -errno.ENOENT, n
    finally:
        for x in socks.values():
            x.close()
        assert d.stop() == 0, d.stderr()


def test_full_table_gives_a_closed_slot_a_new_name():
    # With the endpoint table full of callers that came and went, a new
    # caller takes back the first closed slot: the name index then finds
    # the new name there, and no longer the old one, not even for the
    # thread that sent to the old one there before (its guess is stale).
    hub, d = names_hub("nf")
    late = None
    try:
        d.wait_running()
        port = status(hub)["control_port"]
        # RN_MAX_ENDPOINTS, less the hub's own name (notifications to
        # self), fills the table.
        for n in range(1023):
            s, caps = call(port, f"m{n}", native=False)
            assert caps is not None, n
            if n == 0:
                wait_connected(hub, "m0")
                assert send(hub, "m0", "k", "v") == 0
                assert read_notify(s) == ("k", "v")
            s.sendall(rnproto.close())
            s.close()
        wait_until("every caller closed", lambda: lcore_counters(hub) ==
                   (0, 0), timeout=60)
        late, caps = call(port, "late", native=False)
        assert caps is not None
        wait_connected(hub, "late")
        assert send(hub, "late", "k", "v") == 0
        assert read_notify(late) == ("k", "v")
        assert send(hub, "m0", "k", "v") == -errno.ENOENT   # taken back
        assert send(hub, "m1", "k", "v") != -errno.ENOENT   # still known
        # /rnotify/endpoints lists the full table in pages of 256.
        first = telemetry(hub, "/rnotify/endpoints")
        assert (len(first["name"]), first["next"], first["total"]) == \
            (256, 256, 1024), {k: first[k] for k in ("next", "total")}
        listed = endpoints(hub)
        assert len(listed) == 1024 and "late" in listed and \
            "m0" not in listed and listed["m1022"] == "closed", len(listed)
        assert telemetry(hub, "/rnotify/endpoints,x") is None
    finally:
        if late is not None:
            late.close()
        assert d.stop() == 0, d.stderr()


def test_unused_notify_qp_gives_its_bay_back():
    # The caller offers a notify QP before it knows whether the callee has
    # one. With one bay on its lcore: once connected to a peer without
    # native notifications, that QP and its bay go back, and the next peer
    # called gets a native channel.
    hub, full, off = unique("uh"), unique("uf"), unique("uo")
    ports = {n: free_port() for n in (hub, full, off)}
    d = [Daemon(hub, text=node_text(
            hub, ports[hub], [(full, "127.0.0.1", ports[full]),
                              (off, "127.0.0.1", ports[off])],
            notify=notify_cfg("endpoints_per_lcore = 1\n"),
            dead_after=NOTIFY_DEAD_AFTER_MS, connect="on_demand")),
         Daemon(full, text=node_text(full, ports[full], [],
                                     notify=notify_cfg(),
                                     dead_after=NOTIFY_DEAD_AFTER_MS)),
         Daemon(off, text=node_text(off, ports[off], [],
                                    notify=notify_cfg("enabled = false\n"),
                                    dead_after=NOTIFY_DEAD_AFTER_MS))]
    try:
        for x in d:
            x.wait_running()
        assert first_send(hub, off, "k", "tcp") == 0
        assert endpoint(hub, off)["peer_caps"] == 2
        # 2 data QPs; the notify QP it offered is gone.
        wait_until("the unused notify QP gone",
                   lambda: lcore_counters(hub) == (2, 1))
        sent = status(hub)["notify_sent"][0]
        assert first_send(hub, full, "k", "native") == 0
        assert endpoint(hub, full)["peer_caps"] == 7
        assert endpoint(full, hub)["peer_caps"] == 7
        assert status(hub)["notify_sent"][0] == sent + 1   # natively
        assert poll_all(full, 1) == [(hub, "k", "native")]
        assert poll_all(off, 1) == [(hub, "k", "tcp")]
    finally:
        stop_all(d)


def test_replacement_waits_for_the_bay_of_the_one_it_replaces():
    # One bay on a's lcore, held by b's endpoint, and a's application has
    # not polled what b sent. b restarts and calls again: the replaced
    # incarnation cannot give its bay back while a holds its slot, so the
    # new one waits for it (half of connect_timeout_ms), and once a polls
    # it opens with its native channel instead of living without one.
    a, b = unique("wa"), unique("wb")
    pa, pb = free_port(), free_port()
    text = {
        a: node_text(a, pa, [(b, "127.0.0.1", pb)], connect="on_demand",
                     notify=notify_cfg("endpoints_per_lcore = 1\n"),
                     dead_after=NOTIFY_DEAD_AFTER_MS, connect_timeout=10000),
        b: node_text(b, pb, [(a, "127.0.0.1", pa)], notify=notify_cfg(),
                     dead_after=NOTIFY_DEAD_AFTER_MS, connect_timeout=10000),
    }
    d = {x: Daemon(x, text=text[x]) for x in (a, b)}
    try:
        for x in d.values():
            x.wait_running()
        assert first_send(b, a, "held", "1") == 0
        wait_until("delivered", lambda: counters(a)["notify_received"] == 1)
        gen = endpoint(a, b)["generation"]
        d[b].kill()
        d[b] = Daemon(b, text=text[b])
        d[b].wait_running()
        wait_until("the new incarnation waits for the bay",
                   lambda: "for a bay still draining" in d[a].stderr())
        assert poll(a) == [(b, "held", "1")]   # and the slot goes back
        wait_until("reconnected", lambda: (lambda e: e["state"] ==
                   "connected" and e["generation"] > gen)(endpoint(a, b)))
        assert endpoint(b, a)["peer_caps"] == 7, endpoint(b, a)
        sent = counters(b)["notify_sent"]
        assert send(b, a, "after", "2") == 0
        assert poll_all(a, 1) == [(b, "after", "2")]
        assert counters(b)["notify_sent"] == sent + 1   # natively
    finally:
        stop_all(d.values())


def test_native_channel_added_when_a_bay_frees():
    # One bay on the hub. x calls first and its endpoint takes the bay; y
    # calls next and connects without a native channel, so notifications
    # between hub and y go over TCP. x stops: once its endpoint drained, the
    # bay is free, and the hub offers y a native channel over the control
    # connection. From then on hub and y notify each other natively, and
    # what was sent across the switch arrives once, in order.
    hub, x, y = unique("uh"), unique("ux"), unique("uy")
    ph, px, py = free_port(), free_port(), free_port()
    common = dict(dead_after=NOTIFY_DEAD_AFTER_MS, connect_timeout=10000)
    d = {hub: Daemon(hub, text=node_text(
        hub, ph, [], notify=notify_cfg("endpoints_per_lcore = 1\n"),
        **common))}
    try:
        d[hub].wait_running()
        for peer, port in ((x, px), (y, py)):
            d[peer] = Daemon(peer, text=node_text(
                peer, port, [(hub, "127.0.0.1", ph)], notify=notify_cfg(),
                **common))
            d[peer].wait_running()
            wait_connected(hub, peer)
        assert endpoint(hub, x)["native"] == 1
        assert endpoint(hub, y)["native"] == 0
        assert endpoint(y, hub)["native"] == 0
        sent = {n: counters(n)["notify_sent"] for n in (hub, y)}
        assert send(hub, y, "0", "tcp") == 0
        assert send(y, hub, "0", "tcp") == 0
        assert counters(hub)["notify_sent"] == sent[hub]   # over TCP
        assert d[x].stop() == 0, d[x].stderr()
        wait_until("a native channel added", lambda: endpoint(hub, y)[
            "native"] == 1 and endpoint(y, hub)["native"] == 1)
        assert endpoint(hub, y)["native_added"] == 1
        assert "native notification channel added (this side offered" in \
            d[hub].stderr()
        for i in range(1, 4):
            assert send(hub, y, str(i), "native") == 0
            assert send(y, hub, str(i), "native") == 0
        for a, b in ((hub, y), (y, hub)):
            got = poll_all(b, 4)
            assert [(p, n) for p, n, _ in got] == \
                [(a, str(i)) for i in range(4)], got
            assert counters(a)["notify_sent"] == sent[a] + 3, counters(a)
        e = endpoint(hub, y)
        assert e["state"] == "connected" and e["to_failed"] == 0, e
        # A peer with notifications off says so in its handshake (no
        # capability 4), and is offered nothing: y goes, z keeps TCP.
        z, pz = unique("uz"), free_port()
        d[z] = Daemon(z, text=node_text(
            z, pz, [(hub, "127.0.0.1", ph)],
            notify=notify_cfg("enabled = false\n"), **common))
        d[z].wait_running()
        wait_connected(hub, z)
        assert endpoint(hub, z)["peer_caps"] == 2
        assert d[y].stop() == 0, d[y].stderr()
        wait_until("y's endpoint closed", lambda: endpoint(hub, y)[
            "state"] == "closed")
        time.sleep(1)
        assert endpoint(hub, z)["native"] == 0
        assert f"endpoint {z}: the peer has no native" not in d[hub].stderr()
        assert send(hub, z, "k", "over tcp") == 0
        assert poll_all(z, 1) == [(hub, "k", "over tcp")]
    finally:
        stop_all(d.values())


def next_notify_qp(sock):
    """(generation, step, reason, offer) of the next NOTIFY_QP on sock."""
    while True:
        ftype, body = rnproto.read_frame_skipping_heartbeats(sock)
        if ftype == rnproto.NOTIFY_QP:
            return rnproto.notify_qp_fields(body)


def test_offer_to_notifications_off_is_refused():
    # A node with notifications off refuses an offer (from a peer that
    # offers anyway), and the connection goes on.
    off = unique("no")
    d = Daemon(off, text=node_text(off, 0, [], notify=notify_cfg(
        "enabled = false\n"), dead_after=FAKE_PEER_DEAD_AFTER_MS,
        connect_timeout=10000, secret=None))   # fake peers: no challenge
    try:
        d.wait_running()
        s, caps = call(status(off)["control_port"], "asker")
        assert caps == 2, caps
        s.sendall(rnproto.notify_qp(1, rnproto.QP_OFFER, 0, 9,
                                    (0x702, 1, SLOTS, SLOT_SIZE, SLOTS)))
        assert next_notify_qp(s)[1:] == (rnproto.QP_REFUSE,
                                         rnproto.QP_DISABLED, 9)
        assert endpoint(off, "asker")["state"] == "connected"
        s.close()
    finally:
        assert d.stop() == 0, d.stderr()


def test_crossing_offers_the_first_name_goes_on():
    # The hub offers a fake peer a native channel (a bay came back) just as
    # the peer offers one too. The offer of the node whose name sorts
    # first goes on: a peer named after the hub is refused BUSY; a peer
    # named before it is answered, the hub's own offer given up.
    for first in (False, True):
        hub = unique("xh")
        d = Daemon(hub, text=node_text(
            hub, 0, [], nic=SLOW_QPS,
            notify=notify_cfg("endpoints_per_lcore = 1\n"),
            dead_after=FAKE_PEER_DEAD_AFTER_MS, connect_timeout=10000,
            secret=None))   # fake peers: no challenge
        held = []
        try:
            d.wait_running()
            port = status(hub)["control_port"]
            holder, caps = call(port, "bay-holder")
            held.append(holder)
            assert caps == 7, caps
            peer = ("A" if first else "z") + hub   # "A" < "t" < "z"
            s, caps = call(port, peer)
            held.append(s)
            assert caps == 6, caps   # no bay left for it
            holder.sendall(rnproto.close())
            _, step, _, hub_offer = next_notify_qp(s)
            assert step == rnproto.QP_OFFER, step
            s.sendall(rnproto.notify_qp(1, rnproto.QP_OFFER, 0, 7,
                                        (0x702, 1, SLOTS, SLOT_SIZE, SLOTS)))
            _, step, reason, offer = next_notify_qp(s)
            if not first:
                assert (step, reason, offer) == \
                    (rnproto.QP_REFUSE, rnproto.QP_BUSY, 7)
                continue
            assert (step, offer) == (rnproto.QP_ACCEPT, 7), (step, offer)
            assert endpoint(hub, peer)["native"] == 0   # not before READY
            s.sendall(rnproto.notify_qp(1, rnproto.QP_READY, 0, 7))
            wait_until("native", lambda: endpoint(hub, peer)["native"] == 1)
            assert "native notification channel added (the peer offered" \
                in d.stderr()
        finally:
            for x in held:
                x.close()
            assert d.stop() == 0, d.stderr()


STALL_S = 5.0   # RN_NOTIFY_STALL_MS


def heartbeat_times(sock, until):
    """Arrival times of HEARTBEAT frames on sock until time until."""
    times = []
    while time.monotonic() < until:
        try:
            ftype, _ = rnproto.read_frame(sock, timeout=0.1)
        except TimeoutError:
            continue
        if ftype == rnproto.HEARTBEAT:
            times.append(time.monotonic())
    return times


def test_stuck_lcore_never_stops_the_control_thread():
    # The worker stops draining its command ring (the sim_fault stall hook)
    # while callers come and go, two commands each (open, close): more than
    # the ring holds (1,024) wait on the control thread, which goes on with
    # heartbeats meanwhile; then every one of them is carried out.
    hub, d = names_hub("st")
    watcher = None
    try:
        d.wait_running()
        port = status(hub)["control_port"]
        watcher, caps = call(port, "watcher", native=False)
        assert caps is not None
        wait_connected(hub, "watcher")
        start = time.monotonic()
        assert sim_fault(hub, "stall", "watcher") == 0
        beats = []
        reader = threading.Thread(target=lambda: beats.extend(
            heartbeat_times(watcher, start + STALL_S - 0.2)))
        reader.start()
        for i in range(600):
            s = rnproto.connect(port)
            s.sendall(rnproto.hello(f"s{i}", 5, 1,
                                    [(rnproto.QP_DATA, 0x700, 1)]))
            s.close()
        wait_until("the command ring full", lambda: "command ring full" in
                   d.stderr(), timeout=STALL_S)
        full = time.monotonic()
        reader.join()
        assert full < start + STALL_S - 1, "the stall was over too soon"
        late = [t for t in beats if t > full]
        assert len(late) >= 3, \
            f"{len(late)} heartbeat(s) after the ring was full, while stuck"
        # The control thread noticed the worker's loop stop, and turn again.
        assert "lcore 1: its loop has not turned for" in d.stderr()
        wait_until("no command waiting", lambda: "had to wait" in
                   d.stderr(), timeout=60)
        wait_until("the loop turns again", lambda: "lcore 1: its loop turns "
                   "again after" in d.stderr())
        wait_until("every caller closed", lambda: lcore_counters(hub) ==
                   (1, 1), timeout=60)
        assert endpoint(hub, "watcher")["state"] == "connected"
    finally:
        if watcher is not None:
            watcher.close()
        assert d.stop() == 0, d.stderr()


run_tests(globals())
