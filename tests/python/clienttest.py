# SPDX-License-Identifier: BSD-3-Clause
"""Helpers of the pytest tests of rnotify (conftest.py has the fixtures):
two daemons and their clients, sends that try again while an endpoint
connects or a ring is full, and takes and waits with deadlines (for
events, never to assert timing)."""

import contextlib
import errno
import os
import time

import rntest

# How long an event the test waits for may take on a loaded 2-core
# machine: a bound on a wait, never an assertion of speed.
DEADLINE_S = 20
# A peer silent this long is dead: long enough that a loaded machine's
# late heartbeats do not fail an endpoint under a test (rntest's 300 ms
# are for tests of detection). A killed peer is seen at once (its TCP
# connection closes).
DEAD_AFTER_MS = 3000


class Nodes:
    """Two daemons a and b on loopback, each the other's peer
    (rntest.Pair), and the clients attached to them during a test."""

    def __init__(self, rnotify, tag, **node):
        """node: more of rntest.node_text()'s keywords for both."""
        self.rn = rnotify
        self.pair = rntest.Pair(tag, **dict(dict(dead_after=DEAD_AFTER_MS),
                                            **node))
        self.a, self.b = self.pair.names
        self.clients = []

    def socket(self, node):
        return self.rn.socket_path(node)

    def attach(self, node, agent):
        c = self.rn.Client(agent, socket=self.socket(node))
        self.clients.append(c)
        return c

    def attach_if_free(self, node, agent):
        """attach(), or None while another client holds the name (one that
        detached a moment ago may still hold it)."""
        try:
            return self.attach(node, agent)
        except OSError as e:
            if e.errno != errno.EADDRINUSE:
                raise
            return None

    def detach_all(self):
        for c in self.clients:
            c.detach()
        self.clients.clear()

    def stop(self):
        self.detach_all()
        self.pair.stop()


def agent_name(tag):
    return f"{tag}-{os.getpid()}-{time.monotonic_ns() % 1000000}"


def send_retry(client, node, agent, name, msg, deadline_s=DEADLINE_S,
               drain=None, **kw):
    """Send, trying again while the endpoint connects or a ring is full
    (EAGAIN); drain() runs between tries (a receiver's poll, so that its
    ring empties)."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return client.send(node, agent, name, msg, **kw)
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise AssertionError(f"send to {agent} on {node}: EAGAIN "
                                     f"for {deadline_s} s")
            if drain is not None:
                drain()
            else:
                time.sleep(0.005)


def take(client, fn, want, what, deadline_s=DEADLINE_S):
    """Call fn (client.poll, .events, .completions) until want items came;
    waits on the client between calls."""
    got = []
    deadline = time.monotonic() + deadline_s
    while len(got) < want:
        got.extend(fn())
        left = deadline - time.monotonic()
        if len(got) >= want:
            break
        if left <= 0:
            raise AssertionError(f"{what}: {len(got)} of {want} after "
                                 f"{deadline_s} s: {got[-5:]!r}")
        client.wait(min(left, 1.0))
    return got


def events_until(client, done, what, deadline_s=DEADLINE_S):
    """Take client's events until done(events so far) is true; returns them
    all, in order (one call may take several: none is dropped)."""
    events = []
    deadline = time.monotonic() + deadline_s
    while not done(events):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"{what}: not after {deadline_s} s "
                                 f"(events: {events!r})")
        client.wait(min(left, 1.0))
        events += client.events()
        client.poll()   # deliveries are not what this waits for
    return events


def has(type_, node=None):
    """For events_until: an event of that type (about node) came."""
    return lambda events: any(e.type == type_ and node in (None, e.node)
                              for e in events)


def first_send(client, node, agent, name=b"hello", msg=b"first"):
    """The first send to a node: EAGAIN while its endpoint connects."""
    send_retry(client, node, agent, name, msg)


def connected(nodes, tag):
    """A client on a and one on b, the endpoint between them up: the first
    send from a's client reached b's."""
    a = nodes.attach(nodes.a, agent_name(tag + "-a"))
    b = nodes.attach(nodes.b, agent_name(tag + "-b"))
    first_send(a, nodes.b, b.agent)
    take(b, b.poll, 1, "the first send")
    return a, b


@contextlib.contextmanager
def reaped(p):
    """The subprocess p, killed on the way out if it still runs (a test
    that failed before it exited)."""
    try:
        yield p
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@contextlib.contextmanager
def lone_daemon(tag):
    """A running daemon with no peers (tests add them at run time); its
    name. Stopped on the way out, which must be clean."""
    name = rntest.unique(tag)
    d = rntest.Daemon(name, text=rntest.node_text(
        name, rntest.free_port(), [], dead_after=DEAD_AFTER_MS))
    try:
        d.wait_running()
        yield name
    finally:
        rntest.stop_all([d])

