# SPDX-License-Identifier: BSD-3-Clause
"""Shared helpers for the process tests: daemons started from a config,
DPDK's telemetry client, waits with deadlines (for events, never to assert
timing), and TAP output."""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

RNOTIFYD = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="rn-process-test-")
START_TIMEOUT_S = 20
_results = []


def unique(tag):
    return f"t{os.getpid() % 100000}{tag}"


def write_config(name, text):
    path = os.path.join(TMP, name + ".ini")
    with open(path, "w") as f:
        f.write(text)
    return path


def config(name, extra=""):
    """A test daemon's config; its control port is any free one unless
    extra has a [control] section."""
    control = "" if "[control]" in extra else "[control]\nport = 0\n"
    notify = "" if "[notify]" in extra else \
        "[notify]\nslots = 16\nslot_size = 4096\n"
    return write_config(name, f"[dataplane]\nname = {name}\nmemory_mb = 32\n"
                              f"idle = adaptive\n{extra}\n{control}{notify}")


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


class Daemon:
    def __init__(self, name, extra="", text=None, netns=None, env=None):
        self.name = name
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
        wait_until(f"{self.name} running", running, every=0.1)

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
        self.proc.kill()
        self.proc.wait()


def tap(fn):
    try:
        fn()
        _results.append((True, fn.__name__, ""))
    except AssertionError as e:
        # A bare assert says nothing: then where it failed.
        _results.append((False, fn.__name__,
                         str(e) or traceback.format_exc()))
    except Exception:
        _results.append((False, fn.__name__, traceback.format_exc()))


def skip(fn, why):
    _results.append((None, fn.__name__, why))


def finish():
    print(f"1..{len(_results)}")
    for i, (ok, name, why) in enumerate(_results, 1):
        if ok is None:
            print(f"ok {i} - {name} # SKIP {why}")
            continue
        print(f"{'ok' if ok else 'not ok'} {i} - {name}")
        for line in why.splitlines():
            print(f"# {line}")
    shutil.rmtree(TMP, ignore_errors=True)
    sys.exit(0 if all(ok is not False for ok, _, _ in _results) else 1)
