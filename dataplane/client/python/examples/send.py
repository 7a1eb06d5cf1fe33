#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Send one notification to AGENT on NODE and wait until the peer's NIC
acknowledged it.

Usage: send.py [--socket PATH] [--as AGENT] NODE AGENT NAME MSG
"""

import argparse
import os
import sys
import time

import rnotify

TIMEOUT_S = 5
COOKIE = 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", help="the daemon's client socket "
                   "(default $RNOTIFY_SOCKET)")
    p.add_argument("--as", dest="sender", default=f"sender-{os.getpid()}",
                   help="the agent to send as")
    p.add_argument("node")
    p.add_argument("agent")
    p.add_argument("name")
    p.add_argument("msg")
    args = p.parse_args()
    deadline = time.monotonic() + TIMEOUT_S
    with rnotify.Client(args.sender, socket=args.socket) as c:
        while True:
            try:
                c.send(args.node, args.agent, args.name.encode(),
                       args.msg.encode(), cookie=COOKIE,
                       want_completion=True)
                break
            except BlockingIOError:
                # The first send to a node starts connecting its endpoint.
                if time.monotonic() > deadline:
                    sys.exit("send.py: the endpoint did not connect")
                time.sleep(0.01)
        while time.monotonic() < deadline:
            c.wait(max(0, deadline - time.monotonic()))
            for cookie, status in c.completions():
                if cookie == COOKIE:
                    if status != 0:
                        sys.exit(f"send.py: {os.strerror(-status)}")
                    print(f"sent to {args.agent} on {args.node}")
                    return 0
    sys.exit("send.py: no acknowledgement")


if __name__ == "__main__":
    sys.exit(main())
