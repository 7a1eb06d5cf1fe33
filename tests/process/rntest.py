# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers for the process tests: daemons started from a config,
DPDK's telemetry client, waits with deadlines (for events, never to assert
timing), seeded random choices, and the runner that collects a file's
test_* functions and prints TAP (rnproto.py is the protocol codec)."""

import contextlib
import ctypes
import json
import os
import random
import secrets
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import rnproto

RNOTIFYD = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="rn-process-test-")
START_TIMEOUT_S = 20

# The control plane's timing in node_text(): heartbeats every 50 ms, a peer
# silent for 300 ms is dead.
HEARTBEAT_MS = 50
DEAD_AFTER_MS = 300
# Small notification buffers: several daemons share the test machine.
NOTIFY = "slots = 16\nslot_size = 4096\n"
# A fake peer's QPs never answer and it sends no heartbeats: give it time.
SLOW_QPS = "qp_timeout = 20\n"
FAKE_PEER_DEAD_AFTER_MS = 30000


def _secret_file():
    """The tests' shared secret, as scripts/setup.sh writes one: random,
    in a file of its own, mode 0600. Returns (path, key)."""
    path = os.path.join(TMP, "secret")
    key = secrets.token_hex(32).encode()
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600),
              "wb") as f:
        f.write(key + b"\n")
    return path, key


# Every config written here names it unless told otherwise (secret=None:
# a node whose callers need not prove anything, for fake peers that speak
# the protocol without the challenge exchange). With it comes
# accept_unknown = true: a caller that proves the secret under a name the
# node does not configure gets an endpoint, as without a secret, which the
# hubs of the tests rely on (test_strangers.py says otherwise where it
# tests the names).
SECRET_FILE, SECRET_KEY = _secret_file()


def secret_keys(path):
    """The [control] keys of a node with the secret in path."""
    return f"secret_file = {path}\naccept_unknown = true\n"


def unique(tag):
    return f"t{os.getpid() % 100000}{tag}"


def write_config(name, text):
    path = os.path.join(TMP, name + ".ini")
    with open(path, "w") as f:
        f.write(text)
    return path


def config(name, extra="", secret=SECRET_FILE):
    """A test daemon's config; its control port is any free one unless
    extra has a [control] section; with the tests' secret unless secret
    is None."""
    control = "" if "[control]" in extra else "[control]\nport = 0\n"
    if secret is not None:
        if "[control]\n" in extra:
            extra = extra.replace("[control]\n", "[control]\n" +
                                  secret_keys(secret), 1)
        else:
            control += secret_keys(secret)
    notify = "" if "[notify]" in extra else \
        "[notify]\nslots = 16\nslot_size = 4096\n"
    return write_config(name, f"[dataplane]\nname = {name}\nmemory_mb = 32\n"
                              f"idle = adaptive\n{extra}\n{control}{notify}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def node_text(name, port, peers, listen="127.0.0.1", nic="",
              dead_after=DEAD_AFTER_MS, notify=NOTIFY, connect_timeout=1000,
              connect="eager", dataplane="", secret=SECRET_FILE, client=""):
    """A daemon's whole config, with its control plane's timing made short
    for the tests, and the tests' secret (secret=None: none); peers: list
    of (name, address, port); client: lines of its [client] section."""
    text = (f"[dataplane]\nname = {name}\nmemory_mb = 32\nidle = adaptive\n"
            f"{dataplane}"
            f"[nic]\n{nic}\n[notify]\n{notify}\n"
            f"[control]\nlisten = {listen}\nport = {port}\n"
            f"heartbeat_ms = {HEARTBEAT_MS}\ndead_after_ms = {dead_after}\n"
            f"connect_timeout_ms = {connect_timeout}\n"
            f"reconnect_min_ms = 20\nreconnect_max_ms = 200\n")
    if secret is not None:
        text += secret_keys(secret)
    if client:
        text += f"[client]\n{client}"
    for peer, address, peer_port in peers:
        text += (f"[peer {peer}]\naddress = {address}\nport = {peer_port}\n"
                 f"connect = {connect}\n")
    return text


def runtime_dir(name):
    if os.getuid() == 0:
        base = "/var/run/dpdk"
    else:
        base = os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/tmp"), "dpdk")
    return os.path.join(base, "rnotify-" + name)


def telemetry(name, command):
    """One command on the daemon's telemetry socket, in DPDK's v2 protocol
    as dpdk-telemetry.py speaks it, without starting a process per call.
    A full listen backlog (EAGAIN), or a client turned away because the
    daemon serves its most at once (closed before its greeting), tries
    again."""
    path = os.path.join(runtime_dir(name), "dpdk_telemetry.v2")
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
                s.settimeout(30)
                s.connect(path)
                greeting = s.recv(1024)
                if greeting:
                    info = json.loads(greeting)
                    s.send(command.encode())
                    reply = s.recv(info["max_output_len"])
                    return json.loads(reply)[command.split(",")[0]]
        except BlockingIOError:
            pass
        except OSError as e:
            raise AssertionError(f"telemetry of {name} for {command}: {e}")
        if time.monotonic() > deadline:
            raise AssertionError(f"telemetry of {name} for {command}: busy")
        time.sleep(0.01)


def status(name):
    return telemetry(name, "/rnotify/status")


def endpoint(name, peer):
    return telemetry(name, f"/rnotify/endpoint,{peer}")


def endpoints(name):
    """{peer name: state} from /rnotify/endpoints, every page of it."""
    out, start = {}, 0
    while True:
        e = telemetry(name, f"/rnotify/endpoints,{start}")
        out.update(zip(e["name"], e["state"]))
        if e["next"] == e["total"]:
            return out
        assert e["next"] > start, e
        start = e["next"]


def rss_kib(pid):
    """A process's resident memory, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def lcore_counters(name):
    """(QPs, endpoint QP sets) of the daemon's first worker lcore."""
    s = status(name)
    return s["qps"][0], s["endpoint_qp_sets"][0]


def threads_of(pid):
    """(name, state, wchan) of each thread of pid, as /proc shows them:
    its state (T stopped, D or S waiting) and the kernel function it waits
    in."""
    out = []
    for tid in sorted(os.listdir(f"/proc/{pid}/task"), key=int):
        with contextlib.suppress(OSError):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
            with open(f"/proc/{pid}/task/{tid}/wchan") as f:
                wchan = f.read() or "-"
            # The name is in parentheses and may hold spaces; the state
            # follows the last ')'.
            out.append((stat[stat.index("(") + 1:stat.rindex(")")],
                        stat[stat.rindex(")") + 2:].split()[0], wchan))
    return out


def die_with_parent():
    """In the child before exec: SIGTERM when the test runner dies, so that
    an interrupted run leaves no daemon behind (Daemons are started from
    the main thread, whose exit is what the kernel watches)."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def wait_until(what, fn, timeout=START_TIMEOUT_S, every=0.05):
    """Poll fn until it returns a true value; fail with what after timeout."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
            if last:
                return last
        except (AssertionError, KeyError, TypeError) as e:
            last = e
        time.sleep(every)
    raise AssertionError(f"{what}: not after {timeout}s (last: {last!r})")


def wait_connected(name, peer):
    """Wait until name's endpoint to peer is connected."""
    wait_until(f"{name} connected to {peer}",
               lambda: endpoint(name, peer)["state"] == "connected")


class Daemon:
    """rnotifyd started on a config: config(name, extra), or text."""

    def __init__(self, name, extra="", text=None, netns=None, env=None):
        self.name = name
        self.killed = False   # by the test: no clean exit to expect
        self.stderr_path = os.path.join(TMP, name + ".err")
        path = write_config(name, text) if text is not None else \
            config(name, extra)
        argv = [RNOTIFYD, "-c", path]
        if netns is not None:
            argv = ["ip", "netns", "exec", netns] + argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                     stderr=open(self.stderr_path, "a"),
                                     env=env, preexec_fn=die_with_parent)

    def stderr(self):
        with open(self.stderr_path) as f:
            return f.read()

    def wait_running(self):
        sock = os.path.join(runtime_dir(self.name), "dpdk_telemetry.v2")

        def running():
            assert self.proc.poll() is None, \
                f"exited {self.proc.returncode}: {self.stderr()}"
            return os.path.exists(sock) and \
                status(self.name)["state"] == "running"
        try:
            wait_until(f"{self.name} running", running, every=0.1)
        except AssertionError as e:
            # Say where it stood: neither CPU nor disk load made a start
            # this slow here, so its cause is in what each thread waits
            # in and what the daemon logged.
            raise AssertionError(
                f"{e}; load {os.getloadavg()}; threads "
                f"{threads_of(self.proc.pid)}; stderr:\n{self.stderr()}"
            ) from None

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is not None:
            return self.proc.returncode
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=START_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"no exit after {sig.name}: {self.stderr()}")

    def kill(self):
        self.killed = True
        self.proc.kill()
        self.proc.wait()


def stop_all(daemons):
    """Stop every daemon (SIGTERM), then fail unless each exited 0, those
    the test killed aside: one that fails to stop still lets the others
    stop."""
    bad = []
    for d in daemons:
        if d.killed:
            continue
        try:
            rc = d.stop()
        except AssertionError as e:
            bad.append(f"{d.name}: {e}")
            continue
        if rc != 0:
            bad.append(f"{d.name}: exit {rc}: {d.stderr()}")
    assert not bad, "\n".join(bad)


class Pair:
    """Two daemons, a and b, each with the other as its one peer. node:
    node_text()'s keywords for both; sides: more for each, a pair of
    dicts. Started and running; connected both ways too when both call
    eagerly."""

    def __init__(self, tag, netns=(None, None), addrs=("127.0.0.1",) * 2,
                 env=(None, None), sides=({}, {}), **node):
        self.names = (unique(tag + "a"), unique(tag + "b"))
        self.a, self.b = self.names
        self.ports = (free_port(), free_port())
        self.netns, self.addrs, self.env = netns, addrs, env
        self.node = [dict(node, **side) for side in sides]
        self.d = [self.start(0), self.start(1)]
        try:
            for d in self.d:
                d.wait_running()
            if all(n.get("connect", "eager") == "eager" for n in self.node):
                wait_connected(self.a, self.b)
                wait_connected(self.b, self.a)
        except BaseException:
            for d in self.d:
                d.kill()
            raise

    def text(self, i):
        j = 1 - i
        return node_text(self.names[i], self.ports[i],
                         [(self.names[j], self.addrs[j], self.ports[j])],
                         listen=self.addrs[i], **self.node[i])

    def start(self, i):
        return Daemon(self.names[i], text=self.text(i), netns=self.netns[i],
                      env=self.env[i])

    def ep(self, i):
        """Daemon i's endpoint to the other."""
        return endpoint(self.names[i], self.names[1 - i])

    def wait_connected(self, i, newer_than=0, session=None):
        """Daemon i's endpoint once connected, with a generation over
        newer_than, to the peer's session if given, and probed."""
        def up():
            e = self.ep(i)
            return e if (e["state"] == "connected" and
                         e["generation"] > newer_than and
                         (session is None or e["peer_session"] == session) and
                         e["probes_ok"] >= 1) else None
        return wait_until(f"{self.names[i]} connected to {self.names[1 - i]}",
                          up)

    def restart(self, i):
        """kill -9 daemon i, start it again on its config, and wait until
        the other side is connected to its new incarnation."""
        gen = self.ep(1 - i)["generation"]
        self.d[i].kill()
        self.d[i] = self.start(i)
        self.d[i].wait_running()
        wait_until("reconnected", lambda: (lambda e: e["state"] ==
                   "connected" and e["generation"] > gen)(self.ep(1 - i)))

    def stop(self):
        stop_all(self.d)


class ReadyHolder:
    """A TCP relay between a caller and its callee's control port that
    holds the caller's READY (and whatever follows it) until release():
    the callee's handshake then ends as late as the test says, while the
    caller's has ended. Frames are relayed whole and unchanged, so the
    secret's proofs and the sim wire (which runs beside, not through it)
    are the daemons' own."""

    def __init__(self, to_port):
        self.to_port = to_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held = threading.Event()      # a READY is waiting here
        self.go = threading.Event()        # let it through
        self.socks = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        with contextlib.suppress(OSError):
            while True:
                caller, _ = self.listener.accept()
                callee = socket.create_connection(("127.0.0.1", self.to_port))
                self.socks += [caller, callee]
                threading.Thread(target=self._caller_to_callee,
                                 args=(caller, callee), daemon=True).start()
                threading.Thread(target=self._pipe, args=(callee, caller),
                                 daemon=True).start()

    def _caller_to_callee(self, src, dst):
        with contextlib.suppress(OSError, ConnectionError):
            while True:
                head = rnproto._read_exact(src, 12)
                (length,) = struct.unpack(">I", head[8:])
                body = rnproto._read_exact(src, length)
                if head[5] == rnproto.READY and not self.go.is_set():
                    self.held.set()
                    self.go.wait()
                dst.sendall(head + body)

    @staticmethod
    def _pipe(src, dst):
        with contextlib.suppress(OSError):
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)

    def release(self):
        self.go.set()

    def close(self):
        self.go.set()
        self.listener.close()
        for s in self.socks:
            with contextlib.suppress(OSError):
                s.close()


class HeldReadyPair(Pair):
    """a calls b (on demand) through a ReadyHolder (self.holder); b calls a
    eagerly at a port where nothing listens, so that b's endpoint to a is
    reconnecting when a's call comes, as with daemons started before
    their peers listen (rnotify-bench's). A generous handshake timeout:
    b waits for the held READY."""

    def __init__(self, tag, **node):
        self.dead_port = free_port()
        self.holder = None
        node.setdefault("connect_timeout", 20000)
        super().__init__(tag, sides=({"connect": "on_demand"}, {}), **node)

    def text(self, i):
        if self.holder is None:
            self.holder = ReadyHolder(self.ports[1])
        port = self.holder.port if i == 0 else self.dead_port
        return node_text(self.names[i], self.ports[i],
                         [(self.names[1 - i], self.addrs[1 - i], port)],
                         listen=self.addrs[i], **self.node[i])

    def kill(self):
        """Kill both daemons (a failed test's way out) and the relay."""
        for d in self.d:
            d.kill()
        self.holder.close()


def rdma_devices():
    """The RDMA devices the kernel shows (what libibverbs lists)."""
    names = set()
    for d in ("/sys/class/infiniband", "/sys/class/infiniband_verbs"):
        with contextlib.suppress(OSError):
            names.update(n for n in os.listdir(d) if n != "abi_version")
    return sorted(names)


class Skip(Exception):
    """Raised by a test that cannot run here: reported as a TAP SKIP with
    its message as the reason, never as a pass."""


def skip_unless(condition, why):
    if not condition:
        raise Skip(why)


SEED_ENV = "RNOTIFY_TEST_SEED"
# One seed per run, from the environment to replay a failure, else the
# clock; each test draws from its own generator (seed and test name), so
# that a test replays alike alone (RN_TEST_ONLY) or among the others.
SEED = int(os.environ.get(SEED_ENV, time.time_ns() % (1 << 32)))
_current = None   # the test running now
_notes = []


def note(line):
    """A line printed with the current test's TAP result, pass or fail."""
    _notes.append(line)


def seeded_random():
    """The random generator for the running test's choices; its seed is
    printed with the test's result."""
    note(f"random choices: {SEED_ENV}={SEED} replays them")
    return random.Random(f"{SEED}-{_current}")


def _run_one(number, fn):
    """Run one test; print its TAP line at once, so that a run that times
    out still shows what passed."""
    global _current
    _current = fn.__name__
    _notes.clear()
    ok, why = True, ""
    try:
        fn()
    except Skip as e:
        ok, why = None, str(e)
    except AssertionError as e:
        # A bare assert says nothing: then where it failed.
        ok, why = False, str(e) or traceback.format_exc()
    except Exception:
        ok, why = False, traceback.format_exc()
    if ok is None:
        print(f"ok {number} - {fn.__name__} # SKIP {why}")
    else:
        print(f"{'ok' if ok else 'not ok'} {number} - {fn.__name__}")
    for line in _notes + (why.splitlines() if ok is False else []):
        print(f"# {line}")
    sys.stdout.flush()
    return ok is not False


def run_tests(namespace):
    """Run every test_* function a test file defines, in the order of its
    definitions, print TAP, and exit: pass the file's globals(). With
    RN_TEST_ONLY=name, that one test only."""
    tests = [fn for name, fn in namespace.items()
             if name.startswith("test_") and callable(fn) and
             getattr(fn, "__module__", None) == namespace["__name__"]]
    only = os.environ.get("RN_TEST_ONLY")
    if only is not None:
        tests = [fn for fn in tests if fn.__name__ == only]
    if not tests:
        print(f"1..0 # SKIP RN_TEST_ONLY={only} names no test here")
        shutil.rmtree(TMP, ignore_errors=True)
        sys.exit(0)
    passed = [_run_one(i, fn) for i, fn in enumerate(tests, 1)]
    print(f"1..{len(tests)}")
    shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(0 if all(passed) else 1)
