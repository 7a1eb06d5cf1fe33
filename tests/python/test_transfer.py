# SPDX-License-Identifier: BSD-3-Clause
"""Transfers from Python (issue #18): two daemons on loopback, one client
each. WRITE and READ batches of mixed sizes at every size class from
4 KiB to 64 MiB land byte-exact, each with its notification, which the
target's agent gets only once the data is there; access errors (bad
rkey, out of bounds, a deregistered region, a descriptor of an older
incarnation) give their documented errno and the endpoint recovers; a
target killed with -9 in the middle of a batch fails it with ENOTCONN or
EPIPE in bounded time; plain memory is refused with a pointer to
alloc(); examples/transfer.py runs."""

import contextlib
import ctypes
import errno
import hashlib
import mmap
import os
import struct
import subprocess
import sys
import threading
import time

import pytest

from clienttest import DEADLINE_S, Nodes, agent_name, reaped, send_retry

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "dataplane", "client", "python",
                        "examples")

KIB, MIB = 1 << 10, 1 << 20
# Size classes: 4 KiB .. 64 MiB, doubling.
CLASSES = [4 * KIB << i for i in range(15)]
assert CLASSES[-1] == 64 * MIB
# Each side's buffer: the largest class's batch (64 MiB, a half and a
# smaller piece, with gaps) fits. Not a multiple of 2 MiB, so that it is a
# plain memfd and takes none of the hugepages the daemons of other tests
# need.
BUF = 128 * MIB + 4 * KIB
# How long a killed target may take to fail the initiator's batch.
KILL_BOUND_S = 30
# mmap(2)'s MAP_FIXED (Python's mmap module does not name it).
MAP_FIXED = 0x10
# Descriptor fields (docs/transfers.md): n_keys, length, keys[i].rkey.
DESC_N_KEYS, DESC_LENGTH, DESC_KEYS = 6, 56, 64


class Side:
    """A client on a node with a buffer of alloc() registered whole."""

    def __init__(self, nodes, node, tag):
        nodes.sides.append(self)
        self.node = node
        self.c = nodes.attach(node, agent_name(tag))
        self.agent = self.c.agent
        self.buf = self.c.alloc(BUF)
        self.mem = memoryview(self.buf)
        self.region = self.c.register(self.buf)
        self.notes = []       # notifications polled and not yet wanted
        self.reports = []     # completions of batches taken so far

    def drain(self):
        """Take the completions (a full report queue would hold batch
        slots back)."""
        self.reports += [r for r in self.c.completions() if r.kind != "send"]

    def take_note(self, name, deadline_s=DEADLINE_S):
        """Poll until the notification named name came; returns it (the
        others polled meanwhile are kept)."""
        deadline = time.monotonic() + deadline_s
        while True:
            for i, n in enumerate(self.notes):
                if n.name == name:
                    return self.notes.pop(i)
            self.notes += self.c.poll()
            if any(n.name == name for n in self.notes):
                continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no notification {name!r} at "
                                     f"{self.agent} after {deadline_s} s: "
                                     f"{self.notes[-5:]!r}")
            self.c.wait(min(left, 0.5))

    def close(self):
        """Let go of the region and the buffer before the client detaches
        (after a daemon was killed, there is nothing to let go of)."""
        with contextlib.suppress(OSError, ValueError):
            self.region.deregister()
            self.mem.release()
            self.buf.free()


def close_all(nodes):
    for s in nodes.sides:
        s.close()
    nodes.sides.clear()
    nodes.detach_all()


# The data QPs' ACK timeout: 4.3 s a try (the default, 14, is 67 ms). On
# the sim an endpoint's QPs share one TCP stream and a READ's response is
# made whole, so on this loaded 2-core machine a large READ batch's last
# QP can wait past a short timeout and fail the batch ENOTCONN
# (docs/transfers.md, as test_transfer.c does).
NIC = "qp_timeout = 20\n"


@pytest.fixture(scope="module")
def pair(rnotify):
    n = Nodes(rnotify, "pyx", nic=NIC)
    n.sides = []
    yield n
    close_all(n)
    n.stop()


@pytest.fixture
def sides(pair):
    """(a, b): a client on each node, each with a registered buffer; b's
    region imported at a; the endpoint between them probed (a batch needs
    the key of the peer's lcore, which the probe tells). Detached after
    the test."""
    # Both ends up: a test after one that failed the endpoint starts on a
    # connection both daemons have settled on.
    pair.pair.wait_connected(0)
    pair.pair.wait_connected(1)
    a = Side(pair, pair.a, "xa")
    b = Side(pair, pair.b, "xb")
    a.remote = a.c.import_desc(b.region.export())
    yield a, b
    close_all(pair)


def retry(fn, what, side=None, deadline_s=DEADLINE_S):
    """fn(), tried again while the endpoint connects, a batch slot is
    taken (EAGAIN) or the endpoint is down and reconnecting (ENOTCONN);
    side's completions are taken between tries."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return fn()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ENOTCONN) or \
                    time.monotonic() > deadline:
                raise AssertionError(f"{what}: {e}") from e
        if side is not None:
            side.drain()
        time.sleep(0.01)


def mixed(rng, cls):
    """Sizes of a batch of size class cls: the class itself, a half plus
    some odd bytes, and a smaller odd piece."""
    sizes = [cls, cls // 2 + rng.randrange(1, 4096)]
    sizes.append(rng.randrange(1, max(2, cls // 4)))
    rng.shuffle(sizes)
    return sizes


def layout(rng, sizes):
    """(local offset, remote offset, length) for each size: sequential,
    with odd gaps, the two sides shifted differently; inside BUF."""
    out, lo, ro = [], rng.randrange(0, 4096), rng.randrange(0, 4096)
    for s in sizes:
        out.append((lo, ro, s))
        lo += s + rng.randrange(0, 512)
        ro += s + rng.randrange(0, 512)
    assert lo <= BUF and ro <= BUF, (lo, ro)
    return out


def fill(rng, mem, ranges):
    """Random bytes into each (offset, length) of mem; returns them."""
    data = []
    for off, length in ranges:
        d = rng.randbytes(length)
        mem[off:off + length] = d
        data.append(d)
    return data


def clear(mem, ranges, byte=0):
    for off, length in ranges:
        mem[off:off + length] = bytes([byte]) * length


def mismatch(mem, ranges, data):
    """The first range whose bytes are not its data: (index, first bad
    offset), or None."""
    for i, ((off, length), d) in enumerate(zip(ranges, data)):
        got = mem[off:off + length]
        if got != d:
            bad = next(j for j in range(length) if got[j] != d[j])
            return i, off + bad
    return None


def run_batch(a, b, kind, triples, name, cookie):
    """Submit a's batch of kind with a notification named name to b's
    agent; returns (batch, the notification, the seconds taken)."""
    entries = [(a.region, lo, a.remote, ro, n) for lo, ro, n in triples]
    submit = a.c.write if kind == "write" else a.c.read
    t0 = time.monotonic()
    batch = retry(lambda: submit(entries, notify=(b.agent, name, b"m:" +
                                                  name), cookie=cookie),
                  f"{kind} {name!r}", a)
    assert batch.kind == kind and batch.cookie == cookie
    assert batch.length == sum(n for _, _, n in triples)
    note = b.take_note(name)
    return batch, note, time.monotonic() - t0


def test_every_size_class_lands_before_its_notification(sides, rng):
    a, b = sides
    cookie = 0
    for cls in CLASSES:
        triples = layout(rng, mixed(rng, cls))
        local = [(lo, n) for lo, _, n in triples]
        remote = [(ro, n) for _, ro, n in triples]
        for kind in ("write", "read"):
            cookie += 1
            name = f"{kind}-{cls}".encode()
            if kind == "write":
                data = fill(rng, a.mem, local)
                clear(b.mem, remote, 0xa5)
                dst, ranges = b.mem, remote
            else:
                data = fill(rng, b.mem, remote)
                clear(a.mem, local, 0x5a)
                dst, ranges = a.mem, local
            batch, note, took = run_batch(a, b, kind, triples, name, cookie)
            # The notification is polled: every byte is there already.
            bad = mismatch(dst, ranges, data)
            assert bad is None, \
                f"{kind} class {cls}: entry {bad} not there at its " \
                f"notification {triples}"
            assert (note.node, note.agent, note.msg) == \
                (a.node, a.agent, b"m:" + name), note
            assert batch.wait(DEADLINE_S) is None
            assert batch.status() == 0 and batch.done
            assert batch.bytes_done == batch.length
            batch.release()
            assert batch.released and batch.status() == 0
            a.drain()
            total = batch.length
            print(f"{kind} class {cls}: {len(triples)} entries, {total} "
                  f"bytes, {took * 1e3:.1f} ms to the notification")
    # Every batch reported once, with its kind, among the completions.
    deadline = time.monotonic() + DEADLINE_S
    while len(a.reports) < cookie and time.monotonic() < deadline:
        a.drain()
        if len(a.reports) < cookie:
            a.c.wait(0.1)
    reports = a.reports
    assert sorted((r.cookie, r.status, r.kind) for r in reports) == \
        [(i, 0, "write" if i % 2 else "read") for i in
         range(1, cookie + 1)], reports
    # Still the tuple it was before transfers.
    assert all(r == (r.cookie, r.status) for r in reports)
    assert b.notes == [], b.notes


def test_cancel(sides, rng):
    a, b = sides
    # 512 MiB of READs: most chunks still queued when the cancel comes.
    entries = [(a.region, 0, a.remote, 0, 64 * MIB)] * 8
    batch = retry(lambda: a.c.read(entries, notify=(b.agent, b"cancelled",
                                                    b"m"), cookie=77),
                  "the read to cancel", a)
    batch.cancel()
    try:
        batch.wait(DEADLINE_S)
        status = 0
    except OSError as e:
        status = -e.errno
    print(f"cancelled: {status}, {batch.bytes_done} of {batch.length} "
          "bytes done")
    # Cancelled unless every chunk was posted by then.
    assert status in (0, -errno.ECANCELED), status
    assert batch.status() == status and batch.bytes_done <= batch.length
    if status == -errno.ECANCELED:
        assert batch.bytes_done < batch.length
        # The endpoint is fine: the target is told, surely.
        n = b.take_note(failed_name())
        assert (n.node, n.agent, n.msg) == (a.node, a.agent, b"cancelled")
    else:
        b.take_note(b"cancelled")
    batch.release()
    # Released: what it said stays; release and cancel are no-ops.
    batch.release()
    batch.cancel()
    assert batch.status() == status and batch.released
    recovers(a, b, rng, "after a cancel")


def test_batches_dropped_in_flight_give_their_slots_back(sides, rng):
    a, b = sides
    # More batches than a node's lcore has slots (16 by default), each
    # dropped at once: cancelled, released once final, their Regions and
    # Remotes held until then.
    for i in range(48):
        retry(lambda: a.c.write([(a.region, 0, a.remote, 0, MIB)]),
              f"dropped batch {i}", a)
    # With: cancelled unless final, waited for, released.
    with retry(lambda: a.c.write([(a.region, 0, a.remote, 0, MIB)],
                                 cookie=5), "with", a) as batch:
        pass
    assert batch.released and batch.done
    recovers(a, b, rng, "after dropped batches")


def test_batch_wait_lets_other_threads_call(sides):
    a, b = sides
    entries = [(a.region, 0, a.remote, 0, 64 * MIB)] * 16
    batch = retry(lambda: a.c.write(entries), "the long write", a)
    waiter = threading.Thread(target=batch.wait, args=(DEADLINE_S * 2,))
    waiter.start()
    # While the other thread waits on the batch, this one sends on the
    # same Client: the wait gives its lock up between slices.
    sent_in_flight = 0
    for i in range(20):
        send_retry(a.c, b.node, b.agent, b"side", str(i))
        sent_in_flight += not batch.done
    waiter.join(DEADLINE_S * 2)
    assert not waiter.is_alive()
    print(f"{sent_in_flight} of 20 sends while the batch was in flight")
    assert sent_in_flight > 0, "the waiting thread held the client"
    assert batch.status() == 0
    batch.release()
    got = []
    while len(got) < 20:
        got += [n for n in b.c.poll() if n.name == b"side"]
        if len(got) < 20:
            b.c.wait(1.0)
    assert [n.msg for n in got] == [str(i).encode() for i in range(20)]


def test_publish_fetch_import(sides):
    a, b = sides
    name = f"py-{agent_name('pub')}"
    b.region.publish(name)
    desc = retry(lambda: a.c.fetch(b.node, name, timeout=DEADLINE_S),
                 "fetch")
    assert desc == b.region.export() and len(desc) == 192
    rem = a.c.import_desc(desc)
    assert (rem.node, rem.address, rem.length, rem.desc) == \
        (b.node, b.region.address, b.region.length, desc)
    with pytest.raises(OSError) as e:
        a.c.fetch(b.node, name + "-absent", timeout=DEADLINE_S)
    assert e.value.errno == errno.ENODATA, e.value
    b.region.publish(None)
    with pytest.raises(OSError) as e:
        a.c.fetch(b.node, name, timeout=DEADLINE_S)
    assert e.value.errno == errno.ENODATA, e.value
    with pytest.raises(OSError) as e:
        a.c.import_desc(b"\0" * 192)
    assert e.value.errno == errno.EBADMSG, e.value


def test_fetch_from_own_node(sides):
    # Two agents of one daemon: the endpoint to self carries no descriptor
    # requests, so the daemon answers from its own publications.
    a, _ = sides
    name = f"py-{agent_name('own')}"
    a.region.publish(name)
    assert a.c.fetch(a.node, name, timeout=DEADLINE_S) == a.region.export()
    with pytest.raises(OSError) as e:
        a.c.fetch(a.node, name + "-absent", timeout=DEADLINE_S)
    assert e.value.errno == errno.ENODATA, e.value
    a.region.publish(None)


def test_plain_memory_is_refused(sides, rnotify):
    a, _ = sides
    for plain in (bytearray(8192), b"x" * 8192):
        with pytest.raises(OSError) as e:
            a.c.register(plain)
        assert e.value.errno == errno.EFAULT, e.value
        assert "Client.alloc()" in str(e.value), e.value
    # A view over part of alloc()'s memory is fine; a Buffer is writable.
    buf = a.c.alloc(64 * KIB)
    assert isinstance(buf, rnotify.Buffer) and len(buf) == 64 * KIB
    m = memoryview(buf)
    assert not m.readonly and bytes(m[:16]) == b"\0" * 16
    r = a.c.register(m[4096:8192], access=rnotify.REMOTE_READ)
    assert (r.address, r.length) == (buf.address + 4096, 4096)
    # A range is registered as the whole pages that hold it.
    r2 = a.c.register(m[8192 + 100:8192 + 200])
    assert (r2.address, r2.length) == (buf.address + 8192, 4096)
    r2.deregister()
    with pytest.raises(BufferError):
        buf.free()
    r.deregister()
    assert not r.registered
    with pytest.raises(ValueError):
        r.export()
    m.release()
    buf.free()


def write_then_read(a, b, r, data, zero, local, what):
    """WRITE data (in r, from its start) to b's buffer, checked there at
    its notification; zero() it here, READ it back, check local()."""
    n = len(data)
    clear(b.mem, [(0, n)])
    batch = retry(lambda: a.c.write([(r, 0, a.remote, 0, n)],
                                    notify=(b.agent, what, b"w")),
                  f"write from {what}", a)
    b.take_note(what.encode())
    assert b.mem[:n] == data, what
    batch.wait(DEADLINE_S)
    batch.release()
    zero()
    batch = retry(lambda: a.c.read([(r, 0, a.remote, 0, n)]),
                  f"read into {what}", a)
    batch.wait(DEADLINE_S)
    batch.release()
    assert local() == data, what


def test_hugepage_buffer(sides, rng):
    a, b = sides
    buf = a.c.alloc(4 * MIB)
    if not buf.hugepages:
        pytest.skip("no free 2 MiB hugepages for a 4 MiB Buffer")
    r = a.c.register(memoryview(buf)[MIB + 1:MIB + 2])
    # The whole (huge) page that holds the byte.
    assert (r.address, r.length) == (buf.address, 2 * MIB)
    r.deregister()
    r = a.c.register(buf)
    m = memoryview(buf)
    data = rng.randbytes(4 * MIB)
    m[:] = data

    def zero():
        m[:] = bytes(4 * MIB)
    write_then_read(a, b, r, data, zero, lambda: m, "hugepages")
    r.deregister()
    m.release()
    buf.free()


def map_pieces(fds, size):
    """Map each fd's first size bytes one after the other, shared, at
    addresses of this process's choosing (libc mmap, MAP_FIXED over a
    reservation): their first address."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    total = size * len(fds)
    base = libc.mmap(None, total, 0, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                     -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
    for i, fd in enumerate(fds):
        got = libc.mmap(base + i * size, size,
                        mmap.PROT_READ | mmap.PROT_WRITE,
                        mmap.MAP_SHARED | MAP_FIXED, fd, 0)
        assert got == base + i * size, ctypes.get_errno()
    return base


def test_register_fd(sides, rng, rnotify):
    a, b = sides
    size = 64 * KIB
    fds = [os.memfd_create(f"piece{i}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
           for i in range(3)]
    for fd in fds:
        os.ftruncate(fd, size)
    base = map_pieces(fds, size)
    r = a.c.register_fd(base, [(fd, 0, size) for fd in fds])
    assert (r.address, r.length) == (base, 3 * size)
    data = rng.randbytes(3 * size)
    ctypes.memmove(base, data, len(data))
    write_then_read(a, b, r, data, lambda: ctypes.memset(base, 0, 3 * size),
                    lambda: ctypes.string_at(base, 3 * size), "pieces")
    # Each fd holds its part.
    for i, fd in enumerate(fds):
        assert os.pread(fd, size, 0) == data[i * size:(i + 1) * size], i
    r.deregister()
    # What the daemon cannot map: a pipe; a memfd as a dma-buf.
    rd, wr = os.pipe()
    try:
        with pytest.raises(OSError) as e:
            a.c.register_fd(base, [(rd, 0, size)])
        assert e.value.errno == errno.EBADF, e.value
    finally:
        os.close(rd)
        os.close(wr)
    # A memfd the daemon cannot seal against shrinking.
    loose = os.memfd_create("loose")
    try:
        os.ftruncate(loose, size)
        with pytest.raises(OSError) as e:
            a.c.register_fd(base, [(loose, 0, size)])
        assert e.value.errno == errno.EBADF, e.value
    finally:
        os.close(loose)
    with pytest.raises(OSError) as e:
        a.c.register_fd(base, [(fds[0], 0, size)], dmabuf=True)
    assert e.value.errno in (errno.EOPNOTSUPP, errno.EBADF), e.value
    with pytest.raises(OSError) as e:
        a.c.register_fd(base, [(fd, 0, size) for fd in fds[:2]],
                        dmabuf=True)
    assert e.value.errno == errno.EOPNOTSUPP, e.value
    mmap_munmap(base, 3 * size)
    for fd in fds:
        os.close(fd)


def mmap_munmap(addr, length):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    assert libc.munmap(addr, length) == 0, ctypes.get_errno()


def test_buffer_outlives_its_client(pair):
    c = pair.attach(pair.a, agent_name("outlive"))
    buf = c.alloc(64 * KIB)
    m = memoryview(buf)
    m[:5] = b"kept!"
    r = c.register(buf)
    c.detach()
    # The memory stays mapped (the daemon let go of it): still usable.
    assert bytes(m[:5]) == b"kept!" and not r.registered
    m[5:10] = b"again"
    with pytest.raises(ValueError):
        r.export()
    r.deregister()
    m.release()
    buf.free()
    assert len(buf) == 0 and buf.address == 0


# ---- access errors ----

def tampered(desc, rkey_xor=0, length=None):
    """desc with every key's rkey xored, or another length."""
    d = bytearray(desc)
    n_keys = struct.unpack_from("<H", d, DESC_N_KEYS)[0]
    for i in range(n_keys):
        off = DESC_KEYS + 8 * i + 4
        rkey = struct.unpack_from("<I", d, off)[0]
        struct.pack_into("<I", d, off, rkey ^ rkey_xor)
    if length is not None:
        struct.pack_into("<Q", d, DESC_LENGTH, length)
    return bytes(d)


# How long the target's failure notification may take: it goes as the
# batch ends, and the endpoint that failed with the batch fails (and
# closes) only once it went (docs/transfers.md, "A failed batch").
FAILED_NOTE_WAIT_S = 3


def expect_failure(a, b, kind, entries, want, note_expected=True):
    """a's batch of entries fails with want. When note_expected (the batch
    went to the engine, not refused at submission), b's agent gets the
    failure notification naming the one it will not get, within
    FAILED_NOTE_WAIT_S; else it is not looked for."""
    name = f"lost-{want}-{time.monotonic_ns()}".encode()
    submit = a.c.write if kind == "write" else a.c.read
    batch = retry(lambda: submit(entries, notify=(b.agent, name, b"x")),
                  f"{kind} expecting {want}", a)
    with pytest.raises(OSError) as e:
        batch.wait(DEADLINE_S)
    assert e.value.errno == want, e.value
    assert batch.status() == -want
    batch.release()
    if note_expected:
        t0 = time.monotonic()
        n = b.take_note(failed_name(), FAILED_NOTE_WAIT_S)
        assert (n.node, n.agent, n.msg) == (a.node, a.agent, name), n
        print(f"{errno.errorcode[want]}: the target's failure notification "
              f"came {time.monotonic() - t0:.3f} s after the batch failed")
    return batch


def failed_name():
    import rnotify
    return rnotify.XFER_FAILED_NAME.encode()


def recovers(a, b, rng, what):
    """A later batch succeeds (the endpoint is back): a WRITE of random
    bytes to b, its notification after them. Batches that find the
    endpoint still down fail and are tried again."""
    deadline = time.monotonic() + DEADLINE_S
    data = rng.randbytes(3 * MIB + 17)
    a.mem[:len(data)] = data
    tries = 0
    while True:
        tries += 1
        name = f"again-{tries}-{time.monotonic_ns()}".encode()
        clear(b.mem, [(4096, len(data))])
        batch = retry(lambda: a.c.write(
            [(a.region, 0, a.remote, 4096, len(data))],
            notify=(b.agent, name, b"again")), what, a)
        try:
            batch.wait(DEADLINE_S)
        except OSError as e:
            batch.release()
            # The endpoint still down, or not probed yet.
            if e.errno in (errno.ENOTCONN, errno.EPIPE, errno.EAGAIN) and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
                continue
            raise AssertionError(f"{what}: the batch after: {e}") from e
        batch.release()
        b.take_note(name)
        assert b.mem[4096:4096 + len(data)] == data, what
        print(f"{what}: recovered after {tries} batches")
        return


def test_bad_rkey(sides, rng):
    a, b = sides
    bad = a.c.import_desc(tampered(b.region.export(), rkey_xor=0x100))
    expect_failure(a, b, "write", [(a.region, 0, bad, 0, 8192)],
                   errno.EACCES)
    recovers(a, b, rng, "bad rkey")


def test_out_of_bounds(sides, rng):
    a, b = sides
    end = b.region.length
    # Outside the descriptor: refused before any WQE, the endpoint
    # untouched.
    expect_failure(a, b, "read", [(a.region, 0, a.remote, end - 4096, 8192)],
                   errno.EINVAL, note_expected=False)
    # Outside this client's region, locally.
    expect_failure(a, b, "write",
                   [(a.region, a.region.length - 4096, a.remote, 0, 8192)],
                   errno.EINVAL, note_expected=False)
    recovers(a, b, rng, "out of bounds (descriptor)")
    # A descriptor that claims more than was registered: the peer's NIC
    # refuses it.
    big = a.c.import_desc(tampered(b.region.export(), length=2 * end))
    expect_failure(a, b, "read", [(a.region, 0, big, end - 4096, 8192)],
                   errno.EACCES)
    recovers(a, b, rng, "out of bounds (NIC)")


def test_deregistered_region(sides, rng):
    a, b = sides
    small = b.c.alloc(MIB)
    r = b.c.register(small)
    rem = a.c.import_desc(r.export())
    r.deregister()
    expect_failure(a, b, "write", [(a.region, 0, rem, 0, 65536)],
                   errno.EACCES)
    recovers(a, b, rng, "deregistered region")


def test_descriptor_of_an_older_incarnation(pair, rnotify, rng):
    pair.pair.wait_connected(0)
    a = Side(pair, pair.a, "stale-a")
    b = Side(pair, pair.b, "stale-b")
    old = a.c.import_desc(b.region.export())
    pair.pair.restart(1)
    pair.pair.wait_connected(0)
    # b's daemon is another incarnation: its clients went with it.
    b = Side(pair, pair.b, "stale-b2")
    entries = [(a.region, 0, old, 0, 65536)]
    batch = retry(lambda: a.c.write(entries, notify=(b.agent, b"n", b"m")),
                  "write with the old descriptor", a)
    with pytest.raises(OSError) as e:
        batch.wait(DEADLINE_S)
    assert e.value.errno == errno.ESTALE, e.value
    assert batch.bytes_done == 0
    batch.release()
    a.remote = a.c.import_desc(b.region.export())
    assert a.remote.session != old.session
    recovers(a, b, rng, "older incarnation")
    close_all(pair)


def test_transfer_example_runs(pair, rng, tmp_path):
    pair.pair.wait_connected(0)
    agent, name = agent_name("ex-serve"), f"ex-{time.monotonic_ns()}"
    data = rng.randbytes(MIB + 3)
    path = tmp_path / "data"
    path.write_bytes(data)
    p = subprocess.Popen([sys.executable, os.path.join(EXAMPLES,
                                                       "transfer.py"),
                          "--socket", pair.socket(pair.b), "serve",
                          "--count", "1", agent, name, str(2 * MIB + 1)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    with reaped(p):
        line = p.stderr.readline()
        assert line.startswith(f"serving {2 * MIB + 1} bytes as {name}"), \
            (line, p.poll())
        r = subprocess.run([sys.executable, os.path.join(EXAMPLES,
                                                         "transfer.py"),
                            "--socket", pair.socket(pair.a), "send",
                            "--as", "ex-sender", pair.b, agent, name,
                            str(path)],
                           capture_output=True, text=True,
                           timeout=DEADLINE_S * 2)
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == \
            f"wrote {len(data)} bytes to {name} on {pair.b}", r.stdout
        out, err = p.communicate(timeout=DEADLINE_S)
    assert p.returncode == 0, err
    assert out.split() == [pair.a, "ex-sender", name, str(len(data)),
                           hashlib.sha256(data).hexdigest()], (out, err)


def test_target_killed_in_a_batch(pair, rng):
    pair.pair.wait_connected(0)
    a = Side(pair, pair.a, "kill-a")
    b = Side(pair, pair.b, "kill-b")
    a.remote = a.c.import_desc(b.region.export())
    n = 16
    try:
        for attempt in range(3):
            entries = [(a.region, 0, a.remote, 0, 64 * MIB)] * n
            batch = retry(lambda: a.c.write(entries, notify=(
                b.agent, b"never", b"m")), "the large write", a)
            time.sleep(0.2)
            if batch.status() != -errno.EINPROGRESS:
                # Done before the kill: a larger batch.
                batch.wait(DEADLINE_S)
                batch.release()
                n *= 4
                continue
            pair.pair.d[1].kill()
            t0 = time.monotonic()
            with pytest.raises(OSError) as e:
                batch.wait(KILL_BOUND_S + 5)
            took = time.monotonic() - t0
            print(f"target killed in a batch of {batch.length} bytes: "
                  f"failed with {errno.errorcode[e.value.errno]} after "
                  f"{took:.3f} s, {batch.bytes_done} bytes done")
            assert e.value.errno in (errno.ENOTCONN, errno.EPIPE), e.value
            assert took < KILL_BOUND_S, took
            assert batch.bytes_done < batch.length
            batch.release()
            return
        raise AssertionError(f"a batch of {n // 4} x 64 MiB was done "
                             "within 0.2 s three times")
    finally:
        close_all(pair)
        if pair.pair.d[1].killed:
            pair.pair.d[1] = pair.pair.start(1)
            pair.pair.d[1].wait_running()
            pair.pair.wait_connected(0)

