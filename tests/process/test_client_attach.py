#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Process tests for rnotifyd's client server: the attach protocol of
dataplane/client/rn_client_msg.h spoken raw on the [client] socket (no
library), the region and status page the daemon hands over, every refusal
with its errno, and kill -9 of attached clients without a leak. Prints TAP.
Usage: test_client_attach.py RNOTIFYD"""

import errno
import mmap
import select
import os
import signal
import socket
import stat
import struct
import time

from rntest import (RNOTIFYD, TMP, Daemon, Pair, Skip, note, run_tests,
                    seeded_random, status, stop_all, telemetry, unique,
                    wait_until)

# rn_client_msg.h
PROTO_VERSION = 2
REPLY = 0x8000
ATTACH, RESOLVE, PEER_ADD, PEER_REMOVE, DETACH = 1, 2, 3, 4, 5
REG, DEREG, PUBLISH, FETCH = 6, 7, 8, 9
HDR = struct.Struct("<HHiII")           # type, version, status, len, pad
ATTACHED = struct.Struct("<QIIII32s")   # region_size .. node
RESOLVED = struct.Struct("<HHI")        # ep_index, lcore, tag
PEER = struct.Struct("<32s64sH6x")      # name, address, port
MSG_MAX = 512
AGENT_MAX = 128
# Transfers: struct rn_client_reg_req (addr, access, flags, n_pieces, pad,
# then 16 pieces of offset, length), rn_client_registered, publish, fetch.
REG_REQ = struct.Struct("<QIIII")
PIECE = struct.Struct("<QQ")
MAX_PIECES, MAX_REGIONS = 16, 64
REGISTERED = struct.Struct("<II192s")
PUBLISH_REQ = struct.Struct("<I64s")
FETCH_REQ = struct.Struct("<32s64sI")
LOCAL_WRITE, REMOTE_WRITE, REMOTE_READ = 1, 2, 4
REG_DMABUF = 1
# rn_xfer_desc.h's wire form: magic, version, n_keys, node, session, addr,
# length, 16 keys of (lcore, rkey).
DESC = struct.Struct("<IHH32sQQQ128s")
DESC_MAGIC = 0x44584E52
PAGE = mmap.PAGESIZE
HUGE = 2 << 20
MFD_HUGETLB = 4
# rn_client_shm.h: the region's header (offsets from its start) and the
# status page's.
SHM_MAGIC, STATUS_MAGIC, SHM_VERSION = 0x524E4352, 0x524E5350, 3
MAX_LCORES = 16
REGION_HEAD = struct.Struct("<IIQIIII")  # magic, version, size, n_lcores,
#                                          ring_size, buf_size, pad0
OFFSETS_AT = REGION_HEAD.size            # submit, deliver, send, recv [16]
EVENTS_OFF_AT = OFFSETS_AT + 4 * MAX_LCORES * 8
XFER_SLOTS_AT = EVENTS_OFF_AT + 8        # xfer_slots, xfer_slot_size
XFER_OFF_AT = XFER_SLOTS_AT + 8          # xfer_off[16]
XFER_SLOT_STATUS_AT = 0                  # struct rn_client_xfer_slot
ARMED_AT, CLOSED_AT = 704, 768
# DPDK 22.11's struct rte_ring: size, mask, capacity; prod and cons
# head/tail pairs on their own lines.
RING_SIZE_AT, RING_PROD_AT, RING_CONS_AT = 48, 128, 256
RING_ELEMS_AT = 384                      # sizeof(struct rte_ring)
EVENTS_RING_SIZE = 256                   # client_region.c
# rn_client.h: struct rn_client_event and its types
EVENT = struct.Struct("<IiQ32s129s7x")
PEER_DOWN, PEER_UP, PEER_RESTARTED, PEER_REMOVED = 1, 2, 3, 4
# fcntl seals
F_GET_SEALS = 1034
F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW = 1, 2, 4
NOBODY = 65534


def client_config(name, extra="", socket_path=None, notify=None,
                  dataplane=""):
    """A daemon with its [client] socket in the test's directory."""
    path = socket_path or os.path.join(TMP, name + ".sock")
    client = f"[client]\nsocket = {path}\n{extra}"
    notify = notify or "[notify]\nslots = 16\nslot_size = 4000\n"
    return path, f"[dataplane]\nname = {name}\nmemory_mb = 32\n" \
                 f"idle = adaptive\n{dataplane}[control]\nport = 0\n" \
                 f"{notify}{client}"


class ClientDaemon(Daemon):
    def __init__(self, tag, extra="", notify=None, dataplane=""):
        name = unique(tag)
        self.sock, text = client_config(name, extra, notify=notify,
                                        dataplane=dataplane)
        super().__init__(name, text=text)
        self.wait_running()

    def fds(self):
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def settled_fds(self):
        """The descriptor count once two reads 0.1 s apart agree: a
        telemetry connection of ours may close a moment after its reply."""
        def same():
            n = self.fds()
            time.sleep(0.1)
            return n if self.fds() == n else None
        return wait_until("descriptors settled", same)

    def fd_list(self):
        base = f"/proc/{self.proc.pid}/fd"
        out = []
        for fd in os.listdir(base):
            try:
                out.append(os.readlink(f"{base}/{fd}"))
            except OSError:
                pass
        return sorted(out)

    def rss_kb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise AssertionError("no VmRSS")

    def clients(self):
        return clients(self.name)


def clients(name):
    """/rnotify/clients of daemon name as a list of dicts, every page."""
    rows, start = [], 0
    while True:
        page = telemetry(name, f"/rnotify/clients,{start}")
        columns = [k for k in page if isinstance(page[k], list)]
        rows += [dict(zip(columns, vals)) for vals in
                 zip(*(page[k] for k in columns))]
        if page["next"] == page["total"]:
            return rows
        start = page["next"]


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    return s


def request(s, mtype, body=b"", version=PROTO_VERSION, fds=()):
    """Send one request; its reply: (status, body, fds)."""
    msg = HDR.pack(mtype, version, 0, len(body), 0) + body
    if fds:
        socket.send_fds(s, [msg], list(fds))
    else:
        s.send(msg)
    data, got, _, _ = socket.recv_fds(s, MSG_MAX, 32)
    assert len(data) >= HDR.size, f"short reply {data!r}"
    rtype, rversion, rstatus, rlen, _ = HDR.unpack_from(data)
    assert rtype == mtype | REPLY, (rtype, mtype)
    assert rversion == PROTO_VERSION, rversion
    assert rlen == len(data) - HDR.size, (rlen, len(data))
    return rstatus, data[HDR.size:], got


def attach(path, agent, **kw):
    """(socket, status, struct rn_client_attached or None, fds)."""
    s = connect(path)
    st, body, fds = request(s, ATTACH, agent, **kw)
    if st != 0:
        assert fds == [] and body == b"", (st, body, fds)
        return s, st, None, fds
    assert len(body) == ATTACHED.size, len(body)
    return s, st, ATTACHED.unpack(body), fds


def closed_fds(fds):
    for fd in fds:
        os.close(fd)


def ring_empty(m, off, size):
    rsize, mask, cap = struct.unpack_from("<III", m, off + RING_SIZE_AT)
    ph, pt = struct.unpack_from("<II", m, off + RING_PROD_AT)
    ch, ct = struct.unpack_from("<II", m, off + RING_CONS_AT)
    assert (rsize, mask, cap) == (size, size - 1, size - 1), \
        (off, rsize, mask, cap)
    assert ph == pt == ch == ct, (off, ph, pt, ch, ct)


def check_region(fd, a, xfer=(16, 131072)):
    """What rn_client_region_check() checks, and more: the header, every
    ring empty and inside, the batch slots (xfer: their count and size)
    free and inside, the seals, the size the reply said."""
    region_size, n_lcores, ring_size, buf_size, _ = a[:5]
    assert os.fstat(fd).st_size == region_size, \
        (os.fstat(fd).st_size, region_size)
    seals = fcntl_seals(fd)
    assert seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == \
        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL, seals
    with mmap.mmap(fd, region_size) as m:
        magic, version, size, nl, rs, bs, _ = REGION_HEAD.unpack_from(m)
        assert (magic, version) == (SHM_MAGIC, SHM_VERSION), (magic, version)
        assert (nl, rs, bs) == (n_lcores, ring_size, buf_size), (nl, rs, bs)
        assert size <= region_size, (size, region_size)
        offs = struct.unpack_from(f"<{4 * MAX_LCORES}Q", m, OFFSETS_AT)
        events_off, = struct.unpack_from("<Q", m, EVENTS_OFF_AT)
        for i in range(n_lcores):
            sub, dlv = offs[i], offs[MAX_LCORES + i]
            send, recv = offs[2 * MAX_LCORES + i], offs[3 * MAX_LCORES + i]
            for off in (sub, dlv, send, recv):
                assert off % 64 == 0 and off < size, (i, off, size)
            assert send + ring_size * buf_size <= size
            assert recv + ring_size * buf_size <= size
            ring_empty(m, sub, ring_size)
            ring_empty(m, dlv, ring_size)
        ring_empty(m, events_off, EVENTS_RING_SIZE)
        # The batch slots: after everything else, inside, all free.
        slots, slot_size = struct.unpack_from("<II", m, XFER_SLOTS_AT)
        xoffs = struct.unpack_from(f"<{MAX_LCORES}Q", m, XFER_OFF_AT)
        assert (slots, slot_size) == xfer, (slots, slot_size, xfer)
        for i in range(MAX_LCORES):
            if i >= n_lcores or slots == 0:
                assert xoffs[i] == 0, (i, xoffs)
                continue
            assert xoffs[i] % 64 == 0 and xoffs[i] > events_off, xoffs
            assert xoffs[i] + slots * slot_size <= size, (xoffs, size)
            for k in range(slots):
                st, = struct.unpack_from("<q", m, xoffs[i] + k * slot_size +
                                         XFER_SLOT_STATUS_AT)
                assert st == 0, (i, k, st)
        armed, = struct.unpack_from("<I", m, ARMED_AT)
        closed, = struct.unpack_from("<I", m, CLOSED_AT)
        assert (armed, closed) == (0, 0), (armed, closed)


def fcntl_seals(fd):
    import fcntl
    return fcntl.fcntl(fd, F_GET_SEALS)


def check_status_page(fd, n_lcores):
    size = os.fstat(fd).st_size
    with mmap.mmap(fd, size, prot=mmap.PROT_READ) as m:
        magic, version, nl = struct.unpack_from("<III", m)
        assert (magic, version, nl) == (STATUS_MAGIC, SHM_VERSION,
                                        n_lcores), (magic, version, nl)
    # Clients read it; none may map it writable (F_SEAL_FUTURE_WRITE).
    try:
        mmap.mmap(fd, size).close()
        raise AssertionError("status page mapped writable by a client")
    except PermissionError:
        pass


def fd_kind(fd):
    return os.readlink(f"/proc/self/fd/{fd}")


def test_attach_gets_region_and_fds():
    """An allowed caller gets 3 + n_lcores descriptors: its region (a
    sealed memfd holding empty rings), the status page (read-only), its
    eventfd and each lcore's wake eventfd; telemetry lists it."""
    d = ClientDaemon("a")
    try:
        agent = b"0f8fad5b-d9cb-469f-a165-70867728950e"  # NIXL-like UUID
        s, st, a, fds = attach(d.sock, agent)
        assert st == 0, os.strerror(-st)
        region_size, n_lcores, ring_size, buf_size, client_id, node = a
        note(f"region {region_size} bytes, {n_lcores} lcore(s), ring "
             f"{ring_size}, buffers {buf_size}: {fd_kind(fds[0])}")
        assert node.rstrip(b"\0").decode() == d.name, node
        assert (n_lcores, ring_size) == (1, 256), a
        # [notify] slot_size 4000, rounded up to 64 bytes.
        assert buf_size == 4032, buf_size
        assert len(fds) == 3 + n_lcores, fds
        assert "memfd:rnotify-client" in fd_kind(fds[0]), fd_kind(fds[0])
        assert "memfd:rnotify-status" in fd_kind(fds[1]), fd_kind(fds[1])
        for fd in fds[2:]:
            assert fd_kind(fd) == "anon_inode:[eventfd]", fd_kind(fd)
        check_region(fds[0], a)
        check_status_page(fds[1], n_lcores)
        rows = d.clients()
        assert len(rows) == 1, rows
        c = rows[0]
        assert (c["id"], c["agent"], c["pid"], c["uid"], c["state"]) == \
            (client_id, agent.decode(), os.getpid(), os.getuid(),
             "attached"), c
        assert abs(c["attached_unix_ms"] / 1000 - time.time()) < 60, c
        assert status(d.name)["clients"] == 1
        # DETACH: a reply, then the daemon closes the socket.
        st, body, _ = request(s, DETACH)
        assert (st, body) == (0, b""), (st, body)
        assert s.recv(MSG_MAX) == b"", "socket still open after DETACH"
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def test_socket_file_mode_and_group():
    """The socket file gets [client] mode and group; at stop it goes."""
    d = ClientDaemon("m", extra="mode = 0604\ngroup = 4242\n")
    try:
        st = os.lstat(d.sock)
        assert stat.S_ISSOCK(st.st_mode), oct(st.st_mode)
        assert stat.S_IMODE(st.st_mode) == 0o604, oct(st.st_mode)
        assert st.st_gid == 4242, st.st_gid
    finally:
        stop_all([d])
    assert not os.path.exists(d.sock), "socket file left behind"


def test_stale_socket_replaced_live_one_kept():
    """A socket file nobody listens on (a daemon that died) is replaced;
    one somebody listens on, or a file that is not a socket, stops
    start-up with one line saying what to do."""
    name = unique("st")
    path, text = client_config(name)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    stale.bind(path)
    stale.close()
    d = Daemon(name, text=text)
    try:
        d.wait_running()
        s, st, _, fds = attach(path, b"x")
        assert st == 0, st
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])
    live = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    live.bind(path)
    live.listen(1)
    try:
        d = Daemon(name, text=text)
        assert d.proc.wait(timeout=30) == 1
        assert f"another process listens on '{path}'" in d.stderr(), \
            d.stderr()
    finally:
        live.close()
    os.unlink(path)
    with open(path, "w") as f:
        f.write("not a socket")
    d = Daemon(name, text=text)
    assert d.proc.wait(timeout=30) == 1
    assert f"'{path}' exists and is not a socket" in d.stderr(), d.stderr()
    with open(path) as f:
        assert f.read() == "not a socket", "a regular file was replaced"


def test_agent_names():
    """1..128 bytes without NUL: -EINVAL otherwise; unique: -EADDRINUSE
    while another client holds the name."""
    d = ClientDaemon("n")
    try:
        rnd = seeded_random()
        for bad in (b"", b"a" * (AGENT_MAX + 1), b"ab\0c", b"\0"):
            s, st, _, _ = attach(d.sock, bad)
            assert st == -errno.EINVAL, (bad, st)
            s.close()
        longest = bytes(rnd.choice(b"abcdef-0123456789")
                        for _ in range(AGENT_MAX))
        note(f"longest agent: {longest.decode()}")
        s1, st, _, fds1 = attach(d.sock, longest)
        assert st == 0, st
        s2, st, _, fds2 = attach(d.sock, longest)
        assert (st, fds2) == (-errno.EADDRINUSE, []), st
        # Another name is fine; the refused caller's socket is closed.
        assert s2.recv(MSG_MAX) == b""
        s3, st, _, fds3 = attach(d.sock, longest[:-1])
        assert st == 0, st
        assert status(d.name)["client_attach_errors"] >= 5
        for s in (s1, s2, s3):
            s.close()
        closed_fds(fds1 + fds3)
    finally:
        stop_all([d])


def test_protocol_errors():
    """Another version, a request before ATTACH, a frame longer than
    RN_CLIENT_MSG_MAX or one whose len lies: -EPROTO, and the socket
    closes. Descriptors sent along are closed, not kept."""
    d = ClientDaemon("p")
    try:
        s = connect(d.sock)
        st, _, _ = request(s, ATTACH, b"agent", version=PROTO_VERSION + 1)
        assert st == -errno.EPROTO, st
        assert s.recv(MSG_MAX) == b""
        s.close()
        s = connect(d.sock)
        st, _, _ = request(s, RESOLVE, b"x")
        assert st == -errno.EPROTO, st
        s.close()
        s = connect(d.sock)
        st, _, _ = request(s, ATTACH, b"a" * MSG_MAX)
        assert st == -errno.EPROTO, st
        s.close()
        s = connect(d.sock)
        s.send(HDR.pack(ATTACH, PROTO_VERSION, 0, 9, 0) + b"agent")
        data = s.recv(MSG_MAX)
        assert HDR.unpack_from(data)[2] == -errno.EPROTO, data
        s.close()
        # An attached client's unknown request is an error, not the end.
        # It holds two descriptors of the daemon's: its socket and its
        # eventfd; the two it sent along are not kept.
        wait_until("refused callers closed", lambda: d.clients() == [])
        fds_before = d.settled_fds()
        r, w = os.pipe()
        s, st, _, fds = attach(d.sock, b"fd-sender", fds=[r, w])
        assert st == 0, st
        assert d.settled_fds() == fds_before + 2, (fds_before, d.fds())
        st, _, _ = request(s, 99)
        assert st == -errno.EPROTO, st
        st, _, _ = request(s, ATTACH, b"again")
        assert st == -errno.EPROTO, st
        s.close()
        closed_fds(fds + [r, w])
        wait_until("the daemon's descriptors back to where they were",
                   lambda: d.settled_fds() == fds_before, timeout=10)
    finally:
        stop_all([d])


def test_disallowed_user_refused():
    """A uid that is neither the daemon's nor in [client] allow: -EACCES
    at its first request; once allowed (by uid, or by a group), it
    attaches. Needs root (the caller runs as nobody, group nogroup, with
    one supplementary group)."""
    if os.geteuid() != 0:
        raise Skip("needs root to run a caller as another uid")
    os.chmod(TMP, 0o755)
    extra_group = 4243
    for extra, want in (("mode = 0666\n", -errno.EACCES),
                        (f"mode = 0666\nallow = 7, @4244\n", -errno.EACCES),
                        (f"mode = 0666\nallow = {NOBODY}\n", 0),
                        (f"mode = 0666\nallow = @{NOBODY}\n", 0),
                        (f"mode = 0666\nallow = root, @{extra_group}\n", 0)):
        d = ClientDaemon("u", extra=extra)
        try:
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    os.close(r)
                    os.setgroups([extra_group])
                    os.setgid(NOBODY)         # nogroup on Debian
                    os.setuid(NOBODY)
                    s, st, _, fds = attach(d.sock, b"stranger")
                    os.write(w, struct.pack("<i", st))
                    code = 0
                finally:
                    os._exit(code)
            os.close(w)
            got = os.read(r, 4)
            os.close(r)
            os.waitpid(pid, 0)
            assert len(got) == 4, "the caller failed before it asked"
            st, = struct.unpack("<i", got)
            assert st == want, (extra, st, want)
            note(f"{extra.strip()!r}: {st}")
            if want != 0:
                assert status(d.name)["clients_refused"] == 1
                assert "refused caller pid" in d.stderr(), d.stderr()
        finally:
            stop_all([d])


def test_max_clients():
    """[client] max_clients attached: the next one gets -EUSERS; one
    detached makes room."""
    d = ClientDaemon("x", extra="max_clients = 2\n")
    try:
        held = [attach(d.sock, f"c{i}".encode()) for i in range(2)]
        assert [h[1] for h in held] == [0, 0], [h[1] for h in held]
        s, st, _, _ = attach(d.sock, b"c2")
        assert st == -errno.EUSERS, st
        s.close()
        request(held[0][0], DETACH)
        held[0][0].close()
        closed_fds(held[0][3])

        def room():
            s, st, _, fds = attach(d.sock, b"c2")
            s.close()
            closed_fds(fds)
            assert st in (0, -errno.EUSERS), st
            return st == 0
        wait_until("room for a client after a detach", room, timeout=10)
        held[1][0].close()
        closed_fds(held[1][3])
    finally:
        stop_all([d])


def test_resolve_and_peers():
    """RESOLVE of a configured peer: its endpoint index and lcore (and it
    starts connecting); of an unknown node: -ENOENT; malformed names
    -EINVAL. PEER_ADD / PEER_REMOVE with peers_from_clients off: -EACCES."""
    peer = unique("rp")
    extra = "peers_from_clients = false\n"
    name = unique("r")
    path, text = client_config(name, extra)
    text += f"[peer {peer}]\naddress = 127.0.0.1\nport = 9\n"
    d = Daemon(name, text=text)
    try:
        d.wait_running()
        s, st, _, fds = attach(path, b"resolver")
        assert st == 0, st
        st, body, _ = request(s, RESOLVE, b"no-such-node")
        assert (st, body) == (-errno.ENOENT, b""), (st, body)
        for bad in (b"", b"n" * 32, b"a\0b"):
            st, _, _ = request(s, RESOLVE, bad)
            assert st == -errno.EINVAL, (bad, st)
        st, body, _ = request(s, RESOLVE, peer.encode())
        assert st == 0, st
        ep_index, lcore, tag = RESOLVED.unpack(body)
        note(f"{peer}: ep_index {ep_index}, lcore {lcore}, tag {tag}")
        assert ep_index < 1024 and lcore == 0, (ep_index, lcore)
        # The first use starts connecting (to a port nobody serves).
        wait_until("connecting after RESOLVE", lambda: telemetry(
            name, f"/rnotify/endpoint,{peer}")["state"] != "idle")
        body = PEER.pack(b"new", b"127.0.0.1", 7)
        st, _, _ = request(s, PEER_ADD, body)
        assert st == -errno.EACCES, st
        st, _, _ = request(s, PEER_REMOVE, peer.encode())
        assert st == -errno.EACCES, st
        assert clients(name)[0]["requests"] == 7, clients(name)
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def default_socket(name):
    """[client] socket left empty: the lock file's directory, NAME.sock."""
    if os.geteuid() == 0:
        base = "/run/rnotify"
    elif os.environ.get("XDG_RUNTIME_DIR", "").startswith("/"):
        base = os.path.join(os.environ["XDG_RUNTIME_DIR"], "rnotify")
    else:
        base = f"/tmp/rnotify-{os.geteuid()}"
    return os.path.join(base, name + ".sock")


class Events:
    """A client's events ring read as the library reads it: armed, woken
    through the eventfd, entries taken and the ring's consumer moved."""

    def __init__(self, region_fd, efd, size):
        self.m = mmap.mmap(region_fd, size)
        self.efd = efd
        self.off, = struct.unpack_from("<Q", self.m, EVENTS_OFF_AT)

    def arm(self):
        struct.pack_into("<I", self.m, ARMED_AT, 1)

    def take(self):
        ph, pt = struct.unpack_from("<II", self.m, self.off + RING_PROD_AT)
        ch, = struct.unpack_from("<I", self.m, self.off + RING_CONS_AT)
        out = []
        for pos in range(ch, pt):
            at = self.off + RING_ELEMS_AT + \
                (pos % EVENTS_RING_SIZE) * EVENT.size
            etype, st, cookie, node, _ = EVENT.unpack_from(self.m, at)
            out.append((etype, node.rstrip(b"\0").decode()))
        struct.pack_into("<II", self.m, self.off + RING_CONS_AT, pt, pt)
        return out

    def wait(self, timeout=20):
        """Events after a wake-up of the eventfd (armed first)."""
        self.arm()
        got = self.take()
        if got:
            return got
        r, _, _ = select.select([self.efd], [], [], timeout)
        assert r, f"no wake-up in {timeout} s"
        os.read(self.efd, 8)
        assert struct.unpack_from("<I", self.m, ARMED_AT)[0] == 0, \
            "woken but still armed"
        return self.take()


def test_peer_events_reach_clients():
    """The plane's peer events land on every attached client's events
    ring, named, and wake the client when it armed its eventfd: the peer
    killed is PEER_DOWN, started again PEER_RESTARTED. The socket here is
    the default one."""
    p = Pair("ev")
    try:
        path = default_socket(p.a)
        assert stat.S_ISSOCK(os.lstat(path).st_mode), path
        conns = [attach(path, f"watcher{i}".encode()) for i in range(2)]
        assert [c[1] for c in conns] == [0, 0], [c[1] for c in conns]
        evs = [Events(c[3][0], c[3][2], c[2][0]) for c in conns]
        for e in evs:
            assert e.take() == [], "events before any happened"
        p.d[1].kill()
        for e in evs:
            got = e.wait()
            assert got == [(PEER_DOWN, p.b)], got
        p.d[1] = p.start(1)
        p.d[1].wait_running()
        for e in evs:
            got = []
            wait_until("PEER_RESTARTED", lambda: (got.extend(e.wait()),
                       (PEER_RESTARTED, p.b) in got)[1], timeout=30)
            assert set(got) <= {(PEER_RESTARTED, p.b)}, got
        rows = clients(p.a)
        assert sorted(r["events"] for r in rows) == [2, 2], rows
        for s, _, _, fds in conns:
            s.close()
            closed_fds(fds)
    finally:
        p.stop()


def test_peers_at_run_time():
    """PEER_ADD makes a node a client can resolve (a new tag), twice is
    -EEXIST, malformed -EINVAL; PEER_REMOVE unbinds it (-ENOENT after),
    and every client hears PEER_REMOVED, but one that overwrote its events
    ring's shape: that one is detached, not followed out of its region."""
    d = ClientDaemon("pa")
    try:
        s, st, a, fds = attach(d.sock, b"admin")
        assert st == 0, st
        ev = Events(fds[0], fds[2], a[0])
        vs, st, va, vfds = attach(d.sock, b"vandal")
        assert st == 0, st
        vandal = Events(vfds[0], vfds[2], va[0])
        struct.pack_into("<I", vandal.m, vandal.off + RING_SIZE_AT + 4,
                         0xFFFFFF)
        peer = b"run-time-peer"
        st, _, _ = request(s, PEER_ADD, PEER.pack(peer, b"127.0.0.1", 9))
        assert st == 0, os.strerror(-st)
        st, _, _ = request(s, PEER_ADD, PEER.pack(peer, b"127.0.0.1", 9))
        assert st == -errno.EEXIST, st
        for bad in (PEER.pack(b"x", b"127.0.0.1", 0),
                    PEER.pack(b"x", b"no-address", 9),
                    PEER.pack(b"a/b", b"127.0.0.1", 9),
                    PEER.pack(b"", b"127.0.0.1", 9),
                    PEER.pack(b"x", b"127.0.0.1", 9)[:-1],
                    b"x" * 31 + b"y" + b"\0" * 72):
            st, _, _ = request(s, PEER_ADD, bad)
            assert st == -errno.EINVAL, (bad, st)
        st, body, _ = request(s, RESOLVE, peer)
        assert st == 0, st
        ep_index, lcore, tag = RESOLVED.unpack(body)
        assert tag != 0, "a bound endpoint has a tag"
        st, _, _ = request(s, PEER_REMOVE, peer)
        assert st == 0, st
        assert ev.wait() == [(PEER_REMOVED, peer.decode())]
        assert vs.recv(MSG_MAX) == b"", "the vandal is still attached"
        assert struct.unpack_from("<I", vandal.m, CLOSED_AT)[0] == 1
        assert "events ring was overwritten: detached" in d.stderr()
        vs.close()
        closed_fds(vfds)
        st, _, _ = request(s, PEER_REMOVE, peer)
        assert st == -errno.ENOENT, st
        st, _, _ = request(s, RESOLVE, peer)
        assert st == -errno.ENOENT, st
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def child_attach(path, agent, w):
    """In a forked child: attach, tell the parent the status, then wait to
    be killed."""
    code = 1
    try:
        s, st, _, fds = attach(path, agent)
        os.write(w, struct.pack("<i", st))
        code = 0
        if st == 0:
            signal.pause()
    finally:
        os._exit(code)


def attach_in_child(path, agent):
    """(pid, status) of a child process that attached as agent."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        child_attach(path, agent, w)
    os.close(w)
    got = os.read(r, 4)
    os.close(r)
    assert len(got) == 4, "the child failed before it attached"
    return pid, struct.unpack("<i", got)[0]


def test_kill9_frees_agent_100_times():
    """kill -9 of an attached client, 100 times: each time the agent name
    is free again (the lcores let go of it), and the daemon's descriptor
    count and RSS stay flat. Another client stays attached throughout."""
    d = ClientDaemon("k")
    try:
        bystander, st, _, bfds = attach(d.sock, b"bystander")
        assert st == 0, st
        agent = b"victim"
        fds_at, rss_at = [], []
        busy = 0
        for cycle in range(100):
            deadline = time.monotonic() + 10
            while True:
                pid, st = attach_in_child(d.sock, agent)
                if st == 0:
                    break
                os.waitpid(pid, 0)
                assert st == -errno.EADDRINUSE, st
                busy += 1
                assert time.monotonic() < deadline, \
                    f"cycle {cycle}: agent still taken 10 s after kill -9"
                time.sleep(0.005)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if cycle in (9, 99):
                wait_until("only the bystander attached",
                           lambda: len(d.clients()) == 1, timeout=10)
                fds_at.append((d.settled_fds(), d.fd_list()))
                rss_at.append(d.rss_kb())
        note(f"descriptors after 10 and 100 cycles: "
             f"{[n for n, _ in fds_at]}; RSS kB {rss_at}; {busy} "
             "attach(es) found the name still taken")
        assert fds_at[0][0] == fds_at[1][0], fds_at
        assert rss_at[1] - rss_at[0] < 2048, rss_at
        rows = d.clients()
        assert [r["agent"] for r in rows] == ["bystander"], rows
        st, _, _ = request(bystander, RESOLVE, b"nothing")
        assert st == -errno.ENOENT, st
        bystander.close()
        closed_fds(bfds)
    finally:
        stop_all([d])


# ---- transfers: REG, DEREG, PUBLISH, FETCH ----

def memfd(length, huge=False):
    """A memfd of length bytes (on hugepages when huge), as
    rn_client_alloc() makes them."""
    fd = os.memfd_create("rn-test-region", os.MFD_CLOEXEC |
                         os.MFD_ALLOW_SEALING | (MFD_HUGETLB if huge else 0))
    try:
        os.ftruncate(fd, length)
    except OSError:
        os.close(fd)
        raise
    return fd


def reg_body(addr, pieces, access=LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ,
             flags=0, n=None):
    """struct rn_client_reg_req with the pieces given (the unused ones
    left out of the body, as the daemon allows)."""
    body = REG_REQ.pack(addr, access, flags,
                        len(pieces) if n is None else n, 0)
    return body + b"".join(PIECE.pack(o, n) for o, n in pieces)


def reg(s, fds, addr, pieces, **kw):
    """REG: (status, region, descriptor) or (status, None, None)."""
    st, body, got = request(s, REG, reg_body(addr, pieces, **kw), fds=fds)
    assert got == [], f"descriptors in a REG reply: {got}"
    if st != 0:
        assert body == b"", (st, body)
        return st, None, None
    assert len(body) == REGISTERED.size, len(body)
    region, _, desc = REGISTERED.unpack(body)
    return st, region, desc


def dereg(s, region):
    st, body, _ = request(s, DEREG, struct.pack("<I", region))
    assert body == b"", body
    return st


def publish(s, region, name):
    st, body, _ = request(s, PUBLISH, PUBLISH_REQ.pack(region, name))
    assert body == b"", body
    return st


def fetch_body(node, name, timeout_ms):
    return FETCH_REQ.pack(node.encode(), name, timeout_ms)


def fetch(s, node, name, timeout_ms=5000):
    """FETCH: (status, descriptor or b"")."""
    st, body, _ = request(s, FETCH, fetch_body(node, name, timeout_ms))
    assert len(body) == (192 if st == 0 else 0), (st, len(body))
    return st, body


def desc_fields(desc):
    """A descriptor's fields, keys as (lcore, rkey) pairs."""
    magic, version, n_keys, node, session, addr, length, keys = \
        DESC.unpack(desc)
    return {"magic": magic, "version": version,
            "node": node.rstrip(b"\0").decode(), "session": session,
            "addr": addr, "length": length,
            "keys": [struct.unpack_from("<II", keys, 8 * i)
                     for i in range(n_keys)]}


def maps_count(pid):
    with open(f"/proc/{pid}/maps") as f:
        return sum(1 for _ in f)


def region_maps(pid):
    """The daemon's mappings of the tests' memfds (memfd() names them):
    what REG maps, all of it (the alignment's slack is given back). The
    total count is no measure under ASan, whose allocator maps more as
    it goes."""
    with open(f"/proc/{pid}/maps") as f:
        return sum("/memfd:rn-test-region" in line for line in f)


def fs_type(path):
    """statfs f_type of path, as stat -f prints it (hex)."""
    import subprocess
    return int(subprocess.run(["stat", "-f", "-c", "%t", path], check=True,
                              capture_output=True, text=True).stdout, 16)


TMPFS_MAGIC = 0x01021994
ADDR = 0x7F0000000000


def test_xfer_reg_refusals():
    """REG refused before any lcore is asked, each with its errno (a pipe,
    a socket, a file on disk, a memfd said to be a dma-buf: -EBADF; two
    dma-buf pieces: -EOPNOTSUPP; malformed requests, unaligned or
    outside pieces: -EINVAL); DEREG and PUBLISH of no region, FETCH of no
    node or a bad name; every fd sent is closed again, no mapping is
    left, and the client is served on (in order)."""
    d = ClientDaemon("xr")
    try:
        s, st, a, fds = attach(d.sock, b"registrar")
        assert st == 0, st
        base_fds = d.settled_fds()
        mfd = memfd(4 * PAGE)
        r, w = os.pipe()
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        path = os.path.join(TMP, "plain-file")
        with open(path, "wb") as f:
            f.truncate(4 * PAGE)
        ffd = os.open(path, os.O_RDWR)
        one = [(0, PAGE)]
        cases = [
            ("a pipe", [r], ADDR, one, {}, -errno.EBADF),
            ("a socket", [other.fileno()], ADDR, one, {}, -errno.EBADF),
            ("a memfd as a dma-buf", [mfd], ADDR, one,
             {"flags": REG_DMABUF}, -errno.EBADF),
            ("two dma-buf pieces", [mfd, mfd], ADDR, [(0, PAGE), (0, PAGE)],
             {"flags": REG_DMABUF}, -errno.EOPNOTSUPP),
            ("no piece", [mfd], ADDR, [], {}, -errno.EINVAL),
            ("17 pieces", [mfd], ADDR, one, {"n": MAX_PIECES + 1},
             -errno.EINVAL),
            ("fewer fds than pieces", [mfd], ADDR, [(0, PAGE), (PAGE, PAGE)],
             {}, -errno.EINVAL),
            ("more fds than pieces", [mfd, mfd], ADDR, one, {},
             -errno.EINVAL),
            ("a body without its pieces", [mfd], ADDR, [], {"n": 1},
             -errno.EINVAL),
            ("an unaligned offset", [mfd], ADDR, [(100, PAGE)], {},
             -errno.EINVAL),
            ("an unaligned length", [mfd], ADDR, [(0, PAGE + 64)], {},
             -errno.EINVAL),
            ("a zero length", [mfd], ADDR, [(0, 0)], {}, -errno.EINVAL),
            ("past the fd's end", [mfd], ADDR, [(2 * PAGE, 3 * PAGE)], {},
             -errno.EINVAL),
            ("an unaligned address", [mfd], ADDR + 64, one, {},
             -errno.EINVAL),
            ("an address range that wraps", [mfd], 2**64 - PAGE,
             [(0, 2 * PAGE)], {}, -errno.EINVAL),
            ("unknown access bits", [mfd], ADDR, one, {"access": 8},
             -errno.EINVAL),
            ("REMOTE_WRITE without LOCAL_WRITE", [mfd], ADDR, one,
             {"access": REMOTE_WRITE}, -errno.EINVAL),
            ("unknown flags", [mfd], ADDR, one, {"flags": 2},
             -errno.EINVAL),
        ]
        if fs_type(TMP) != TMPFS_MAGIC:
            cases.append(("a file on disk", [ffd], ADDR, one, {},
                          -errno.EBADF))
        else:
            note("the test directory is on tmpfs: no file-on-disk case")
        for what, cfds, addr, pieces, kw, want in cases:
            st, _, _ = reg(s, cfds, addr, pieces, **kw)
            assert st == want, (what, st, want)
        # A body shorter than the request's fixed part.
        st, _, _ = request(s, REG, reg_body(ADDR, one)[:20], fds=[mfd])
        assert st == -errno.EINVAL, st
        assert dereg(s, 0) == -errno.EINVAL
        assert dereg(s, MAX_REGIONS + 5) == -errno.EINVAL
        st, _, _ = request(s, DEREG, b"\0\0")
        assert st == -errno.EINVAL, st
        assert publish(s, 0, b"kv/0") == -errno.EINVAL
        st, _, _ = request(s, PUBLISH, b"\0" * 8)
        assert st == -errno.EINVAL, st
        assert fetch(s, "no-such-node", b"kv/0")[0] == -errno.ENOENT
        assert fetch(s, "no-such-node", b"a b")[0] == -errno.EINVAL
        st, _, _ = request(s, FETCH, fetch_body("n", b"x" * 64, 10)[:-4] +
                           b"\xff" * 4)
        assert st == -errno.EINVAL, st
        st, _, _ = request(s, FETCH, b"x" * 99)
        assert st == -errno.EINVAL, st
        st, _, _ = request(s, RESOLVE, b"nothing")
        assert st == -errno.ENOENT, st
        assert d.clients()[0]["regions"] == 0, d.clients()
        for fd in (mfd, r, w, ffd):
            os.close(fd)
        other.close()
        after_fds = d.settled_fds()
        note(f"daemon descriptors {base_fds} -> {after_fds}")
        assert after_fds == base_fds, (base_fds, after_fds)
        assert region_maps(d.proc.pid) == 0, "a refused REG left a mapping"
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def test_xfer_reg_needs_shrink_seal():
    """A file the client could shrink under the daemon's mapping would
    fault the daemon when the sim (or the lcore) touches the lost part:
    REG of a memfd that cannot be sealed (made without
    MFD_ALLOW_SEALING) is -EBADF, with nothing mapped; one that can is
    sealed against shrinking before its size is read, so that after REG
    the client's ftruncate() fails with EPERM and the region stays whole
    until DEREG."""
    d = ClientDaemon("xs")
    try:
        s, st, a, fds = attach(d.sock, b"sealer")
        assert st == 0, st
        base_fds = d.settled_fds()
        plain = os.memfd_create("rn-test-region", os.MFD_CLOEXEC)
        os.ftruncate(plain, 4 * PAGE)
        st, _, _ = reg(s, [plain], ADDR, [(0, 4 * PAGE)])
        assert st == -errno.EBADF, st
        assert region_maps(d.proc.pid) == 0, "a refused REG left a mapping"
        # Nothing holds it back: the client may shrink it, and it does.
        os.ftruncate(plain, 0)
        m = memfd(4 * PAGE)
        st, r, _ = reg(s, [m], ADDR, [(0, 4 * PAGE)])
        assert st == 0, st
        assert fcntl_seals(m) & F_SEAL_SHRINK, fcntl_seals(m)
        try:
            os.ftruncate(m, PAGE)
            raise AssertionError("a registered memfd shrank")
        except PermissionError:
            pass
        assert os.fstat(m).st_size == 4 * PAGE
        # Growing is harmless and still allowed.
        os.ftruncate(m, 8 * PAGE)
        assert dereg(s, r) == 0
        for fd in (plain, m):
            os.close(fd)
        assert region_maps(d.proc.pid) == 0, "DEREG left a mapping"
        assert d.settled_fds() == base_fds
        assert d.proc.poll() is None, "the daemon died"
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def test_xfer_reg_reservation_cannot_wrap():
    """Pieces whose total length plus the alignment's slack wraps (a
    hugetlbfs memfd aligns to 2 MiB): the daemon's reservation would be
    small and the pieces mapped past it, over its own memory. Refused
    with -EINVAL (not -ENOMEM after mapping a piece over the daemon's
    memory), and the daemon serves on."""
    d = ClientDaemon("xw")
    try:
        try:
            hfd = memfd(HUGE, huge=True)
        except OSError as e:
            raise Skip(f"no hugetlbfs memfd ({e})")
        big = (1 << 63) - HUGE          # a huge-page multiple, sparse
        try:
            os.ftruncate(hfd, big)
        except OSError as e:
            os.close(hfd)
            raise Skip(f"no sparse hugetlbfs memfd of 2^63 bytes ({e})")
        small = memfd(3 << 20)
        s, st, a, fds = attach(d.sock, b"wrapper")
        assert st == 0, st
        # 3 MiB first (mapped at the aligned start), then 2 * big:
        # 2^64 - 1 MiB in all, + 2 MiB of slack wraps to 1 MiB.
        pieces = [(0, 3 << 20), (0, big), (0, big)]
        st, _, _ = reg(s, [small, hfd, hfd], 0, pieces)
        assert st == -errno.EINVAL, st
        assert region_maps(d.proc.pid) == 0, "a refused REG left a mapping"
        assert d.proc.poll() is None, "the daemon died"
        # Served on.
        st, r, _ = reg(s, [small], ADDR, [(0, 1 << 20)])
        assert st == 0, st
        assert dereg(s, r) == 0
        for fd in (small, hfd):
            os.close(fd)
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def test_xfer_disabled_and_slot_config():
    """[client] xfer_slots = 0: the region has no batch slots and REG is
    -ENOTSUP (its fd closed); other slot shapes lay the slots out as
    configured; a slot size that is not a multiple of 64 is refused at
    start-up."""
    import subprocess
    d = ClientDaemon("xd", extra="xfer_slots = 0\n")
    try:
        s, st, a, fds = attach(d.sock, b"no-transfers")
        assert st == 0, st
        check_region(fds[0], a, xfer=(0, 0))
        base = d.settled_fds()
        mfd = memfd(PAGE)
        st, _, _ = reg(s, [mfd], ADDR, [(0, PAGE)])
        assert st == -errno.ENOTSUP, st
        os.close(mfd)
        assert d.settled_fds() == base
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])
    d = ClientDaemon("xs", extra="xfer_slots = 3\nxfer_slot_size = 8192\n")
    try:
        s, st, a, fds = attach(d.sock, b"three-slots")
        assert st == 0, st
        check_region(fds[0], a, xfer=(3, 8192))
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])
    _, text = client_config(unique("xc"), "xfer_slot_size = 4100\n")
    path = os.path.join(TMP, "bad-slot-size.ini")
    with open(path, "w") as f:
        f.write(text)
    out = subprocess.run([RNOTIFYD, "--check-config", path],
                         capture_output=True, text=True)
    assert out.returncode != 0, out
    assert "xfer_slot_size = 4100: must be a multiple of 64" in \
        out.stdout + out.stderr, out


class SilentPeer:
    """A TCP listener that accepts and never says a word: a peer whose
    endpoint never connects."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]

    def close(self):
        self.sock.close()


def test_xfer_fetch_pending_keeps_order():
    """A FETCH that waits (its peer never answers) is answered by its
    timeout_ms (-ETIMEDOUT), and a request sent behind it is answered only
    after it; a client that closes while its FETCH waits is noticed at
    once, not at the timeout."""
    silent = SilentPeer()
    name = unique("xo")
    peer = unique("xop")
    path, text = client_config(name)
    text += f"[peer {peer}]\naddress = 127.0.0.1\nport = {silent.port}\n"
    d = Daemon(name, text=text)
    try:
        d.wait_running()
        s, st, _, fds = attach(path, b"fetcher")
        assert st == 0, st
        timeout_ms = 600
        t0 = time.monotonic()
        s.send(HDR.pack(FETCH, PROTO_VERSION, 0, FETCH_REQ.size, 0) +
               fetch_body(peer, b"kv/0", timeout_ms))
        s.send(HDR.pack(RESOLVE, PROTO_VERSION, 0, 7, 0) + b"nothing")
        first = s.recv(MSG_MAX)
        t1 = time.monotonic()
        second = s.recv(MSG_MAX)
        rtype, _, rst, rlen, _ = HDR.unpack_from(first)
        note(f"FETCH answered {rst} after {t1 - t0:.3f} s")
        assert (rtype, rst, rlen) == (FETCH | REPLY, -errno.ETIMEDOUT, 0), \
            (rtype, rst, rlen)
        assert timeout_ms / 1000 - 0.05 <= t1 - t0 < timeout_ms / 1000 + 2, \
            t1 - t0
        rtype, _, rst, _, _ = HDR.unpack_from(second)
        assert (rtype, rst) == (RESOLVE | REPLY, -errno.ENOENT), (rtype, rst)
        # Close while a long FETCH waits: the daemon lets go at once.
        st, _, _ = request(s, RESOLVE, b"nothing")
        assert st == -errno.ENOENT, st
        s.send(HDR.pack(FETCH, PROTO_VERSION, 0, FETCH_REQ.size, 0) +
               fetch_body(peer, b"kv/0", 30000))
        time.sleep(0.1)
        t0 = time.monotonic()
        s.close()
        closed_fds(fds)
        wait_until("the fetching client gone",
                   lambda: d_clients_empty(name), timeout=5)
        note(f"client gone {time.monotonic() - t0:.3f} s after its close")
    finally:
        stop_all([d])
        silent.close()


def d_clients_empty(name):
    return clients(name) == []


def test_xfer_reg_dereg_descriptor():
    """REG of memfd pieces (and of a hugetlbfs memfd where the host has
    hugepages): the region id, and its descriptor's every field (node,
    the plane's session, the client's address, the length, one key per
    worker lcore); overlap -EEXIST; 64 regions, the 65th -ENOSPC; DEREG of
    each; telemetry's regions; afterwards the daemon's descriptors and
    mappings are what they were."""
    d = ClientDaemon("xg")
    try:
        s, st, a, fds = attach(d.sock, b"registrar")
        assert st == 0, st
        base_fds = d.settled_fds()
        session = int(status(d.name)["session"], 16)
        m1, m2 = memfd(64 * PAGE), memfd(8 * PAGE)
        st, r0, desc = reg(s, [m1], ADDR, [(4 * PAGE, 16 * PAGE)])
        assert (st, r0) == (0, 0), (st, r0)
        f = desc_fields(desc)
        note(f"descriptor: {f}")
        assert (f["magic"], f["version"], f["node"], f["session"],
                f["addr"], f["length"]) == \
            (DESC_MAGIC, 1, d.name, session, ADDR, 16 * PAGE), f
        assert len(f["keys"]) == 1 and f["keys"][0][0] == 1, f["keys"]
        # Two pieces of two fds make one region.
        addr2 = ADDR + (1 << 30)
        st, r1, desc = reg(s, [m1, m2], addr2,
                           [(0, 8 * PAGE), (2 * PAGE, 4 * PAGE)],
                           access=REMOTE_READ)
        assert (st, r1) == (0, 1), (st, r1)
        assert desc_fields(desc)["length"] == 12 * PAGE
        # Mapped in the daemon: one piece, and two (maybe merged).
        assert 2 <= region_maps(d.proc.pid) <= 3, region_maps(d.proc.pid)
        for addr in (ADDR, ADDR + 15 * PAGE, ADDR - PAGE, addr2 + 11 * PAGE):
            st, _, _ = reg(s, [m2], addr, [(0, 2 * PAGE)])
            assert st == -errno.EEXIST, (hex(addr), st)
        try:
            hfd = memfd(2 * HUGE, huge=True)
        except OSError as e:
            hfd = None
            note(f"no hugetlbfs memfd ({e}): that case skipped")
        if hfd is not None:
            st, _, _ = reg(s, [hfd], ADDR + (2 << 30), [(PAGE, HUGE)])
            assert st == -errno.EINVAL, st
            st, rh, desc = reg(s, [hfd], ADDR + (2 << 30), [(HUGE, HUGE)])
            assert st == 0, os.strerror(-st)
            assert desc_fields(desc)["length"] == HUGE
            assert dereg(s, rh) == 0
            os.close(hfd)
        assert d.clients()[0]["regions"] == 2, d.clients()
        assert dereg(s, r1) == 0
        assert dereg(s, r1) == -errno.EINVAL
        # Fill the table: 64 regions, then -ENOSPC.
        got = [r0]
        for k in range(1, MAX_REGIONS):
            st, rk, _ = reg(s, [m2], ADDR + (k << 32), [(0, PAGE)])
            assert st == 0, (k, st)
            got.append(rk)
        assert sorted(got) == list(range(MAX_REGIONS)), got
        st, _, _ = reg(s, [m2], ADDR + (99 << 32), [(0, PAGE)])
        assert st == -errno.ENOSPC, st
        assert d.clients()[0]["regions"] == MAX_REGIONS
        for rk in got:
            assert dereg(s, rk) == 0, rk
        assert d.clients()[0]["regions"] == 0
        os.close(m1)
        os.close(m2)
        after_fds = d.settled_fds()
        note(f"daemon descriptors {base_fds} -> {after_fds}")
        assert after_fds == base_fds, (base_fds, after_fds)
        assert region_maps(d.proc.pid) == 0, "DEREG left a mapping"
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def test_xfer_reg_two_workers():
    """Two worker lcores: the region has a slot area per lcore, a REG is
    registered by both (a key each, lcores 1 and 2, in the descriptor),
    DEREG answered once both let go; a client killed with a region
    registered on both frees its agent and leaves no mapping."""
    d = ClientDaemon("x2", dataplane="lcores = 0-2\ncpus = 0,1,1\n")
    try:
        s, st, a, fds = attach(d.sock, b"two")
        assert st == 0, st
        assert a[1] == 2, a
        check_region(fds[0], a)
        m = memfd(4 * PAGE)
        st, r, desc = reg(s, [m], ADDR, [(0, 4 * PAGE)])
        assert (st, r) == (0, 0), st
        keys = desc_fields(desc)["keys"]
        note(f"keys {keys}")
        assert [k[0] for k in keys] == [1, 2], keys
        assert dereg(s, r) == 0
        st, r, _ = reg(s, [m], ADDR, [(0, 4 * PAGE)])
        assert (st, r) == (0, 0), st
        assert region_maps(d.proc.pid) == 1
        s.close()
        closed_fds(fds)
        wait_until("the client gone", lambda: d.clients() == [], timeout=10)
        assert region_maps(d.proc.pid) == 0
        s, st, _, fds = attach(d.sock, b"two")
        assert st == 0, st
        # Stopped with a client that holds a region and waits for a
        # FETCH: it exits 0 (and, in the sanitized build, leaks nothing).
        st, r, _ = reg(s, [m], ADDR, [(0, 4 * PAGE)])
        assert st == 0, st
        os.close(m)
        st, _, _ = request(s, PEER_ADD, PEER.pack(b"silent", b"192.0.2.1",
                                                  9))
        assert st == 0, st
        s.send(HDR.pack(FETCH, PROTO_VERSION, 0, FETCH_REQ.size, 0) +
               fetch_body("silent", b"kv/0", 60000))
        time.sleep(0.2)
        assert d.stop() == 0, d.stderr()
        s.close()
        closed_fds(fds)
    finally:
        stop_all([d])


def test_xfer_publish_fetch_between_daemons():
    """Two daemons with the shared secret: a client of a publishes a
    region, a client of b FETCHes its descriptor by name (byte for byte
    what REG gave); names are unique on a node (-EEXIST), malformed
    ones -EINVAL; unknown, withdrawn, deregistered names and those of a
    client that went away are -ENODATA."""
    p = Pair("xp")
    try:
        sa, st, _, afds = attach(default_socket(p.a), b"owner")
        assert st == 0, st
        sa2, st, _, a2fds = attach(default_socket(p.a), b"rival")
        assert st == 0, st
        sb, st, _, bfds = attach(default_socket(p.b), b"reader")
        assert st == 0, st
        mfd = memfd(16 * PAGE)
        st, r, desc = reg(sa, [mfd], ADDR, [(0, 16 * PAGE)])
        assert st == 0, st
        st, r2, desc2 = reg(sa2, [mfd], ADDR, [(0, 8 * PAGE)])
        assert st == 0, st   # the same address in another client
        assert publish(sa, r, b"kv/0") == 0
        assert publish(sa, r, b"kv/0") == 0          # again: the same
        assert publish(sa2, r2, b"kv/0") == -errno.EEXIST
        for bad in (b"a b", b"x" * 64, b"\xff"):
            st, _, _ = request(sa2, PUBLISH, PUBLISH_REQ.pack(r2, bad))
            assert st == -errno.EINVAL, (bad, st)
        assert publish(sa2, r2, b"kv/1") == 0
        st, got = fetch(sb, p.a, b"kv/0")
        assert st == 0, os.strerror(-st)
        assert got == desc, (desc_fields(got), desc_fields(desc))
        st, got = fetch(sb, p.a, b"kv/1")
        assert (st, got) == (0, desc2), st
        assert fetch(sb, p.a, b"kv/none")[0] == -errno.ENODATA
        assert fetch(sb, "nobody", b"kv/0")[0] == -errno.ENOENT
        # Withdrawn: "" (and a new name frees the old one).
        assert publish(sa, r, b"") == 0
        assert fetch(sb, p.a, b"kv/0")[0] == -errno.ENODATA
        assert publish(sa2, r2, b"kv/0") == 0
        assert fetch(sb, p.a, b"kv/1")[0] == -errno.ENODATA
        assert fetch(sb, p.a, b"kv/0") == (0, desc2)
        # Deregistered, and gone with its client.
        assert publish(sa, r, b"kv/2") == 0
        assert dereg(sa, r) == 0
        assert fetch(sb, p.a, b"kv/2")[0] == -errno.ENODATA
        sa2.close()
        closed_fds(a2fds)
        wait_until("kv/0 withdrawn with its client", lambda:
                   fetch(sb, p.a, b"kv/0")[0] == -errno.ENODATA, timeout=10)
        os.close(mfd)
        for s, fds in ((sa, afds), (sb, bfds)):
            s.close()
            closed_fds(fds)
    finally:
        p.stop()


def child_with_regions(path, agent, w, mid_reg):
    """In a forked child: attach, register two regions, publish one; with
    mid_reg send a third REG and do not wait for its reply; tell the
    parent, then wait to be killed."""
    code = 1
    try:
        s, st, _, fds = attach(path, agent)
        if st == 0:
            m = memfd(8 * PAGE)
            st, r, _ = reg(s, [m], ADDR, [(0, 4 * PAGE)])
        if st == 0:
            st, _, _ = reg(s, [m, m], ADDR + (1 << 30),
                           [(0, 4 * PAGE), (4 * PAGE, 4 * PAGE)])
        if st == 0:
            st = publish(s, r, b"victim/kv")
        if st == 0 and mid_reg:
            socket.send_fds(s, [HDR.pack(REG, PROTO_VERSION, 0,
                                         REG_REQ.size + PIECE.size, 0) +
                                reg_body(ADDR + (2 << 30), [(0, PAGE)])],
                            [m])
        os.write(w, struct.pack("<i", st))
        code = 0
        if st == 0:
            signal.pause()
    finally:
        os._exit(code)


def test_kill9_with_regions_100_times():
    """kill -9 of a client holding two registered regions (one
    published), half of the time with a REG in flight: 100 times. Each
    time the agent comes free; the daemon's descriptors and mappings are
    the same after 10 and 100 cycles; the victim's publication is
    withdrawn (another client may take the name)."""
    d = ClientDaemon("xk")
    try:
        bystander, st, _, bfds = attach(d.sock, b"bystander")
        assert st == 0, st
        at = []
        for cycle in range(100):
            deadline = time.monotonic() + 10
            while True:
                r, w = os.pipe()
                pid = os.fork()
                if pid == 0:
                    os.close(r)
                    child_with_regions(d.sock, b"victim", w, cycle % 2 == 1)
                os.close(w)
                got = os.read(r, 4)
                os.close(r)
                assert len(got) == 4, "the child failed"
                st, = struct.unpack("<i", got)
                if st == 0:
                    break
                os.waitpid(pid, 0)
                assert st in (-errno.EADDRINUSE, -errno.EEXIST), st
                assert time.monotonic() < deadline, \
                    f"cycle {cycle}: still refused ({st}) 10 s after kill"
                time.sleep(0.005)
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            if cycle in (9, 99):
                wait_until("only the bystander attached",
                           lambda: len(d.clients()) == 1, timeout=10)
                at.append((d.settled_fds(), maps_count(d.proc.pid),
                           region_maps(d.proc.pid)))
        note(f"daemon (descriptors, mappings, of regions) after 10 and "
             f"100 cycles: {at}")
        assert at[0] == at[1], at
        assert at[1][2] == 0, at
        m = memfd(PAGE)
        st, r, _ = reg(bystander, [m], ADDR, [(0, PAGE)])
        assert st == 0, st
        assert publish(bystander, r, b"victim/kv") == 0
        os.close(m)
        bystander.close()
        closed_fds(bfds)
    finally:
        stop_all([d])


if __name__ == "__main__":
    run_tests(globals())
