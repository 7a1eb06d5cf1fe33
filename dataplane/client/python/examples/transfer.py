#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Move a file's bytes into a peer's memory by RDMA WRITE, with a
notification the peer gets once they are there.

  transfer.py serve [--socket PATH] AGENT NAME SIZE
      attach as AGENT, register SIZE bytes, publish them as NAME, and
      print "NODE AGENT NAME LENGTH SHA256" for each notification that
      says LENGTH bytes landed (until --count of them)
  transfer.py send [--socket PATH] NODE AGENT NAME FILE
      fetch NODE's descriptor NAME, WRITE FILE's bytes to its start and
      notify AGENT there; exit once the batch is done
"""

import argparse
import hashlib
import os
import sys
import time

import rnotify

TIMEOUT_S = 10


def serve(c, args):
    buf = c.alloc(args.size)
    region = c.register(buf)
    region.publish(args.name)
    print(f"serving {args.size} bytes as {args.name} on {c.node}",
          file=sys.stderr, flush=True)
    mem = memoryview(buf)
    seen = 0
    while args.count is None or seen < args.count:
        c.wait(1.0)
        for n in c.poll():
            length = int(n.msg)
            digest = hashlib.sha256(mem[:length]).hexdigest()
            print(n.node, n.agent, n.name.decode(), length, digest,
                  flush=True)
            seen += 1


def send(c, args):
    with open(args.file, "rb") as f:
        data = f.read()
    buf = c.alloc(max(len(data), 1))
    memoryview(buf)[:len(data)] = data
    region = c.register(buf, access=rnotify.LOCAL_WRITE)
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            # The first call to a node starts its endpoint: EAGAIN
            # until it is up.
            remote = c.import_desc(c.fetch(args.node, args.name,
                                           timeout=TIMEOUT_S))
            batch = c.write([(region, 0, remote, 0, len(data))],
                            notify=(args.agent, args.name,
                                    str(len(data))))
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)
    with batch:
        batch.wait(TIMEOUT_S)
    print(f"wrote {len(data)} bytes to {args.name} on {args.node}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", help="the daemon's client socket "
                   "(default $RNOTIFY_SOCKET)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--count", type=int)
    s.add_argument("agent")
    s.add_argument("name")
    s.add_argument("size", type=int)
    s = sub.add_parser("send")
    s.add_argument("--as", dest="sender", default=f"sender-{os.getpid()}")
    s.add_argument("node")
    s.add_argument("agent")
    s.add_argument("name")
    s.add_argument("file")
    args = p.parse_args()
    agent = args.agent if args.cmd == "serve" else args.sender
    try:
        with rnotify.Client(agent, socket=args.socket) as c:
            (serve if args.cmd == "serve" else send)(c, args)
    except OSError as e:
        sys.exit(f"transfer.py: {e}")
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
