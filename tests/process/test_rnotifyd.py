#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for rnotifyd: start it, read /rnotify/status with DPDK's own
telemetry client, stop it with a signal, and check the bad-input exits.
Prints TAP. Usage: test_rnotifyd.py RNOTIFYD"""

import os
import signal
import subprocess
import time

from rntest import (RNOTIFYD, TMP, Daemon, config, rdma_devices, run_tests,
                    runtime_dir, skip_unless, status, stop_all, unique)


def test_start_status_stop():
    d = Daemon(unique("a"))
    try:
        d.wait_running()
        s = status(d.name)
        assert s["name"] == d.name, s
        assert s["pid"] == d.proc.pid, s
        assert s["provider"] == "sim", s
        assert s["version"], s
        assert s["worker_lcores"] == [1], s
        assert s["main_lcore"] == 0, s
        assert s["idle"] == "adaptive", s
        assert s["memory"] in ("hugepages", "ordinary"), s
        assert s["commands"][0] >= 1, s   # the start-up ping
        loops = s["loops"][0]
        time.sleep(0.3)
        assert status(d.name)["loops"][0] > loops, "worker loop not running"
        # The operator's client (the tests speak its protocol directly).
        out = subprocess.run(["dpdk-telemetry.py", "-f", "rnotify-" + d.name],
                             input="/rnotify/status\n", capture_output=True,
                             text=True, timeout=30).stdout
        assert f'"pid": {d.proc.pid}' in out, out
    finally:
        rc = d.stop()
    assert rc == 0, f"exit {rc}: {d.stderr()}"
    err = d.stderr()
    assert "SIGTERM received: stopping" in err, err
    assert "rnotifyd: stopped cleanly" in err, err
    # Every /rnotify command registered (a help text over 127 characters
    # is refused, and the command with it).
    assert "telemetry commands not registered" not in err, err


def test_idle_worker_polls_once_per_sleep():
    # An adaptive worker with nothing to do sleeps after idle_polls empty
    # polls, then polls once per wake-up: each poll costs a syscall for the
    # sim's progress, so idle_polls (1024) polls per sleep kept an idle
    # daemon at half a CPU.
    d = Daemon(unique("idle"))
    try:
        d.wait_running()
        time.sleep(0.5)
        before = status(d.name)
        time.sleep(1.0)
        after = status(d.name)
        loops = after["loops"][0] - before["loops"][0]
        sleeps = after["sleeps"][0] - before["sleeps"][0]
        assert sleeps > 0, (before, after)
        assert loops <= 2 * sleeps + 16, \
            f"{loops} loops for {sleeps} sleeps in an idle second"
    finally:
        rc = d.stop()
    assert rc == 0, f"exit {rc}: {d.stderr()}"


def test_sigint_and_ordinary_memory():
    d = Daemon(unique("b"), "hugepages = off\n")
    try:
        d.wait_running()
        assert status(d.name)["memory"] == "ordinary"
    finally:
        rc = d.stop(signal.SIGINT)
    assert rc == 0, f"exit {rc}: {d.stderr()}"
    assert "SIGINT received: stopping" in d.stderr(), d.stderr()


def test_two_instances_side_by_side():
    a, b = Daemon(unique("c")), Daemon(unique("d"), "lcores = 0-1\n")
    try:
        a.wait_running()
        b.wait_running()
        assert status(a.name)["pid"] != status(b.name)["pid"]
    finally:
        stop_all((a, b))


def test_same_name_refused():
    a = Daemon(unique("j"))
    try:
        a.wait_running()
        rc, out, err = run_bad(["-c", config(unique("j"))])
        assert rc == 1, (rc, err)
        assert err == (f"rnotifyd: another rnotifyd named '{a.name}' is "
                       "running; give this one another [dataplane] name\n"), err
        assert status(a.name)["pid"] == a.proc.pid
    finally:
        assert a.stop() == 0, a.stderr()


def test_missing_cpu_fails_cleanly():
    rc, out, err = run_bad(["-c", config(unique("k"), "lcores = 0,127\n")])
    assert rc == 1, (rc, err)
    assert err == ("rnotifyd: [dataplane] lcores: CPU 127 is not available "
                   f"to this process ({len(os.sched_getaffinity(0))} CPUs "
                   "available)\n"), err
    # With [dataplane] cpus, the CPUs named there are the ones needed.
    rc, out, err = run_bad(["-c", config(unique("k"), "lcores = 0,127\n"
                                                      "cpus = 0,1000\n")])
    assert rc == 1, (rc, err)
    assert err == ("rnotifyd: [dataplane] cpus: CPU 1000 is not available "
                   f"to this process ({len(os.sched_getaffinity(0))} CPUs "
                   "available)\n"), err


def test_mlx5_without_device_fails_cleanly():
    # With an RDMA device the daemon would start instead: nothing to test.
    devices = rdma_devices()
    skip_unless(not devices, f"this machine has RDMA devices "
                f"({', '.join(devices)}); the test needs one without any")
    name = unique("l")
    rc, out, err = run_bad(["-c", config(name, "[nic]\nprovider = mlx5\n")])
    assert rc == 1, (rc, err)
    assert "rnotifyd: lcore 1: no RDMA device found; set [nic] provider = " \
           "sim\n" in err, err
    assert "stopped cleanly" not in err, err


def test_cq_too_small_for_the_data_qps_fails_cleanly():
    """A CQ that cannot hold one endpoint's data QPs (2 x 129 CQEs) means
    that no endpoint could ever open: the start fails, saying so."""
    name = unique("q")
    rc, out, err = run_bad(["-c", config(name, "[nic]\ncq_size = 256\n")])
    assert rc == 1, (rc, err)
    assert "rnotifyd: lcore 1: [nic] cq_size = 256: a CQ of 256 CQEs " \
           "cannot hold an endpoint's 2 data QPs (258 CQEs): no endpoint " \
           "could open; cq_size must be at least 258\n" in err, err
    assert "stopped cleanly" not in err, err


def run_bad(args, env=None):
    p = subprocess.run([RNOTIFYD] + args, capture_output=True, text=True,
                       timeout=30, env=env)
    return p.returncode, p.stdout, p.stderr


def test_bad_config_exits_2():
    name = unique("e")
    path = config(name, "[notify]\nslots = 0\n")
    rc, out, err = run_bad(["-c", path])
    assert rc == 2, (rc, err)
    assert err == (f"rnotifyd: {path}:6: [notify] slots = 0: out of range; "
                   "allowed 1, 2, 4, .., 4096\n"), err
    assert not os.path.exists(runtime_dir(name)), "EAL was started"


def test_bad_env_exits_2():
    env = dict(os.environ, MC_RDMA_NOTIFY_ENABLED="maybe")
    rc, out, err = run_bad(["-c", config(unique("f"))], env)
    assert rc == 2, (rc, err)
    assert err == ("rnotifyd: environment MC_RDMA_NOTIFY_ENABLED=maybe: not "
                   "a boolean; allowed 0, 1, true, false, on, off\n"), err


def test_missing_file_exits_2():
    rc, out, err = run_bad(["-c", os.path.join(TMP, "nope.ini")])
    assert rc == 2, (rc, err)
    assert "cannot read config file" in err and "No such file" in err, err


def test_bad_usage_exits_2():
    rc, out, err = run_bad(["--bogus"])
    assert rc == 2, (rc, err)
    assert "usage: rnotifyd" in err, err


def test_check_config():
    path = config(unique("g"), "[peer b]\naddress = ::1\nport = 7000\n")
    env = dict(os.environ, MC_RDMA_NOTIFY_OOB_FALLBACK="0")
    rc, out, err = run_bad(["--check-config", path], env)
    assert rc == 0, (rc, err)
    assert "oob_fallback = false\n" in out, out
    assert "[peer b]\naddress = ::1\nport = 7000\n" in out, out
    rc, out, err = run_bad(["--check-config", config(unique("h"),
                                                    "lcores = 3-1\n")])
    assert rc == 2 and "[dataplane] lcores = 3-1: not an lcore list" in err, err


def test_hugepages_on_unavailable_fails_cleanly():
    # More than any test machine has free: start-up must refuse, not fall back.
    name = unique("i")
    path = config(name, "hugepages = on\n").replace(".ini", "")
    with open(path + ".ini") as f:
        text = f.read().replace("memory_mb = 32", "memory_mb = 65536")
    with open(path + ".ini", "w") as f:
        f.write(text)
    rc, out, err = run_bad(["-c", path + ".ini"])
    assert rc == 1, (rc, err)
    assert "rnotifyd: [dataplane] hugepages = on, but hugepages cannot be " \
           "used:" in err, err


run_tests(globals())
