#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for what a stranger can do to others through the TCP
fallback and the telemetry socket: a peer flooding NOTIFY frames holds only
its quota of the delivery queue, so another peer's notification is not
kept waiting behind the flood (and nothing of the flood is lost); telemetry
replies stay valid JSON whatever bytes a notification holds, and numbers
in command parameters parse strictly. Prints TAP.
Usage: test_fairness.py RNOTIFYD"""

import base64
import errno
import json
import os
import socket
import struct
import threading
import time

import rnproto
from rntest import (FAKE_PEER_DEAD_AFTER_MS, SLOW_QPS, Daemon, free_port,
                    node_text, run_tests, runtime_dir, status, telemetry,
                    unique, wait_connected, wait_until)

# control/endpoint/notify_tcp_pvt.h: RN_NOTIFY_TCP_PEER_ENTRIES, a quarter
# of the 4,096-entry ring one peer used to fill.
PEER_ENTRIES = 1024
FLOOD = 4200
POLL_MAX = 64   # rn_notify.h: RN_NOTIFY_POLL_MAX


def hub(tag):
    name = unique(tag)
    d = Daemon(name, text=node_text(
        name, 0, [], nic=SLOW_QPS + "data_qps = 1\n",
        notify="slots = 16\nslot_size = 256\n",
        dead_after=FAKE_PEER_DEAD_AFTER_MS, connect_timeout=10000,
        secret=None))   # fake peers without the challenge exchange
    d.wait_running()
    return name, d


def join(port, name):
    """A fake peer without a native channel joins the hub; its socket."""
    s = rnproto.connect(port)
    s.sendall(rnproto.hello(name, 5, 1, [(rnproto.QP_DATA, 0x700, 1)]))
    ftype, _ = rnproto.read_frame_skipping_heartbeats(s)
    assert ftype == rnproto.ACCEPT, ftype
    s.sendall(rnproto.ready(1))
    return s


def notify(name, msg):
    """A NOTIFY frame of a peer without a native channel."""
    name, msg = name.encode(), msg.encode()
    return rnproto.frame(rnproto.NOTIFY, struct.pack(">I", 0) +
                         struct.pack("<I", len(name)) + name +
                         struct.pack("<I", len(msg)) + msg)


def raw_telemetry(node, command):
    """command (bytes) on node's telemetry socket; the reply, parsed as
    strict JSON (UTF-8, no NaN), for command's first field."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(30)
        s.connect(os.path.join(runtime_dir(node), "dpdk_telemetry.v2"))
        info = json.loads(s.recv(1024))
        s.send(command)
        reply = s.recv(info["max_output_len"])

    def no_constant(c):
        raise AssertionError(f"not JSON: {c} in {reply!r}")
    return json.loads(reply.decode("utf-8"), parse_constant=no_constant)[
        command.split(b",")[0].decode()]


def test_flooding_peer_holds_only_its_quota():
    # A stranger sends 4,200 NOTIFY frames while the application does not
    # poll; then a real peer sends one. The stranger's are held at its
    # quota (the rest unread on its connection), so the real one is among
    # the first the application takes, not behind 4,096 forged ones; then
    # every frame of the flood arrives, in order.
    name, d = hub("fq")
    socks = []
    try:
        port = status(name)["control_port"]
        stranger, real = join(port, "stranger"), join(port, "real")
        socks += [stranger, real]
        wait_connected(name, "stranger")
        wait_connected(name, "real")
        flood = b"".join(notify("f", f"f{i}") for i in range(FLOOD))
        # The hub stops reading it: sendall blocks until it reads again.
        sender = threading.Thread(target=stranger.sendall, args=(flood,),
                                  daemon=True)
        sender.start()
        time.sleep(1.0)
        real.sendall(notify("r", "real"))
        time.sleep(0.2)
        got = []

        def until_real():
            r = telemetry(name, "/rnotify/poll")
            got.extend(zip(r["peer"], r["msg"]))
            return ("real", "real") in got
        wait_until("the real peer's notification", until_real)
        before = got.index(("real", "real"))
        assert before <= PEER_ENTRIES + POLL_MAX, before

        def until_all():
            r = telemetry(name, "/rnotify/poll")
            got.extend(zip(r["peer"], r["msg"]))
            return len(got) >= FLOOD + 1
        wait_until("the whole flood", until_all, timeout=60)
        sender.join(10)
        forged = [m for p, m in got if p == "stranger"]
        assert forged == [f"f{i}" for i in range(FLOOD)], \
            (len(forged), forged[:3])
        assert len(got) == FLOOD + 1
        assert status(name)["state"] == "running"
    finally:
        for s in socks:
            s.close()
        assert d.stop() == 0, d.stderr()


def self_node(tag):
    name = unique(tag)
    d = Daemon(name, text=node_text(name, free_port(), [],
                                    notify="slots = 16\nslot_size = 256\n"))
    d.wait_running()
    return name, d


def send_self(node, name, msg):
    """Send name, msg (bytes) to node itself until its endpoint is up."""
    result = []

    def sent():
        result[:] = [raw_telemetry(node, b"/rnotify/send," + node.encode() +
                                   b"," + name + b"," + msg)["result"]]
        return result[0] != -errno.EAGAIN
    wait_until("a send to self", sent, every=0.01)
    return result[0]


def content(reply, key, i):
    """The bytes of the i-th notification's key (name or msg)."""
    text, b64 = reply[key][i], reply[key + "_b64"][i]
    assert text == "" or b64 == "", (text, b64)
    return base64.b64decode(b64, validate=True) if b64 else text.encode()


def test_poll_reply_is_json_for_any_bytes():
    # Bytes >= 0x80 (not UTF-8 here), control bytes, quotes and
    # backslashes: the reply parses as strict JSON, printable ASCII stays
    # readable as it is, anything else comes whole in base64.
    node, d = self_node("tj")
    cases = [(b"plain", b"hello, world"),
             (b"quote", b'say "hi" \\ back'),
             (b"bin\x80", b"caf\xc3\xa9 \xff\xfe\x01\x7f end"),
             (b"ctl", b"line\nnext\ttab")]
    try:
        for name, msg in cases:
            assert send_self(node, name, msg) == 0, name
        got = []
        wait_until("the deliveries", lambda: got.extend(
            [raw_telemetry(node, b"/rnotify/poll")]) or
            sum(len(r["peer"]) for r in got) >= len(cases))
        items = [(content(r, "name", i), content(r, "msg", i),
                  r["msg_len"][i])
                 for r in got for i in range(len(r["peer"]))]
        assert items == [(n, m, len(m)) for n, m in cases], items
        r = got[0]
        assert (r["name"][0], r["msg"][0]) == ("plain", "hello, world")
        assert r["msg"][1] == 'say "hi" \\ back'
    finally:
        assert d.stop() == 0, d.stderr()


def test_numbers_parse_strictly():
    # A sign, a space, a base prefix, trailing text or a value out of
    # range gets one clear error and does nothing; "-1" is not 2**64 - 1.
    node, d = self_node("tn")
    bad_cookies = ["-1", "+5", " 5", "5 ", "5x", "0x10", "",
                   "18446744073709551616", "99999999999999999999999"]
    try:
        assert send_self(node, b"k", b"warm") == 0
        for cookie in bad_cookies:
            r = raw_telemetry(node, f"/rnotify/send_report,{node},{cookie},"
                              "k,v".encode())
            assert r == {"result": -errno.EINVAL, "error":
                         "COOKIE: not a decimal number from 0 to "
                         "18446744073709551615 (digits only)"}, (cookie, r)
        r = raw_telemetry(node, f"/rnotify/send_report,{node},"
                          "18446744073709551615,k,v".encode())
        assert r["result"] == 0, r
        wait_until("the report", lambda: telemetry(
            node, "/rnotify/completions")["cookie"] == [2**64 - 1])
        for count in ["-1", "+3", "0", "65", "3;x", "3;", "1;-1"]:
            r = raw_telemetry(node, f"/rnotify/send_burst,{node},{count},"
                              "n,m".encode())
            assert r["result"] == -errno.EINVAL, (count, r)
            assert r["error"].startswith("COUNT"), (count, r)
        # A status command's reply is data or null.
        for start in ["-1", "+1", " 1", "1x", "1025"]:
            r = raw_telemetry(node, f"/rnotify/endpoints,{start}".encode())
            assert r is None, (start, r)
        assert raw_telemetry(node, b"/rnotify/endpoints,0")["total"] == 1
        # Nothing was sent but the warm-up and the one good report.
        polled = raw_telemetry(node, b"/rnotify/poll")
        assert polled["msg"] == ["warm", "v"], polled
    finally:
        assert d.stop() == 0, d.stderr()


run_tests(globals())
