# SPDX-License-Identifier: BSD-3-Clause
"""rnotify: a client of rnotifyd, the notification daemon of this host.

A Client attaches to the daemon under an agent name, sends notifications
to (node, agent) and takes those delivered to its own agent::

    import rnotify
    with rnotify.Client("worker-0", socket=rnotify.socket_path("node-a")) as c:
        c.send("node-b", "worker-1", b"kv-7", b"block 7 is ready")
        for n in c.poll():
            print(n.node, n.agent, n.name, n.msg)

and moves bytes between registered memory of two nodes by RDMA, with a
notification that the daemon sends once they are there::

    buf = c.alloc(1 << 20)                 # memory the daemon can map
    region = c.register(buf)
    remote = c.import_desc(c.fetch("node-b", "kv-cache"))
    batch = c.write([(region, 0, remote, 0, len(buf))],
                    notify=("worker-1", b"kv-7", b"block 7 is there"))
    batch.wait()
    batch.release()

Client, Notification, Event and the types of transfers come from the C
extension rnotify._rnotify (librnotify, rn_client.h); docs/client.md
("Python") is the reference.
"""

import os

from . import _rnotify
from ._rnotify import (ACCESS_ALL, AGENT_MAX, DESC_SIZE, EVENT_TYPES,
                       LOCAL_WRITE, MAX_REGIONS, NODE_MAX, POLL_MAX,
                       PUBLISH_NAME_MAX, REG_MAX_PIECES, REMOTE_READ,
                       REMOTE_WRITE, SOCKET_ENV, XFER_FAILED_NAME,
                       XFER_MAX_REMOTES, Batch, Buffer, Completion, Event,
                       Notification, Region, Remote)

__all__ = ["ACCESS_ALL", "AGENT_MAX", "DEFAULT_NODE", "DESC_SIZE",
           "EVENT_TYPES", "LOCAL_WRITE", "MAX_REGIONS", "NODE_MAX",
           "POLL_MAX", "PUBLISH_NAME_MAX", "REG_MAX_PIECES", "REMOTE_READ",
           "REMOTE_WRITE", "SOCKET_ENV", "XFER_FAILED_NAME",
           "XFER_MAX_REMOTES", "Batch", "Buffer", "Client", "Completion",
           "Event", "Notification", "Region", "Remote", "runtime_dir",
           "socket_path", "telemetry_path"]

# [dataplane] name when a daemon's configuration gives none.
DEFAULT_NODE = "rnotify"


class Client(_rnotify.Client):
    __doc__ = _rnotify.Client.__doc__.replace(
        "(None: $RNOTIFY_SOCKET)",
        "(None: $RNOTIFY_SOCKET, else socket_path(), the default daemon's)")

    def __init__(self, agent, socket=None):
        if socket is None and not os.environ.get(SOCKET_ENV):
            socket = socket_path()
        super().__init__(agent, socket)


def runtime_dir():
    """The daemon's run-time directory, by the rule rnotifyd uses
    (control/daemon/daemon_lock.c): /run/rnotify for root, else
    $XDG_RUNTIME_DIR/rnotify, else /tmp/rnotify-UID."""
    if os.geteuid() == 0:
        return "/run/rnotify"
    xdg = os.environ.get("XDG_RUNTIME_DIR", "")
    if xdg.startswith("/"):
        return os.path.join(xdg, "rnotify")
    return f"/tmp/rnotify-{os.geteuid()}"


def socket_path(node=DEFAULT_NODE):
    """The client socket of the daemon named node when its [client]
    socket is the default: <run-time directory>/<node>.sock."""
    return os.path.join(runtime_dir(), node + ".sock")


def telemetry_path(node=DEFAULT_NODE):
    """The DPDK telemetry socket of the daemon named node (its EAL file
    prefix is rnotify-<node>), by DPDK's rule: /var/run for root, else
    $XDG_RUNTIME_DIR or /tmp; $RUNTIME_DIRECTORY replaces either."""
    base = os.environ.get("RUNTIME_DIRECTORY")
    if not base:
        base = "/var/run" if os.geteuid() == 0 else \
            os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, "dpdk", "rnotify-" + node, "dpdk_telemetry.v2")
