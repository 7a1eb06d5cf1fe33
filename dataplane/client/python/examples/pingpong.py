#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Round trips between two Python client processes: a pinger attached to
one daemon and a ponger (a child process) attached to another (or the
same), which echoes each notification back; prints the round trip's
percentiles in microseconds. The figure includes both daemons' lcores and
the wire (loopback here).

Usage: pingpong.py [--count N] [--size BYTES] [--spin]
                   PING_SOCKET PING_NODE PONG_SOCKET PONG_NODE
  --spin: poll without waiting (burns a CPU per client; else wait(),
          which spins librnotify's spin time, RNOTIFY_SPIN_US, then
          blocks on the fd)
"""

import argparse
import multiprocessing
import os
import sys
import time

import rnotify


def send(c, node, agent, msg):
    while True:
        try:
            return c.send(node, agent, b"pp", msg)
        except BlockingIOError:   # connecting, or a ring is full
            time.sleep(0.0001)


def take_one(c, spin):
    while True:
        got = c.poll(1)
        if got:
            return got[0]
        if not spin:
            c.wait()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--spin", action="store_true")
    p.add_argument("ping_socket")
    p.add_argument("ping_node")
    p.add_argument("pong_socket")
    p.add_argument("pong_node")
    args = p.parse_args()
    tag = os.getpid()
    ping_agent, pong_agent = f"ping-{tag}", f"pong-{tag}"
    msg = b"x" * args.size
    warmup = 10
    ready = multiprocessing.Event()

    def echo():
        pong = rnotify.Client(pong_agent, socket=args.pong_socket)
        ready.set()
        for _ in range(args.count + warmup):
            n = take_one(pong, args.spin)
            send(pong, args.ping_node, ping_agent, n.msg)
        pong.detach()

    ping = rnotify.Client(ping_agent, socket=args.ping_socket)
    child = multiprocessing.get_context("fork").Process(target=echo)
    child.start()
    if not ready.wait(10):
        sys.exit("pingpong.py: the ponger did not attach")
    rtts = []
    for i in range(args.count + warmup):
        t0 = time.perf_counter_ns()
        send(ping, args.pong_node, pong_agent, msg)
        n = take_one(ping, args.spin)
        if i >= warmup:
            rtts.append((time.perf_counter_ns() - t0) / 1000)
        assert n.msg == msg
    child.join()
    ping.detach()
    if child.exitcode != 0:
        sys.exit(f"pingpong.py: the ponger failed ({child.exitcode})")
    rtts.sort()

    def pct(q):
        return rtts[min(len(rtts) - 1, int(q * len(rtts)))]
    print(f"round trips: {len(rtts)} of {args.size} bytes, "
          f"{'spinning' if args.spin else 'waiting'}: "
          f"p50 {pct(0.5):.1f} us, p90 {pct(0.9):.1f} us, "
          f"p99 {pct(0.99):.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
