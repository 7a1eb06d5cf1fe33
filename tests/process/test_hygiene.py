#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for rnotifyd's start-up hygiene: the name is claimed in a
way another user cannot forge, the configuration loader refuses files that
are not regular, and every log line carries its time. Prints TAP.
Usage: test_hygiene.py RNOTIFYD"""

import os
import re
import socket
import subprocess
import tempfile

from rntest import RNOTIFYD, TMP, Daemon, config, run_tests, status, unique

# daemon_log.c: "2026-01-31T12:34:56.789Z " before every log line.
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z ")
NOBODY = 65534


def run(args, env=None, user=None):
    def drop():
        os.setgid(user)
        os.setuid(user)
    p = subprocess.run([RNOTIFYD] + args, capture_output=True, text=True,
                       timeout=30, env=env,
                       preexec_fn=drop if user is not None else None)
    return p.returncode, p.stdout, p.stderr


def lock_path(name):
    """daemon_lock.c's lock file of this user's daemon called name."""
    if os.geteuid() == 0:
        base = "/run/rnotify"
    elif os.environ.get("XDG_RUNTIME_DIR", "").startswith("/"):
        base = os.path.join(os.environ["XDG_RUNTIME_DIR"], "rnotify")
    else:
        base = f"/tmp/rnotify-{os.geteuid()}"
    netns = os.stat("/proc/self/ns/net").st_ino
    return os.path.join(base, f"{name}.{netns}.lock")


def test_squatted_abstract_socket_does_not_block_start():
    """Anyone may bind @rnotifyd/NAME: it must not keep rnotifyd from
    starting, nor be mistaken for one."""
    name = unique("s")
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(b"\0rnotifyd/" + name.encode())
    d = Daemon(name)
    try:
        d.wait_running()
        assert status(name)["pid"] == d.proc.pid
        with open(lock_path(name)) as f:
            assert f.read() == f"{d.proc.pid}\n"
        # The lock, not the socket, refuses a second one of that name.
        rc, out, err = run(["-c", config(name)])
        assert rc == 1, (rc, err)
        assert err == (f"rnotifyd: another rnotifyd named '{name}' is "
                       "running; give this one another [dataplane] name\n"), \
            err
    finally:
        squatter.close()
        rc = d.stop()
    assert rc == 0, f"exit {rc}: {d.stderr()}"
    assert not os.path.exists(lock_path(name)), "lock file left behind"


def test_runtime_dir_of_another_user_refused():
    """A run-time directory that another user owns, or that others may
    write, could hold a forged lock: start-up refuses it, saying whose it
    is. As root the check runs as nobody, whose directory is
    $XDG_RUNTIME_DIR/rnotify."""
    user = NOBODY if os.geteuid() == 0 else None
    uid = NOBODY if user is not None else os.geteuid()
    base = tempfile.mkdtemp(prefix="rn-hygiene-", dir=TMP)
    os.chmod(TMP, 0o755)
    os.chmod(base, 0o755)
    path = config(unique("r"), secret=None)   # nobody cannot read ours
    os.replace(path, os.path.join(base, "r.ini"))
    path = os.path.join(base, "r.ini")
    os.chmod(path, 0o644)
    rundir = os.path.join(base, "rnotify")
    env = dict(os.environ, XDG_RUNTIME_DIR=base)
    cases = [(0o777, uid)]
    if user is not None:
        cases.append((0o700, 0))   # owned by root, not by nobody
    for mode, owner in cases:
        os.mkdir(rundir)
        os.chmod(rundir, mode)
        if owner != os.geteuid():
            os.chown(rundir, owner, -1)
        rc, out, err = run(["-c", path], env, user)
        os.rmdir(rundir)
        assert rc == 1, (rc, err)
        assert err == (f"rnotifyd: run-time directory '{rundir}' is owned by "
                       f"uid {owner} with mode {mode:04o}; allowed a "
                       f"directory of this user's (uid {uid}) with mode "
                       "0700\n"), err


def test_check_config_refuses_special_files():
    """A device never ends and a FIFO blocks: refused before reading."""
    rc, out, err = run(["--check-config", "/dev/zero"])
    assert rc == 2, (rc, err)
    assert err == ("rnotifyd: cannot read config file '/dev/zero': a "
                   "character device; allowed a regular file of at most "
                   "1048576 bytes\n"), err
    fifo = os.path.join(TMP, "fifo.ini")
    os.mkfifo(fifo)
    rc, out, err = run(["--check-config", fifo])
    assert rc == 2, (rc, err)
    assert err == (f"rnotifyd: cannot read config file '{fifo}': a FIFO; "
                   "allowed a regular file of at most 1048576 bytes\n"), err


def test_every_log_line_has_a_timestamp():
    d = Daemon(unique("t"))
    try:
        d.wait_running()
    finally:
        rc = d.stop()
    assert rc == 0, f"exit {rc}: {d.stderr()}"
    lines = d.stderr().splitlines()
    assert any("rnotifyd: stopped cleanly" in line for line in lines), lines
    bare = [line for line in lines if not STAMP.match(line)]
    assert not bare, f"lines without a timestamp: {bare}"


run_tests(globals())
