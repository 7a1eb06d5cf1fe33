# SPDX-License-Identifier: BSD-3-Clause
"""rnotify-ctl against two daemons on loopback: every subcommand, as a
table and with --json (parsed), and its errors (no daemon, agent taken,
unknown node, refused)."""

import json
import os
import signal
import subprocess

import pytest

import rntest
from clienttest import (DEADLINE_S, Nodes, agent_name, lone_daemon,
                        reaped, send_retry, take)

CTL = os.environ.get("RNOTIFY_CTL")


@pytest.fixture(scope="module")
def ctl():
    if not CTL or not os.access(CTL, os.X_OK):
        pytest.skip("no rnotify-ctl to run (RNOTIFY_CTL unset): run "
                    "through meson test")

    def run(*args, ok=True):
        r = subprocess.run([CTL, *args], capture_output=True, text=True,
                           timeout=DEADLINE_S + 10)
        if ok is not None:
            assert (r.returncode == 0) == ok, \
                (args, r.returncode, r.stdout, r.stderr)
        return r
    return run


def as_json(r):
    return json.loads(r.stdout)


def test_status(nodes, ctl):
    r = ctl("--name", nodes.a, "status")
    lines = r.stdout.splitlines()
    assert any(line.split() == ["name", nodes.a] for line in lines), r.stdout
    assert any(line.split() == ["state", "running"] for line in lines)
    # The workers' counters: a table with a column per worker lcore.
    assert any(line.split()[:1] == ["COUNTER"] for line in lines), r.stdout
    s = as_json(ctl("--name", nodes.a, "status", "--json"))
    assert (s["name"], s["state"]) == (nodes.a, "running"), s
    # All that telemetry says, nothing else.
    assert set(s) == set(rntest.status(nodes.a)), s
    # --telemetry names the socket itself; options go before or after.
    import rnotify
    s = as_json(ctl("status", "--json", "--telemetry",
                    rnotify.telemetry_path(nodes.b)))
    assert s["name"] == nodes.b


def test_endpoints(nodes, ctl):
    r = ctl("--name", nodes.a, "endpoints")
    head, *rows = r.stdout.splitlines()
    assert head.split()[:3] == ["NAME", "STATE", "ADDRESS"], r.stdout
    # The peer, and the daemon's endpoint to itself.
    assert sorted(row.split()[:3] for row in rows) == sorted(
        [[nodes.b, "connected", "127.0.0.1"], [nodes.a, "idle", "loopback"]]
    ), r.stdout
    e = as_json(ctl("--name", nodes.a, "--json", "endpoints"))
    assert {x["name"]: x["state"] for x in e} == \
        rntest.endpoints(nodes.a), e
    assert [x["generation"] >= 1 for x in e if x["name"] == nodes.b] == \
        [True], e


def test_clients(clients, ctl):
    nodes = clients
    agent = agent_name("listed")
    nodes.attach(nodes.a, agent)
    try:
        rows = as_json(ctl("--name", nodes.a, "clients", "--json"))
        assert isinstance(rows, list), rows
        mine = [r for r in rows if agent in r.values()]
        assert len(mine) == 1, rows
        r = ctl("--name", nodes.a, "clients")
        assert agent in r.stdout, r.stdout
    finally:
        nodes.detach_all()
    rntest.wait_until("client gone from the list", lambda: not any(
        agent in r.values() for r in
        as_json(ctl("--name", nodes.a, "clients", "--json"))))


def start_watch(nodes, node, agent, *more):
    p = subprocess.Popen([CTL, "--name", node, "watch", agent, *more],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    line = p.stderr.readline()
    assert f"watching agent '{agent}' on node '{node}'" in line, \
        (line, p.poll())
    return p


def test_send_and_watch(clients, ctl):
    nodes = clients
    agent = agent_name("watched")
    p = start_watch(nodes, nodes.b, agent, "--count", "2")
    with reaped(p):
        r = ctl("--name", nodes.a, "send", nodes.b, agent, "kv-1",
                "block 1 ready", "--as", "ctl-sender")
        assert r.stdout.strip() == \
            f"sent to {agent} on {nodes.b}: acknowledged", r.stdout
        s = as_json(ctl("--name", nodes.a, "--json", "send", nodes.b, agent,
                        "kv-2", "tab\there", "--as", "ctl-sender"))
        assert (s["node"], s["agent"], s["name"], s["result"]) == \
            (nodes.b, agent, "kv-2", "acknowledged"), s
        out, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 0, err
    # One line a delivery, control characters escaped.
    assert out.splitlines() == [
        f"{nodes.a} ctl-sender kv-1 block 1 ready",
        f"{nodes.a} ctl-sender kv-2 tab\\there"], out


def test_watch_json_and_ctrl_c(clients, ctl):
    nodes = clients
    agent = agent_name("jwatch")
    sender = nodes.attach(nodes.a, agent_name("jsender"))
    p = start_watch(nodes, nodes.b, agent, "--json")
    with reaped(p):
        send_retry(sender, nodes.b, agent, b"kv-3", b"\xffbinary")
        line = p.stdout.readline()
        d = json.loads(line)
        assert d == {"node": nodes.a, "agent": sender.agent, "name": "kv-3",
                     "msg": "\\xffbinary"}, d
        # Taken: the agent is attached until Ctrl-C.
        r = ctl("--name", nodes.b, "watch", agent, "--count", "1", ok=False)
        assert r.returncode == 1 and \
            "another client is attached under that agent name" in r.stderr, \
            r.stderr
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 0, (out, err)
    assert "Traceback" not in err, err
    # Detached: the name is free again.
    rntest.wait_until("name free after Ctrl-C",
                      lambda: nodes.attach_if_free(nodes.b, agent))


def test_send_errors(nodes, ctl):
    r = ctl("--name", nodes.a, "send", "no-such-node", "x", "n", "m",
            ok=False)
    assert r.returncode == 1 and "No such file or directory" in r.stderr, \
        r.stderr
    r = ctl("--name", nodes.a, "send", nodes.b, agent_name("absent"),
            "n", "m", ok=False)
    assert r.returncode == 1 and "refused: no agent" in r.stderr, r.stderr
    assert r.stderr.count("\n") == 1, r.stderr


def test_send_to_a_busy_agent_says_so(rnotify, ctl):
    # b never polls: its ring (15) and hold_max (1) take what comes, the
    # next send is refused as busy, and rnotify-ctl says so.
    n = Nodes(rnotify, "ctlbusy", client="hold_max = 1\nring_size = 16\n")
    try:
        b = n.attach(n.b, agent_name("busy"))
        for sent in range(15 + 1 + 2):
            r = ctl("--name", n.a, "send", n.b, b.agent, "n", str(sent),
                    ok=None)
            if r.returncode != 0:
                break
        assert r.returncode == 1 and "is busy" in r.stderr, r.stderr
        assert 15 <= sent <= 15 + 1 + 1, sent
    finally:
        n.stop()


def test_no_daemon(ctl):
    name = rntest.unique("pynone")
    for args in (["status"], ["endpoints"], ["clients"],
                 ["watch", "x", "--count", "1"], ["send", "n", "a", "x", "y"],
                 ["peer", "remove", "x"], ["peer", "add", "x", "::1", "9"]):
        r = ctl("--name", name, *args, ok=False)
        assert r.returncode == 1, (args, r)
        assert r.stderr.startswith("rnotify-ctl: ") and \
            "is rnotifyd running?" in r.stderr and \
            r.stderr.count("\n") == 1, (args, r.stderr)
    r = ctl("--name", name, "nonsense", ok=False)
    assert r.returncode == 2, r


def test_peer_add_remove(clients, ctl):
    nodes = clients
    with lone_daemon("pyctlc") as name:
        port = str(nodes.pair.ports[1])
        r = ctl("--name", name, "peer", "add", nodes.b, "127.0.0.1", port)
        assert r.stdout.strip() == \
            f"{name}: peer {nodes.b} added (127.0.0.1 port {port})", r.stdout
        r = ctl("--name", name, "peer", "add", nodes.b, "127.0.0.1", port,
                ok=False)
        assert "a peer of that name exists" in r.stderr, r.stderr
        # It is used: a send over it arrives.
        receiver = nodes.attach(nodes.b, agent_name("over-added"))
        ctl("--name", name, "send", nodes.b, receiver.agent, "n", "added")
        assert take(receiver, receiver.poll, 1, "delivery")[0].msg == \
            b"added"
        e = as_json(ctl("--name", name, "endpoints", "--json"))
        assert sorted(x["name"] for x in e) == sorted([nodes.b, name]), e
        r = as_json(ctl("--name", name, "--json", "peer", "remove", nodes.b))
        assert r == {"node": name, "peer": nodes.b, "action": "remove"}, r
        r = ctl("--name", name, "peer", "remove", nodes.b, ok=False)
        assert "no peer of that name" in r.stderr, r.stderr
        e = as_json(ctl("--name", name, "endpoints", "--json"))
        assert [x["name"] for x in e] == [name], e
        assert nodes.b not in ctl("--name", name, "endpoints").stdout
        nodes.detach_all()
