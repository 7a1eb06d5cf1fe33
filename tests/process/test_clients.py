#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Client processes (librnotify) of two daemons on loopback, driven through
rn_client_tool (a C client; its commands are in its header comment):
addressing by (node, agent), order per sender, refusals, kill -9 of
clients in the middle of streams, and a daemon restart under a client.
Usage: test_clients.py RNOTIFYD   (RN_CLIENT_TOOL names the client tool)"""

import contextlib
import os
import signal
import subprocess
import time

import rntest
from rntest import Pair, note, run_tests, seeded_random, wait_until

TOOL = os.environ.get("RN_CLIENT_TOOL", "")
ENOENT, EADDRINUSE, ENOTCONN = 2, 98, 107
PEER_DOWN, PEER_RESTARTED, REFUSED = 1, 3, 5   # enum rn_client_event_type
DEAD_AFTER_MS = 5000


def socket_of(name):
    return os.path.join(rntest.TMP, name + ".sock")


class ClientPair(Pair):
    """A Pair whose daemons serve clients on a socket in the test's
    folder. A peer counts as dead after DEAD_AFTER_MS of silence, not
    rntest's 300: floods of notifications on two cores can starve a
    control thread that long, and the streams here must not see their
    endpoint fail."""

    def text(self, i):
        return super().text(i) + \
            f"[client]\nsocket = {socket_of(self.names[i])}\n"

    def __init__(self, tag, **node):
        node.setdefault("dead_after", DEAD_AFTER_MS)
        super().__init__(tag, **node)
        for name in self.names:
            wait_until(f"{name}'s client socket",
                       lambda: os.path.exists(socket_of(name)))


class Tool:
    """One rn_client_tool process attached to daemon `node` as agent."""

    def __init__(self, node, agent, expect_attach=True):
        self.node, self.agent = node, agent
        self.proc = subprocess.Popen(
            [TOOL, socket_of(node), agent], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True, bufsize=1,
            preexec_fn=rntest.die_with_parent)
        self.first = self.proc.stdout.readline().strip()
        if expect_attach:
            assert self.first == f"attached {node}", \
                f"{agent} on {node}: {self.first!r}"

    @property
    def me(self):
        return f"{self.node}/{self.agent}"

    def ask(self, command):
        """Send command; its lines before "rc N", and N."""
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return self.answer(command)

    def start(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def answer(self, command=""):
        lines = []
        while True:
            line = self.proc.stdout.readline()
            assert line, f"{self.me} died during {command!r}: {lines}"
            line = line.strip()
            if line.startswith("rc "):
                return lines, int(line[3:])
            lines.append(line)

    def quit(self):
        if self.proc.poll() is None:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
        assert self.proc.wait(timeout=20) == 0, f"{self.me} exit"

    def kill(self):
        self.proc.kill()
        self.proc.wait()


@contextlib.contextmanager
def pair_with_tools(tag):
    """A ClientPair and the list of Tools a test attaches to it; on the
    way out (a failure included) every tool and daemon still running is
    killed. A test that passes quits its tools and stops the pair itself
    (stop_clean), which fails unless each exits 0."""
    p = ClientPair(tag)
    tools = []
    try:
        yield p, tools
    finally:
        for t in tools:
            t.kill()
        for d in p.d:
            d.kill()


def stop_clean(p, tools):
    for t in tools:
        t.quit()
    p.stop()


def check_stream(tool, lines, rc, senders, count):
    """A stream's answer: rc 0, no fault, count from each sender."""
    bad = [line for line in lines if line.startswith("bad")]
    assert rc == 0 and not bad, f"{tool.me}: rc {rc}: {lines}"
    got = {line.split()[1]: int(line.split()[2])
           for line in lines if line.startswith("from ")}
    want = {s.me: count for s in senders}
    assert got == want, f"{tool.me} received {got}, expected {want}"
    assert "refused 0" in lines, f"{tool.me}: {lines}"


def run_streams(tools, targets, count, seed):
    """Every tool streams count notifications to each of its targets and
    takes what the others send it; all at once."""
    for t in tools:
        dest = ",".join(x.me for x in targets[t])
        expect = count * sum(t in targets[s] for s in tools)
        t.start(f"stream {dest or '-'} {count if dest else 0} {expect} "
                f"{seed} 120")
    for t in tools:
        lines, rc = t.answer("stream")
        check_stream(t, lines, rc, [s for s in tools if t in targets[s]],
                     count)


def test_every_notification_reaches_the_agent_it_names():
    """Two daemons, two clients each; each client streams to both clients
    of the other node, interleaved at random: each gets exactly what was
    sent to it, from the agent that sent it, in order per sender."""
    rng = seeded_random()
    with pair_with_tools("ad") as (p, tools):
        tools += [Tool(p.a, "agent-a1"), Tool(p.a, "agent-a2"),
                  Tool(p.b, "agent-b1"),
                  Tool(p.b, "a-36-character-uuid-like-nixl-agent00")]
        a, b = tools[:2], tools[2:]
        targets = {t: b for t in a}
        targets.update({t: a for t in b})
        run_streams(tools, targets, 2000, rng.randrange(1 << 31))
        stop_clean(p, tools)


def test_unknown_node_and_absent_agent():
    """A node the daemon does not know: -ENOENT. A notification to an
    agent that is not attached there: a REFUSED event with its cookie and
    the absent agent; nothing is delivered to the others."""
    with pair_with_tools("re") as (p, tools):
        a1, b1 = Tool(p.a, "a1"), Tool(p.b, "b1")
        tools += [a1, b1]
        assert a1.ask("send no-such-node b1 n m 1 0") == ([], -ENOENT)
        assert a1.ask(f"sendwait {p.b} ghost n m 77") == ([], 0)
        lines, rc = a1.ask("event 10000")
        assert rc == 1, lines
        ev = lines[0].split()
        assert ev[0] == "event" and int(ev[1]) == REFUSED and \
            ev[3] == "77" and ev[5] == "ghost", lines
        note(f"refusal: {lines[0]}")
        # The agent that is there still gets its own.
        assert a1.ask(f"sendwait {p.b} b1 n hello 78") == ([], 0)
        lines, rc = b1.ask("recv 1 10000")
        assert rc == 1 and lines == [f"got {p.a} a1 n hello"], lines
        assert b1.ask("recv 1 200") == ([], 0)
        stop_clean(p, tools)


class HeldReadyClientPair(ClientPair, rntest.HeldReadyPair):
    """rntest.HeldReadyPair, its daemons serving clients."""


def arrived(node):
    """Whether node's lcores took a notification for a client: handed to
    it (client_delivered), or kept for later (notify_early)."""
    s = rntest.status(node)
    return sum(s["client_delivered"]) + sum(s.get("notify_early", [0])) > 0


def test_answer_to_a_first_notification_goes():
    """A client that answers the first notification it gets, at once, on
    the node whose handshake ends last: the answer goes (rc 0), never
    -ENOTCONN nor -EAGAIN. b's handshake is held open (a's READY held
    back) while a, connected, sends natively; whatever b's client is
    handed by then, and after, it can answer."""
    p = HeldReadyClientPair("hr")
    tools = []
    try:
        a1, b1 = Tool(p.a, "a1"), Tool(p.b, "b1")
        tools += [a1, b1]
        assert a1.ask(f"sendwait {p.b} b1 n ping 1") == ([], 0)
        assert p.holder.held.is_set(), "a sent before its READY went"
        answered = 0
        # With b's handshake still open, once b's lcore has the ping
        # (handed to b1, or kept until b's endpoint is connected): a
        # delivery that came is answered at once.
        wait_until(f"{p.b}'s lcore has the ping", lambda: arrived(p.b))
        lines, rc = b1.ask("recv 1 500")
        note(f"delivered before b's handshake ended: {rc}")
        if rc == 1:
            assert lines == [f"got {p.a} a1 n ping"], lines
            answer = b1.ask(f"send {p.a} a1 n pong 2 0")
            assert answer == ([], 0), \
                f"b1's answer while b's handshake was open: {answer}"
            answered = 1
        p.holder.release()
        if not answered:
            lines, rc = b1.ask("recv 1 10000")
            assert rc == 1 and lines == [f"got {p.a} a1 n ping"], lines
            answer = b1.ask(f"send {p.a} a1 n pong 2 0")
            assert answer == ([], 0), f"b1's answer: {answer}"
        lines, rc = a1.ask("recv 1 10000")
        assert rc == 1 and lines == [f"got {p.b} b1 n pong"], lines
        stop_clean(p, tools)
    finally:
        for t in tools:
            t.kill()
        p.kill()


def daemon_usage(daemon):
    """(RSS in KiB, open descriptors, mappings of client regions, KiB of
    hugepages mapped) of a daemon process. Regions on hugepages are not in
    the RSS: their mappings and the hugepages the process maps are counted
    (the process's own, not the host's free count, which other processes
    on the host move)."""
    pid = daemon.proc.pid
    with open(f"/proc/{pid}/status") as f:
        rss = next(int(line.split()[1]) for line in f
                   if line.startswith("VmRSS:"))
    with open(f"/proc/{pid}/maps") as f:
        regions = sum("rnotify-client" in line for line in f)
    with open(f"/proc/{pid}/smaps_rollup") as f:
        huge = sum(int(line.split()[1]) for line in f
                   if line.split(":")[0] in ("Shared_Hugetlb",
                                             "Private_Hugetlb"))
    return rss, len(os.listdir(f"/proc/{pid}/fd")), regions, huge


KILLS = 100
# The RSS a daemon may gain over KILLS kills once warmed up. Each victim's
# region holds 2 x 256 buffers of 4 KiB per lcore, and its flood touches
# 100 or more send buffers there (400 KiB or more): 90 regions kept
# mapped would add 36 MiB. Allocator and page cache noise stays well
# under 4 MiB.
RSS_SLACK_KIB = 4096


def attach_victim(node):
    """A Tool attached to node as "victim": the last victim's name is free
    once every lcore of the daemon let go of it (milliseconds), so an
    attach that says -EADDRINUSE is tried again, for 10 s."""
    deadline = time.monotonic() + 10
    while True:
        victim = Tool(node, "victim", expect_attach=False)
        if victim.first != f"attach-error {-EADDRINUSE}" or \
                time.monotonic() > deadline:
            break
        victim.proc.wait()
        time.sleep(0.01)
    assert victim.first == f"attached {node}", victim.first
    return victim


def test_kill9_clients_mid_stream():
    """kill -9 of a client flooding the other node, KILLS times, each
    under the same agent name (free again each time), while two other
    clients stream to each other in rounds: their rounds all complete in
    order, and the daemon's descriptors come back to what they were and
    its RSS stays flat."""
    rng = seeded_random()
    with pair_with_tools("k9") as (p, tools):
        a1, b1, sink = Tool(p.a, "a1"), Tool(p.b, "b1"), Tool(p.b, "sink")
        tools += [a1, b1, sink]
        sink.start("drain 100000")
        baseline = None
        rounds = 0
        for i in range(KILLS):
            if i % 5 == 0:   # a round of the stable pair's streams
                if i > 0:
                    for t, other in ((a1, b1), (b1, a1)):
                        lines, rc = t.answer("stream")
                        check_stream(t, lines, rc, [other], 300)
                    rounds += 1
                seed = rng.randrange(1 << 31)
                a1.start(f"stream {b1.me} 300 300 {seed} 120")
                b1.start(f"stream {a1.me} 300 300 {seed} 120")
            victim = attach_victim(p.a)
            tools.append(victim)   # killed on the way out, if need be
            victim.start(f"flood {p.b} sink")
            line = victim.proc.stdout.readline().strip()
            assert line == "flooding", line
            time.sleep(rng.random() * 0.02)
            victim.proc.send_signal(signal.SIGKILL)
            victim.proc.wait()
            tools.remove(victim)
            if i == 9:
                # Once the victim is let go: a1's region only.
                wait_until("the 10th victim let go",
                           lambda: daemon_usage(p.d[0])[2] == 1,
                           timeout=20)
                baseline = daemon_usage(p.d[0])
        for t, other in ((a1, b1), (b1, a1)):
            lines, rc = t.answer("stream")
            check_stream(t, lines, rc, [other], 300)
        rounds += 1
        # The last victims are let go asynchronously: wait for their
        # descriptors and regions to go.
        wait_until("descriptors and regions back",
                   lambda: (lambda u: u[1] <= baseline[1] and
                            u[2] <= baseline[2])(daemon_usage(p.d[0])),
                   timeout=20)
        rss, fds, regions, huge = daemon_usage(p.d[0])
        note(f"{KILLS} kills, {rounds} rounds of streams; daemon RSS "
             f"{baseline[0]} KiB after 10 kills, {rss} KiB after "
             f"{KILLS}; fds {baseline[1]} -> {fds}; region mappings "
             f"{baseline[2]} -> {regions}; hugepages mapped "
             f"{baseline[3]} -> {huge} KiB")
        assert rss - baseline[0] <= RSS_SLACK_KIB, (baseline, rss)
        assert huge <= baseline[3], (baseline, huge)
        sink.kill()   # it drains for ever
        tools.remove(sink)
        stop_clean(p, tools)


def test_daemon_restart():
    """kill -9 of the daemon under an attached client: its next call says
    -ENOTCONN, its fd is readable; once the daemon is back it attaches
    again (same process, same agent) and sends."""
    with pair_with_tools("rs") as (p, tools):
        a1, b1 = Tool(p.a, "a1"), Tool(p.b, "b1")
        tools += [a1, b1]
        assert a1.ask(f"sendwait {p.b} b1 n before 1") == ([], 0)
        assert b1.ask("recv 1 10000")[1] == 1
        # Taken, and a poll that finds nothing more clears the fd.
        assert b1.ask("recv 1 0") == ([], 0)
        assert b1.ask("fdready 0") == ([], 0)
        p.restart(1)
        assert b1.ask("fdready 1000") == ([], 1)
        assert b1.ask(f"send {p.a} a1 n m 1 0") == ([], -ENOTCONN)
        assert b1.ask("wait 1000") == ([], -ENOTCONN)
        assert b1.ask("reattach") == ([], 0)
        # The other node's client heard of it: down, then restarted (a new
        # incarnation), for node b.
        seen = []
        while PEER_RESTARTED not in seen:
            lines, rc = a1.ask("event 20000")
            assert rc == 1, f"events so far {seen}: {lines}"
            ev = lines[0].split()
            assert ev[4] == p.b, lines
            seen.append(int(ev[1]))
        assert seen[0] == PEER_DOWN, seen
        note(f"a1's events for {p.b}: {seen}")
        assert b1.ask(f"sendwait {p.a} a1 n after 2") == ([], 0)
        lines, rc = a1.ask("recv 1 10000")
        assert rc == 1 and lines == [f"got {p.b} b1 n after"], lines
        stop_clean(p, tools)


if __name__ == "__main__":
    if not TOOL:
        print("1..0 # SKIP RN_CLIENT_TOOL not set")
    else:
        run_tests(globals())
