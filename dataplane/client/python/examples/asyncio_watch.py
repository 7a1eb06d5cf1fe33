#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Print the notifications delivered to an agent as they arrive, from an
asyncio event loop: the client's fd joins the loop with add_reader, and
the callback takes what waits whenever it is readable. One line a
delivery: NODE AGENT NAME MSG (the sender's node and agent).

Usage: asyncio_watch.py [--socket PATH] [--count N] AGENT
  --socket  the daemon's client socket (default $RNOTIFY_SOCKET)
  --count   stop after N deliveries (default: run until Ctrl-C)
"""

import argparse
import asyncio
import sys

import rnotify


def show(value):
    return value.decode("utf-8", "backslashreplace")


async def watch(client, count):
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    seen = 0

    def readable():
        # Level-triggered: take everything, or the loop calls again.
        nonlocal seen
        try:
            client.completions()
            for e in client.events():
                print(f"event {e.type} {e.node}", file=sys.stderr)
            for n in client.poll():
                print(n.node, n.agent, show(n.name), show(n.msg), flush=True)
                seen += 1
        except OSError as e:   # ENOTCONN: the daemon is gone
            if not done.done():
                done.set_exception(e)
            return
        if count is not None and seen >= count and not done.done():
            done.set_result(seen)

    loop.add_reader(client.fileno(), readable)
    try:
        return await done
    finally:
        loop.remove_reader(client.fileno())


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--socket", help="the daemon's client socket")
    p.add_argument("--count", type=int, help="stop after N deliveries")
    p.add_argument("agent")
    args = p.parse_args()
    with rnotify.Client(args.agent, socket=args.socket) as client:
        print(f"attached as {client.agent} on {client.node}",
              file=sys.stderr, flush=True)
        try:
            asyncio.run(watch(client, args.count))
        except KeyboardInterrupt:
            pass
        except OSError as e:
            print(f"asyncio_watch: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
