/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rnotify._rnotify, transfers (rn_client.h, "Transfers"): the types
 * Buffer (memory of Client.alloc(), with the buffer protocol), Region (a
 * registered range), Remote (a peer's region, imported from its
 * descriptor) and Batch (a submitted READ or WRITE batch), and the
 * Client's calls that make them. docs/client.md ("Python", "Transfers")
 * is the reference.
 *
 * Every object holds its Client and the attachment (epoch) it was made
 * under: once the Client is detached, the librnotify object it names is
 * gone with it and the Python one only answers ValueError (its cached
 * facts stay readable). A Region holds the buffer it registers (so that
 * its memory cannot be freed under it), a Batch the Regions and Remotes
 * its entries name until it is released. Their deallocs queue the let-go
 * (rn_py_client_let_go()): a Batch dropped before it is final is
 * cancelled and released once final.
 *
 * Buffers are the module's own memfds (not rn_client_alloc()'s, which
 * librnotify unmaps at detach): see "Buffer" below.
 *
 * Entries of a batch are (region, offset, remote, remote_offset, length):
 * the local bytes at region.address + offset, the remote ones at
 * remote.address + remote_offset, which is what rn_client_transfer()
 * takes as addresses. Ranges are checked by the daemon (the batch ends
 * EINVAL), as for C callers.
 */
#include "module_pvt.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rn_xfer_desc.h"

/* How long one rn_client_batch_wait() under the lock lasts at most in
 * Batch.wait(): between two, other threads get the lock and signals
 * (Ctrl-C) are seen. */
#define BATCH_WAIT_SLICE_MS 20

#define ACCESS_ALL (RN_CLIENT_LOCAL_WRITE | RN_CLIENT_REMOTE_WRITE | \
		    RN_CLIENT_REMOTE_READ)

static PyTypeObject buffer_type;
static PyTypeObject region_type;
static PyTypeObject remote_type;
static PyTypeObject batch_type;

PyObject *
rn_py_kind_name(uint32_t kind)
{
	switch (kind) {
	case 0:
		return PyUnicode_FromString("send");
	case RN_CLIENT_WRITE:
		return PyUnicode_FromString("write");
	case RN_CLIENT_READ:
		return PyUnicode_FromString("read");
	default:
		return PyUnicode_FromFormat("kind_%u", (unsigned int)kind);
	}
}

/* "0x..." of v, for messages: PyUnicode_FromFormat() has no %llx. Valid
 * until the end of the full expression that calls it. */
struct hex {
	char s[19];
};

static struct hex
hex_of(uint64_t v)
{
	struct hex h;

	snprintf(h.s, sizeof(h.s), "0x%llx", (unsigned long long)v);
	return h;
}

/* ValueError unless obj (made under epoch) may still call the library. */
static int
check_live(struct rn_py_client *client, uint64_t epoch, const char *what)
{
	if (rn_py_client_live(client, epoch))
		return 0;
	PyErr_Format(PyExc_ValueError, "%s: its client is detached", what);
	return -1;
}

/* Take the lock for an object of epoch: 0, or -1 with ValueError. */
static int
lock_for(struct rn_py_client *client, uint64_t epoch, const char *what)
{
	if (rn_py_client_lock(client) != 0)
		return -1;
	if (client->epoch != epoch) {
		rn_py_client_unlock(client);
		PyErr_Format(PyExc_ValueError, "%s: its client is detached",
			     what);
		return -1;
	}
	return 0;
}

/* O& converter: an int of 0..2^64-1 (a length, an offset, an address). */
static int
u64_converter(PyObject *obj, void *out)
{
	unsigned long long v;

	if (!PyLong_Check(obj)) {
		PyErr_Format(PyExc_TypeError, "expected an int, not %s",
			     Py_TYPE(obj)->tp_name);
		return 0;
	}
	v = PyLong_AsUnsignedLongLong(obj);
	if (v == (unsigned long long)-1 && PyErr_Occurred()) {
		PyErr_Format(PyExc_ValueError, "%R is not 0 to 2^64 - 1", obj);
		return 0;
	}
	*(uint64_t *)out = v;
	return 1;
}

/* O& converter: access bits (RN_CLIENT_*), checked by the library. */
static int
access_converter(PyObject *obj, void *out)
{
	uint64_t v;

	if (!u64_converter(obj, &v))
		return 0;
	if (v > UINT32_MAX) {
		PyErr_Format(PyExc_ValueError, "access %R: unknown bits", obj);
		return 0;
	}
	*(uint32_t *)out = (uint32_t)v;
	return 1;
}

/* ---- Buffer: memory the daemon can map ---- */

/*
 * The module's own allocator rather than rn_client_alloc(): librnotify
 * unmaps its allocations when the client detaches, while a Buffer's
 * memory must stay as long as a memoryview (or anything else) over it
 * does, whatever becomes of the Client. So a Buffer is a memfd of its
 * own, mapped here until the Buffer is freed, and register() passes its
 * fd (rn_client_reg_fd()) for a range inside it. The live Buffers are a
 * list (under the GIL) that register() searches by address.
 */
#define HUGE_2M (2ull << 20)

#ifndef MFD_HUGETLB
#define MFD_HUGETLB 0x0004u
#endif
#ifndef MFD_HUGE_2MB
#define MFD_HUGE_2MB (21u << 26)
#endif

struct buffer {
	PyObject_HEAD
	void *addr;               /* NULL once freed */
	Py_ssize_t len;           /* as asked */
	size_t map_len;           /* whole pages of unit bytes */
	size_t unit;              /* the page size: 4 KiB, or 2 MiB */
	int fd;
	bool huge;                /* on 2 MiB hugepages */
	Py_ssize_t exports;       /* views of it (memoryviews, Regions) */
	struct buffer *prev, *next;   /* the live ones */
};

static struct buffer *buffers;

/* A memfd of len bytes mapped shared: 0 with *fd and *addr, or -errno.
 * On hugetlbfs the pages are reserved at mmap(), so no SIGBUS later. */
static int
memfd_map(size_t len, unsigned int flags, int *fd, void **addr)
{
	int f = memfd_create("rnotify-py", MFD_CLOEXEC | MFD_ALLOW_SEALING | flags), rc;
	void *p;

	if (f < 0)
		return -errno;
	if (ftruncate(f, (off_t)len) != 0) {
		rc = -errno;
		close(f);
		return rc;
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
	if (p == MAP_FAILED) {
		rc = -errno;
		close(f);
		return rc;
	}
	*fd = f;
	*addr = p;
	return 0;
}

static void
buffer_unmap(struct buffer *self)
{
	if (self->addr == NULL)
		return;
	munmap(self->addr, self->map_len);
	close(self->fd);
	self->addr = NULL;
	if (self->prev != NULL)
		self->prev->next = self->next;
	else
		buffers = self->next;
	if (self->next != NULL)
		self->next->prev = self->prev;
	self->prev = self->next = NULL;
}

/* The live Buffer that holds [addr, addr + len), or NULL. */
static struct buffer *
buffer_find(uint64_t addr, uint64_t len)
{
	for (struct buffer *b = buffers; b != NULL; b = b->next) {
		uint64_t base = (uintptr_t)b->addr;

		if (addr >= base && addr - base < (uint64_t)b->len &&
		    len <= (uint64_t)b->len - (addr - base))
			return b;
	}
	return NULL;
}

static int
buffer_getbuffer(struct buffer *self, Py_buffer *view, int flags)
{
	if (self->addr == NULL) {
		PyErr_SetString(PyExc_BufferError, "the Buffer was freed");
		return -1;
	}
	if (PyBuffer_FillInfo(view, (PyObject *)self, self->addr, self->len,
			      0, flags) != 0)
		return -1;
	self->exports++;
	return 0;
}

static void
buffer_releasebuffer(struct buffer *self, Py_buffer *view)
{
	(void)view;
	self->exports--;
}

static PyBufferProcs buffer_as_buffer = {
	.bf_getbuffer = (getbufferproc)buffer_getbuffer,
	.bf_releasebuffer = (releasebufferproc)buffer_releasebuffer,
};

static void
buffer_dealloc(struct buffer *self)
{
	buffer_unmap(self);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
buffer_free(struct buffer *self, PyObject *unused)
{
	(void)unused;
	if (self->addr == NULL)
		Py_RETURN_NONE;
	if (self->exports > 0) {
		PyErr_Format(PyExc_BufferError, "Buffer at %s: %zd "
			     "memoryviews or Regions still use it",
			     hex_of((uintptr_t)self->addr).s, self->exports);
		return NULL;
	}
	buffer_unmap(self);
	Py_RETURN_NONE;
}

static Py_ssize_t
buffer_length(struct buffer *self)
{
	return self->addr == NULL ? 0 : self->len;
}

static PyObject *
buffer_get_address(struct buffer *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong((uintptr_t)self->addr);
}

static PyObject *
buffer_get_hugepages(struct buffer *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->huge);
}

static PyObject *
buffer_repr(struct buffer *self)
{
	if (self->addr == NULL)
		return PyUnicode_FromString("<rnotify.Buffer, freed>");
	return PyUnicode_FromFormat("<rnotify.Buffer address=%s "
				    "length=%zd%s>",
				    hex_of((uintptr_t)self->addr).s,
				    self->len, self->huge ? " hugepages" : "");
}

static PyMappingMethods buffer_as_mapping = {
	.mp_length = (lenfunc)buffer_length,
};

static PyMethodDef buffer_methods[] = {
	{ "free", METHOD(buffer_free), METH_NOARGS,
	  "free()\n--\n\nUnmap the memory now (else when the Buffer is "
	  "freed). BufferError while memoryviews or Regions use it." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef buffer_getset[] = {
	{ "address", (getter)buffer_get_address, NULL,
	  "this process's address of the first byte (0 once freed)", NULL },
	{ "hugepages", (getter)buffer_get_hugepages, NULL,
	  "whether it is on 2 MiB hugepages", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject buffer_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rnotify.Buffer",
	.tp_basicsize = sizeof(struct buffer),
	.tp_dealloc = (destructor)buffer_dealloc,
	.tp_repr = (reprfunc)buffer_repr,
	.tp_as_mapping = &buffer_as_mapping,
	.tp_as_buffer = &buffer_as_buffer,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Memory the daemon can map, from Client.alloc(): writable "
		  "bytes-like (memoryview(buf)), for Client.register(). It "
		  "stays mapped until the Buffer is freed, whatever becomes "
		  "of the Client.",
	.tp_methods = buffer_methods,
	.tp_getset = buffer_getset,
};

PyObject *
rn_py_client_alloc(struct rn_py_client *self, PyObject *args,
		   PyObject *kwds)
{
	static char *kwlist[] = { "length", NULL };
	struct buffer *buf;
	Py_ssize_t length;
	size_t page = (size_t)sysconf(_SC_PAGESIZE), map_len;
	void *addr = NULL;
	int rc = -1, fd = -1;
	bool huge = false;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:alloc", kwlist,
					 &length))
		return NULL;
	if (length <= 0) {
		PyErr_Format(PyExc_ValueError, "length must be over 0, not %zd",
			     length);
		return NULL;
	}
	buf = PyObject_New(struct buffer, &buffer_type);
	if (buf == NULL)
		return NULL;
	buf->addr = NULL;
	buf->prev = buf->next = NULL;
	/* Whole pages: the daemon maps, and the device registers, by
	 * pages; a range is registered as the pages that hold it. */
	map_len = ((size_t)length + page - 1) / page * page;
	Py_BEGIN_ALLOW_THREADS
	if ((uint64_t)length % HUGE_2M == 0) {
		rc = memfd_map((size_t)length, MFD_HUGETLB | MFD_HUGE_2MB, &fd,
			       &addr);
		huge = rc == 0;
	}
	if (rc != 0)
		rc = memfd_map(map_len, 0, &fd, &addr);
	Py_END_ALLOW_THREADS
	if (rc != 0) {
		Py_DECREF(buf);
		return rn_py_raise_errno(-rc, "alloc %zd bytes", length);
	}
	/* A new memfd reads as zeroes, on hugepages too. */
	buf->addr = addr;
	buf->len = length;
	buf->map_len = huge ? (size_t)length : map_len;
	buf->unit = huge ? HUGE_2M : page;
	buf->fd = fd;
	buf->huge = huge;
	buf->exports = 0;
	buf->next = buffers;
	if (buffers != NULL)
		buffers->prev = buf;
	buffers = buf;
	return (PyObject *)buf;
}

/* ---- Region: registered memory ---- */

struct region {
	PyObject_HEAD
	struct rn_py_client *client;
	uint64_t epoch;
	struct rn_client_mr *r;   /* NULL once deregistered */
	Py_buffer view;               /* the memory registered; obj NULL for
				       * register_fd() */
	uint64_t addr;
	uint64_t len;
	uint32_t access;
};

static struct region *
region_new(struct rn_py_client *client)
{
	struct region *self = PyObject_New(struct region, &region_type);

	if (self == NULL)
		return NULL;
	self->client = (struct rn_py_client *)Py_NewRef(client);
	self->epoch = client->epoch;
	self->r = NULL;
	memset(&self->view, 0, sizeof(self->view));
	self->addr = self->len = 0;
	self->access = 0;
	return self;
}

static void
region_dealloc(struct region *self)
{
	PyObject *keep = NULL;

	if (self->r != NULL &&
	    rn_py_client_live(self->client, self->epoch)) {
		/* The memory stays until the daemon let go of it. */
		keep = Py_XNewRef(self->view.obj);
		if (self->view.obj != NULL)
			PyBuffer_Release(&self->view);
		rn_py_client_let_go(self->client, RN_PY_PENDING_DEREG,
				    self->r, keep);
	} else if (self->view.obj != NULL) {
		PyBuffer_Release(&self->view);
	}
	Py_XDECREF(self->client);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
region_check(struct region *self, const char *what)
{
	if (self->r == NULL) {
		PyErr_Format(PyExc_ValueError, "%s: the region is "
			     "deregistered", what);
		return -1;
	}
	return check_live(self->client, self->epoch, what);
}

static PyObject *
region_export(struct region *self, PyObject *unused)
{
	char desc[RN_CLIENT_DESC_SIZE];
	int rc;

	(void)unused;
	if (region_check(self, "Region.export") != 0 ||
	    lock_for(self->client, self->epoch, "Region.export") != 0)
		return NULL;
	rc = rn_client_export(self->r, desc, sizeof(desc));
	rn_py_client_unlock(self->client);
	if (rc < 0)
		return rn_py_raise_errno(-rc, "export the region at %s",
					 hex_of(self->addr).s);
	return PyBytes_FromStringAndSize(desc, rc);
}

static PyObject *
region_publish(struct region *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "name", NULL };
	PyObject *name = NULL;
	const char *text;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:publish", kwlist,
					 &name))
		return NULL;
	if (name == Py_None)
		name = NULL;
	else if (!PyUnicode_FSConverter(name, &name))
		return NULL;
	text = name != NULL ? PyBytes_AS_STRING(name) : NULL;
	if (region_check(self, "Region.publish") != 0 ||
	    lock_for(self->client, self->epoch, "Region.publish") != 0) {
		Py_XDECREF(name);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_publish(self->client->c, self->r, text);
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self->client);
	if (rc < 0) {
		if (text != NULL)
			rn_py_raise_errno(-rc, "publish the region at %s "
					  "as '%s'", hex_of(self->addr).s,
					  text);
		else
			rn_py_raise_errno(-rc, "withdraw the region at "
					  "%s", hex_of(self->addr).s);
		Py_XDECREF(name);
		return NULL;
	}
	Py_XDECREF(name);
	Py_RETURN_NONE;
}

static PyObject *
region_deregister(struct region *self, PyObject *unused)
{
	struct rn_client_mr *r = self->r;

	(void)unused;
	if (r == NULL)
		Py_RETURN_NONE;
	if (rn_py_client_live(self->client, self->epoch)) {
		if (lock_for(self->client, self->epoch,
			     "Region.deregister") != 0)
			return NULL;
		/* Waits for the batches that use it. -ENOTCONN: the daemon
		 * let go of it when it went; freed all the same. */
		Py_BEGIN_ALLOW_THREADS
		(void)rn_client_dereg(self->client->c, r);
		Py_END_ALLOW_THREADS
		rn_py_client_unlock(self->client);
	}
	self->r = NULL;
	if (self->view.obj != NULL)
		PyBuffer_Release(&self->view);
	Py_RETURN_NONE;
}

static PyObject *
region_get_address(struct region *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->addr);
}

static PyObject *
region_get_length(struct region *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->len);
}

static PyObject *
region_get_access(struct region *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLong(self->access);
}

static PyObject *
region_get_registered(struct region *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->r != NULL &&
			       rn_py_client_live(self->client, self->epoch));
}

static PyObject *
region_repr(struct region *self)
{
	return PyUnicode_FromFormat("<rnotify.Region address=%s "
				    "length=%llu access=%u%s>",
				    hex_of(self->addr).s,
				    (unsigned long long)self->len,
				    (unsigned int)self->access,
				    self->r == NULL ? ", deregistered" : "");
}

static PyMethodDef region_methods[] = {
	{ "export", METHOD(region_export), METH_NOARGS,
	  "export()\n--\n\nThe region's descriptor (bytes, DESC_SIZE) for the "
	  "peer: node, incarnation, address, length, keys." },
	{ "publish", METHOD(region_publish), METH_VARARGS | METH_KEYWORDS,
	  "publish(name)\n--\n\nLet peers' daemons fetch() the descriptor as "
	  "name (1 to PUBLISH_NAME_MAX of letters, digits, '_-.:/'); None "
	  "withdraws it." },
	{ "deregister", METHOD(region_deregister), METH_NOARGS,
	  "deregister()\n--\n\nDeregister: new batches naming it fail "
	  "(EINVAL); blocks until the batches that use it are final. "
	  "Idempotent." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef region_getset[] = {
	{ "address", (getter)region_get_address, NULL,
	  "this process's address of its first byte", NULL },
	{ "length", (getter)region_get_length, NULL, "its bytes", NULL },
	{ "access", (getter)region_get_access, NULL,
	  "the access granted (LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ)",
	  NULL },
	{ "registered", (getter)region_get_registered, NULL,
	  "False once deregistered or its client detached", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject region_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rnotify.Region",
	.tp_basicsize = sizeof(struct region),
	.tp_dealloc = (destructor)region_dealloc,
	.tp_repr = (reprfunc)region_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "Memory registered with the daemon's device "
		  "(Client.register(), register_fd()): the local side of "
		  "batches, and what peers READ and WRITE through its "
		  "descriptor (export(), publish()).",
	.tp_methods = region_methods,
	.tp_getset = region_getset,
};

/* Raise the error of rn_client_reg() or _reg_fd() for len bytes at addr. */
static void
raise_reg(int rc, const char *type, uint64_t addr, uint64_t len)
{
	if (rc == -EFAULT)
		rn_py_raise_errno(EFAULT, "register %llu bytes at %s (%s): "
				  "not memory of Client.alloc(); plain memory "
				  "cannot be shared with the daemon: allocate "
				  "it with Client.alloc(), or pass its fds to "
				  "register_fd()", (unsigned long long)len,
				  hex_of(addr).s, type);
	else
		rn_py_raise_errno(-rc, "register %llu bytes at %s (%s)",
				  (unsigned long long)len, hex_of(addr).s, type);
}

PyObject *
rn_py_client_register(struct rn_py_client *self, PyObject *args,
		      PyObject *kwds)
{
	static char *kwlist[] = { "buf", "access", NULL };
	uint32_t access = ACCESS_ALL;
	struct rn_client_piece piece;
	struct buffer *mem;
	struct region *reg;
	PyObject *obj;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|O&:register", kwlist,
					 &obj, access_converter, &access))
		return NULL;
	reg = region_new(self);
	if (reg == NULL)
		return NULL;
	if (PyObject_GetBuffer(obj, &reg->view, PyBUF_SIMPLE) != 0) {
		Py_DECREF(reg);
		PyErr_Format(PyExc_TypeError, "register: buf must be a Buffer "
			     "of Client.alloc() or a contiguous bytes-like "
			     "object over one, not %s", Py_TYPE(obj)->tp_name);
		return NULL;
	}
	reg->addr = (uintptr_t)reg->view.buf;
	reg->len = (uint64_t)reg->view.len;
	reg->access = access;
	if (rn_py_client_lock(self) != 0) {
		Py_DECREF(reg);
		return NULL;
	}
	reg->epoch = self->epoch;
	mem = buffer_find(reg->addr, reg->len);
	if (mem != NULL) {
		/* The whole pages that hold the range, as rn_client_reg()
		 * does: the region is known by them. */
		uint64_t off = reg->addr - (uintptr_t)mem->addr;
		uint64_t end = off + reg->len;

		off -= off % mem->unit;
		end = (end + mem->unit - 1) / mem->unit * mem->unit;
		reg->addr = (uintptr_t)mem->addr + off;
		reg->len = end - off;
		piece = (struct rn_client_piece){ .fd = mem->fd,
						  .offset = off,
						  .length = reg->len };
	}
	/* Else memory of rn_client_alloc() (by a C caller in this process),
	 * or plain memory, which the library refuses (-EFAULT). */
	Py_BEGIN_ALLOW_THREADS
	if (mem != NULL)
		rc = rn_client_reg_fd(self->c, (void *)(uintptr_t)reg->addr,
				      &piece, 1, access, 0, &reg->r);
	else
		rc = rn_client_reg(self->c, reg->view.buf,
				   (size_t)reg->view.len, access, &reg->r);
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0) {
		reg->r = NULL;
		raise_reg(rc, Py_TYPE(obj)->tp_name, reg->addr, reg->len);
		Py_DECREF(reg);
		return NULL;
	}
	return (PyObject *)reg;
}

PyObject *
rn_py_client_register_fd(struct rn_py_client *self, PyObject *args,
			 PyObject *kwds)
{
	static char *kwlist[] = { "address", "pieces", "access", "dmabuf",
				  NULL };
	struct rn_client_piece pieces[RN_CLIENT_REG_MAX_PIECES];
	uint32_t access = ACCESS_ALL;
	PyObject *list, *seq = NULL;
	struct region *reg = NULL;
	uint64_t addr, total = 0;
	Py_ssize_t n;
	int dmabuf = 0, rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O|O&p:register_fd",
					 kwlist, u64_converter, &addr, &list,
					 access_converter, &access, &dmabuf))
		return NULL;
	seq = PySequence_Fast(list, "pieces must be a sequence of (fd, "
			      "offset, length)");
	if (seq == NULL)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n < 1 || n > RN_CLIENT_REG_MAX_PIECES) {
		PyErr_Format(PyExc_ValueError, "pieces: 1 to %d, not %zd",
			     RN_CLIENT_REG_MAX_PIECES, n);
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
		int fd;

		if (!PyArg_ParseTuple(t, "iO&O&;a piece is (fd, offset, "
				      "length)", &fd, u64_converter,
				      &pieces[i].offset, u64_converter,
				      &pieces[i].length))
			goto out;
		pieces[i].fd = fd;
		total += pieces[i].length;
	}
	reg = region_new(self);
	if (reg == NULL)
		goto out;
	reg->addr = addr;
	reg->len = total;
	reg->access = access;
	if (rn_py_client_lock(self) != 0)
		goto out;
	reg->epoch = self->epoch;
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_reg_fd(self->c, (void *)(uintptr_t)addr, pieces,
			      (unsigned int)n, access,
			      dmabuf ? RN_CLIENT_REG_DMABUF : 0, &reg->r);
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0) {
		reg->r = NULL;
		raise_reg(rc, dmabuf ? "dma-buf fds" : "fds", addr, total);
		goto out;
	}
	Py_DECREF(seq);
	return (PyObject *)reg;
out:
	Py_XDECREF(reg);
	Py_DECREF(seq);
	return NULL;
}

/* ---- Remote: a peer's region ---- */

struct remote {
	PyObject_HEAD
	struct rn_py_client *client;
	uint64_t epoch;
	struct rn_client_remote *rem;
	struct rn_xfer_remote info;   /* what the descriptor says */
	PyObject *desc;               /* bytes */
};

static void
remote_dealloc(struct remote *self)
{
	if (self->rem != NULL && rn_py_client_live(self->client, self->epoch))
		rn_py_client_let_go(self->client, RN_PY_PENDING_FORGET,
				    self->rem, NULL);
	Py_XDECREF(self->client);
	Py_XDECREF(self->desc);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
remote_get_node(struct remote *self, void *closure)
{
	(void)closure;
	return PyUnicode_DecodeFSDefault(self->info.node);
}

static PyObject *
remote_get_address(struct remote *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->info.addr);
}

static PyObject *
remote_get_length(struct remote *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->info.length);
}

static PyObject *
remote_get_session(struct remote *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->info.session_id);
}

static PyObject *
remote_get_desc(struct remote *self, void *closure)
{
	(void)closure;
	return Py_NewRef(self->desc);
}

static PyObject *
remote_repr(struct remote *self)
{
	return PyUnicode_FromFormat("<rnotify.Remote node=%s address=%s "
				    "length=%llu>", self->info.node,
				    hex_of(self->info.addr).s,
				    (unsigned long long)self->info.length);
}

static PyGetSetDef remote_getset[] = {
	{ "node", (getter)remote_get_node, NULL,
	  "the node that exported it", NULL },
	{ "address", (getter)remote_get_address, NULL,
	  "the exporter's address of its first byte", NULL },
	{ "length", (getter)remote_get_length, NULL, "its bytes", NULL },
	{ "session", (getter)remote_get_session, NULL,
	  "the exporting node's incarnation", NULL },
	{ "desc", (getter)remote_get_desc, NULL, "the descriptor (bytes)",
	  NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject remote_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rnotify.Remote",
	.tp_basicsize = sizeof(struct remote),
	.tp_dealloc = (destructor)remote_dealloc,
	.tp_repr = (reprfunc)remote_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A peer's region, from its descriptor "
		  "(Client.import_desc()): the remote side of batches.",
	.tp_getset = remote_getset,
};

PyObject *
rn_py_client_import_desc(struct rn_py_client *self, PyObject *args,
			 PyObject *kwds)
{
	static char *kwlist[] = { "desc", NULL };
	struct remote *rem;
	Py_buffer view;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "y*:import_desc", kwlist,
					 &view))
		return NULL;
	rem = PyObject_New(struct remote, &remote_type);
	if (rem == NULL) {
		PyBuffer_Release(&view);
		return NULL;
	}
	rem->client = (struct rn_py_client *)Py_NewRef(self);
	rem->epoch = self->epoch;
	rem->rem = NULL;
	rem->desc = PyBytes_FromStringAndSize(view.buf, view.len);
	rc = rn_xfer_desc_decode(view.buf, (size_t)view.len, &rem->info);
	if (rem->desc == NULL || rc < 0) {
		PyBuffer_Release(&view);
		Py_DECREF(rem);
		if (rc < 0)
			return rn_py_raise_errno(-rc, "import a descriptor of "
						 "%zd bytes", view.len);
		return NULL;
	}
	if (rn_py_client_lock(self) != 0) {
		PyBuffer_Release(&view);
		Py_DECREF(rem);
		return NULL;
	}
	rem->epoch = self->epoch;
	rc = rn_client_import(self->c, view.buf, (size_t)view.len, &rem->rem);
	rn_py_client_unlock(self);
	PyBuffer_Release(&view);
	if (rc < 0) {
		rem->rem = NULL;
		Py_DECREF(rem);
		return rn_py_raise_errno(-rc, "import a descriptor of %zd "
					 "bytes", view.len);
	}
	return (PyObject *)rem;
}

PyObject *
rn_py_client_fetch(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "node", "name", "timeout", NULL };
	PyObject *node = NULL, *name = NULL, *ret = NULL;
	char desc[RN_CLIENT_DESC_SIZE];
	double timeout = 5.0;
	uint32_t ms;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O&|d:fetch", kwlist,
					 PyUnicode_FSConverter, &node,
					 PyUnicode_FSConverter, &name,
					 &timeout))
		goto out;
	if (!(timeout >= 0) || timeout > UINT32_MAX / 1000.0) {
		PyErr_SetString(PyExc_ValueError, "timeout must be 0 to "
				"2^32 ms, in seconds");
		goto out;
	}
	ms = (uint32_t)ceil(timeout * 1000);
	if (rn_py_client_lock(self) != 0)
		goto out;
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_fetch(self->c, PyBytes_AS_STRING(node),
			     PyBytes_AS_STRING(name), ms, desc, sizeof(desc));
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0)
		rn_py_raise_errno(-rc, "fetch the descriptor '%s' of node '%s'",
				  PyBytes_AS_STRING(name),
				  PyBytes_AS_STRING(node));
	else
		ret = PyBytes_FromStringAndSize(desc, rc);
out:
	Py_XDECREF(node);
	Py_XDECREF(name);
	return ret;
}

/* ---- Batch ---- */

struct batch {
	PyObject_HEAD
	struct rn_py_client *client;
	uint64_t epoch;
	struct rn_client_batch *b;    /* NULL once released */
	PyObject *refs;               /* set: its Regions and Remotes */
	PyObject *node;               /* str */
	uint32_t kind;
	uint64_t cookie;
	uint64_t length;              /* bytes of all its entries */
	/* Cached once final: */
	bool final;
	int status;
	uint64_t bytes_done;
	int notify_status;
};

static void
batch_dealloc(struct batch *self)
{
	if (self->b != NULL && rn_py_client_live(self->client, self->epoch)) {
		rn_py_client_let_go(self->client, RN_PY_PENDING_BATCH,
				    self->b, self->refs);
		self->refs = NULL;
	}
	Py_XDECREF(self->refs);
	Py_XDECREF(self->node);
	Py_XDECREF(self->client);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static const char *
kind_text(uint32_t kind)
{
	return kind == RN_CLIENT_READ ? "read" : "write";
}

/* With the lock held: look at the status, cache it once final. */
static int
batch_look(struct batch *self)
{
	uint64_t done = 0;
	int notify = 0, rc;

	if (self->final)
		return self->status;
	rc = rn_client_batch_status(self->b, &done, &notify);
	self->bytes_done = done;
	self->notify_status = notify;
	if (rc != -EINPROGRESS) {
		self->final = true;
		self->status = rc;
	}
	return rc;
}

/* Refresh: the cached status when final or released, else a look under
 * the lock. 0 or -1 (ValueError: detached, not final). */
static int
batch_refresh(struct batch *self)
{
	if (self->final || self->b == NULL)
		return 0;
	if (lock_for(self->client, self->epoch, "Batch") != 0)
		return -1;
	batch_look(self);
	rn_py_client_unlock(self->client);
	return 0;
}

static PyObject *
batch_status(struct batch *self, PyObject *unused)
{
	(void)unused;
	if (batch_refresh(self) != 0)
		return NULL;
	return PyLong_FromLong(self->final ? self->status : -EINPROGRESS);
}

/* The batch failed: its error as OSError. */
static PyObject *
raise_batch(struct batch *self)
{
	return rn_py_raise_errno(-self->status, "%s batch (cookie %llu, %llu "
				 "bytes) to node '%U': %llu bytes done",
				 kind_text(self->kind),
				 (unsigned long long)self->cookie,
				 (unsigned long long)self->length, self->node,
				 (unsigned long long)self->bytes_done);
}

/*
 * wait(timeout=None): None once the batch is done; OSError with its error
 * when it failed; TimeoutError when it is not final after timeout seconds.
 * Waits in slices (BATCH_WAIT_SLICE_MS) of rn_client_batch_wait() under
 * the lock without the GIL. seconds < 0: no timeout.
 */
static PyObject *
batch_wait_for(struct batch *self, double seconds)
{
	double deadline = rn_py_monotonic_s() + seconds;
	int rc = -EINPROGRESS;

	while (!self->final && self->b != NULL) {
		double left = seconds < 0 ? BATCH_WAIT_SLICE_MS :
			(deadline - rn_py_monotonic_s()) * 1000;
		int ms = left <= 0 ? 0 : left < BATCH_WAIT_SLICE_MS ?
			(int)ceil(left) : BATCH_WAIT_SLICE_MS;

		if (lock_for(self->client, self->epoch, "Batch.wait") != 0)
			return NULL;
		Py_BEGIN_ALLOW_THREADS
		rc = rn_client_batch_wait(self->client->c, self->b, ms);
		Py_END_ALLOW_THREADS
		batch_look(self);
		rn_py_client_unlock(self->client);
		if (self->final)
			break;
		if (rc != -ETIMEDOUT && rc != -EINPROGRESS && rc < 0)
			return rn_py_raise_errno(-rc, "wait for the %s batch "
						 "(cookie %llu)",
						 kind_text(self->kind),
						 (unsigned long long)
						 self->cookie);
		if (PyErr_CheckSignals() != 0)
			return NULL;
		if (seconds >= 0 && rn_py_monotonic_s() >= deadline)
			return rn_py_raise_errno(ETIMEDOUT, "the %s batch "
						 "(cookie %llu) is not final "
						 "after %g s",
						 kind_text(self->kind),
						 (unsigned long long)
						 self->cookie, seconds);
	}
	if (!self->final)   /* released before it was final: cannot be */
		Py_RETURN_NONE;
	if (self->status != 0)
		return raise_batch(self);
	Py_RETURN_NONE;
}

static PyObject *
batch_wait(struct batch *self, PyObject *args, PyObject *kwds)
{
	double seconds;

	if (rn_py_timeout_parse(args, kwds, &seconds) != 0)
		return NULL;
	return batch_wait_for(self, seconds);
}

static PyObject *
batch_cancel(struct batch *self, PyObject *unused)
{
	(void)unused;
	if (self->b == NULL || self->final)
		Py_RETURN_NONE;
	if (lock_for(self->client, self->epoch, "Batch.cancel") != 0)
		return NULL;
	rn_client_batch_cancel(self->b);
	rn_py_client_unlock(self->client);
	Py_RETURN_NONE;
}

static PyObject *
batch_release(struct batch *self, PyObject *unused)
{
	PyObject *refs;
	int rc;

	(void)unused;
	if (self->b == NULL)
		Py_RETURN_NONE;
	if (lock_for(self->client, self->epoch, "Batch.release") != 0)
		return NULL;
	batch_look(self);
	rc = rn_client_batch_release(self->client->c, self->b);
	rn_py_client_unlock(self->client);
	if (rc < 0)
		return rn_py_raise_errno(-rc, "release the %s batch (cookie "
					 "%llu): not final; cancel() it and "
					 "wait() first", kind_text(self->kind),
					 (unsigned long long)self->cookie);
	self->b = NULL;
	refs = self->refs;
	self->refs = NULL;
	Py_XDECREF(refs);
	Py_RETURN_NONE;
}

static PyObject *
batch_enter(struct batch *self, PyObject *unused)
{
	(void)unused;
	return Py_NewRef(self);
}

/* Leaving a with: cancelled unless final, waited for, released; the
 * batch's error is not raised (wait() inside the with raises it). */
static PyObject *
batch_exit(struct batch *self, PyObject *args)
{
	PyObject *r;

	(void)args;
	if (self->b == NULL ||
	    !rn_py_client_live(self->client, self->epoch))
		Py_RETURN_FALSE;
	if (!self->final && batch_cancel(self, NULL) == NULL)
		return NULL;
	r = batch_wait_for(self, -1);
	if (r == NULL) {
		if (!self->final)
			return NULL;
		PyErr_Clear();
	}
	Py_XDECREF(r);
	r = batch_release(self, NULL);
	if (r == NULL)
		return NULL;
	Py_DECREF(r);
	Py_RETURN_FALSE;
}

static PyObject *
batch_get_bytes_done(struct batch *self, void *closure)
{
	(void)closure;
	if (batch_refresh(self) != 0)
		return NULL;
	return PyLong_FromUnsignedLongLong(self->bytes_done);
}

static PyObject *
batch_get_notify_status(struct batch *self, void *closure)
{
	(void)closure;
	if (batch_refresh(self) != 0)
		return NULL;
	return PyLong_FromLong(self->notify_status);
}

static PyObject *
batch_get_done(struct batch *self, void *closure)
{
	(void)closure;
	if (batch_refresh(self) != 0)
		return NULL;
	return PyBool_FromLong(self->final);
}

static PyObject *
batch_get_kind(struct batch *self, void *closure)
{
	(void)closure;
	return rn_py_kind_name(self->kind);
}

static PyObject *
batch_get_cookie(struct batch *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->cookie);
}

static PyObject *
batch_get_length(struct batch *self, void *closure)
{
	(void)closure;
	return PyLong_FromUnsignedLongLong(self->length);
}

static PyObject *
batch_get_node(struct batch *self, void *closure)
{
	(void)closure;
	return Py_NewRef(self->node);
}

static PyObject *
batch_get_released(struct batch *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->b == NULL);
}

static PyObject *
batch_repr(struct batch *self)
{
	return PyUnicode_FromFormat("<rnotify.Batch %s to %U cookie=%llu "
				    "length=%llu %s>", kind_text(self->kind),
				    self->node,
				    (unsigned long long)self->cookie,
				    (unsigned long long)self->length,
				    self->b == NULL ? "released" :
				    self->final ? "final" : "in flight");
}

static PyMethodDef batch_methods[] = {
	{ "status", METHOD(batch_status), METH_NOARGS,
	  "status()\n--\n\nNon-blocking: -errno.EINPROGRESS, or final: 0 (every "
	  "byte placed, the notification posted after) or the first error as "
	  "a negative errno (EINVAL, ESTALE, EACCES, EFAULT, ENOTCONN, EPIPE, "
	  "ECANCELED)." },
	{ "wait", METHOD(batch_wait), METH_VARARGS | METH_KEYWORDS,
	  "wait(timeout=None)\n--\n\nBlock (without the GIL) until final: "
	  "None when done; OSError with the batch's errno when it failed; "
	  "TimeoutError when not final after timeout seconds." },
	{ "cancel", METHOD(batch_cancel), METH_NOARGS,
	  "cancel()\n--\n\nNon-blocking: stop posting; the batch ends "
	  "ECANCELED unless every chunk was posted." },
	{ "release", METHOD(batch_release), METH_NOARGS,
	  "release()\n--\n\nGive the batch slot back (final only: else "
	  "OSError EBUSY). Idempotent; also done when the Batch is freed." },
	{ "__enter__", METHOD(batch_enter), METH_NOARGS, NULL },
	{ "__exit__", METHOD(batch_exit), METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef batch_getset[] = {
	{ "bytes_done", (getter)batch_get_bytes_done, NULL,
	  "bytes known placed (exact once final)", NULL },
	{ "notify_status", (getter)batch_get_notify_status, NULL,
	  "the notification's fate, as rn_client_batch_status() says", NULL },
	{ "done", (getter)batch_get_done, NULL, "True once final", NULL },
	{ "kind", (getter)batch_get_kind, NULL, "'write' or 'read'", NULL },
	{ "cookie", (getter)batch_get_cookie, NULL, "its cookie", NULL },
	{ "length", (getter)batch_get_length, NULL,
	  "the bytes of all its entries", NULL },
	{ "node", (getter)batch_get_node, NULL, "the peer node", NULL },
	{ "released", (getter)batch_get_released, NULL,
	  "True once release()d", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject batch_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rnotify.Batch",
	.tp_basicsize = sizeof(struct batch),
	.tp_dealloc = (destructor)batch_dealloc,
	.tp_repr = (reprfunc)batch_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "A submitted READ or WRITE batch (Client.read(), write()). "
		  "A context manager: leaving the with cancels it unless "
		  "final, waits, and releases it.",
	.tp_methods = batch_methods,
	.tp_getset = batch_getset,
};

/* One entry (region, offset, remote, remote_offset, length) into e; the
 * objects go into refs. */
static int
entry_get(struct rn_py_client *self, PyObject *item, Py_ssize_t i,
	  struct rn_client_xfer_entry *e, PyObject *refs, PyObject **node)
{
	struct region *reg;
	struct remote *rem;
	uint64_t off, roff, len;

	if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 5) {
		PyErr_Format(PyExc_TypeError, "entry %zd: must be a tuple "
			     "(region, offset, remote, remote_offset, length)",
			     i);
		return -1;
	}
	reg = (struct region *)PyTuple_GET_ITEM(item, 0);
	rem = (struct remote *)PyTuple_GET_ITEM(item, 2);
	if (!PyObject_TypeCheck((PyObject *)reg, &region_type) ||
	    !PyObject_TypeCheck((PyObject *)rem, &remote_type)) {
		PyErr_Format(PyExc_TypeError, "entry %zd: (Region, int, "
			     "Remote, int, int), not (%s, _, %s, _, _)", i,
			     Py_TYPE(reg)->tp_name, Py_TYPE(rem)->tp_name);
		return -1;
	}
	if (reg->client != self || rem->client != self ||
	    reg->epoch != self->epoch || rem->epoch != self->epoch) {
		PyErr_Format(PyExc_ValueError, "entry %zd: its Region or "
			     "Remote is of another Client or attachment", i);
		return -1;
	}
	if (!u64_converter(PyTuple_GET_ITEM(item, 1), &off) ||
	    !u64_converter(PyTuple_GET_ITEM(item, 3), &roff) ||
	    !u64_converter(PyTuple_GET_ITEM(item, 4), &len))
		return -1;
	if (reg->addr + off < reg->addr || rem->info.addr + roff <
	    rem->info.addr) {
		PyErr_Format(PyExc_ValueError, "entry %zd: an offset past the "
			     "end of the address space", i);
		return -1;
	}
	*e = (struct rn_client_xfer_entry){
		.local = (void *)(uintptr_t)(reg->addr + off),
		.remote = rem->info.addr + roff,
		.length = len,
		.rem = rem->rem,
	};
	if (*node == NULL)
		*node = PyUnicode_DecodeFSDefault(rem->info.node);
	if (*node == NULL || PySet_Add(refs, (PyObject *)reg) != 0 ||
	    PySet_Add(refs, (PyObject *)rem) != 0)
		return -1;
	return 0;
}

/* notify=(agent, name, msg) or None. */
struct note_args {
	PyObject *agent;              /* bytes */
	Py_buffer name, msg;
	PyObject *name_tmp, *msg_tmp;
	bool have;
};

static int
note_get(PyObject *obj, struct note_args *n)
{
	memset(n, 0, sizeof(*n));
	if (obj == Py_None)
		return 0;
	if (!PyTuple_Check(obj) || PyTuple_GET_SIZE(obj) != 3) {
		PyErr_SetString(PyExc_TypeError, "notify must be None or "
				"(agent, name, msg)");
		return -1;
	}
	if (!PyUnicode_FSConverter(PyTuple_GET_ITEM(obj, 0), &n->agent))
		return -1;
	if (rn_py_payload_get(PyTuple_GET_ITEM(obj, 1), "name", &n->name,
			      &n->name_tmp) != 0) {
		Py_CLEAR(n->agent);
		return -1;
	}
	if (rn_py_payload_get(PyTuple_GET_ITEM(obj, 2), "msg", &n->msg,
			      &n->msg_tmp) != 0) {
		rn_py_payload_release(&n->name, n->name_tmp);
		Py_CLEAR(n->agent);
		return -1;
	}
	n->have = true;
	return 0;
}

static void
note_release(struct note_args *n)
{
	if (!n->have)
		return;
	rn_py_payload_release(&n->name, n->name_tmp);
	rn_py_payload_release(&n->msg, n->msg_tmp);
	Py_CLEAR(n->agent);
}

static PyObject *
transfer(struct rn_py_client *self, enum rn_client_xfer_kind kind,
	 PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "entries", "notify", "cookie", NULL };
	PyObject *list, *notify = Py_None, *seq = NULL, *refs = NULL;
	PyObject *node = NULL;
	struct rn_client_xfer_entry *entries = NULL;
	struct rn_client_xfer_notify cnote = { 0 };
	struct rn_client_batch *b = NULL;
	struct note_args note = { 0 };
	struct batch *batch = NULL;
	uint64_t cookie = 0, length = 0;
	Py_ssize_t n;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, kind == RN_CLIENT_READ ?
					 "O|OO&:read" : "O|OO&:write", kwlist,
					 &list, &notify,
					 rn_py_cookie_converter, &cookie))
		return NULL;
	seq = PySequence_Fast(list, "entries must be a sequence of (region, "
			      "offset, remote, remote_offset, length)");
	if (seq == NULL)
		return NULL;
	n = PySequence_Fast_GET_SIZE(seq);
	if (n > UINT_MAX) {
		PyErr_SetString(PyExc_ValueError, "too many entries");
		goto out;
	}
	entries = PyMem_New(struct rn_client_xfer_entry, n > 0 ? n : 1);
	refs = PySet_New(NULL);
	if (entries == NULL || refs == NULL) {
		PyErr_NoMemory();
		goto out;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		if (entry_get(self, PySequence_Fast_GET_ITEM(seq, i), i,
			      &entries[i], refs, &node) != 0)
			goto out;
		length += entries[i].length;
	}
	if (note_get(notify, &note) != 0)
		goto out;
	if (note.have)
		cnote = (struct rn_client_xfer_notify){
			.agent = PyBytes_AS_STRING(note.agent),
			.name = note.name.buf,
			.name_len = (uint32_t)note.name.len,
			.msg = note.msg.buf,
			.msg_len = (uint32_t)note.msg.len,
		};
	batch = PyObject_New(struct batch, &batch_type);
	if (batch == NULL)
		goto out;
	batch->client = (struct rn_py_client *)Py_NewRef(self);
	batch->b = NULL;
	batch->refs = NULL;
	batch->node = node != NULL ? node : PyUnicode_FromString("");
	node = NULL;
	batch->kind = kind;
	batch->cookie = cookie;
	batch->length = length;
	batch->final = false;
	batch->status = -EINPROGRESS;
	batch->bytes_done = 0;
	batch->notify_status = 0;
	if (batch->node == NULL || rn_py_client_lock(self) != 0)
		goto out;
	batch->epoch = self->epoch;
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_transfer(self->c, kind, entries, (unsigned int)n,
				note.have ? &cnote : NULL, cookie, &b);
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0) {
		rn_py_raise_errno(-rc, "%s of %zd entries (%llu bytes) to node "
				  "'%U'", kind_text(kind), n,
				  (unsigned long long)length, batch->node);
		goto out;
	}
	batch->b = b;
	batch->refs = refs;
	refs = NULL;
	note_release(&note);
	PyMem_Free(entries);
	Py_DECREF(seq);
	return (PyObject *)batch;
out:
	Py_XDECREF(batch);
	note_release(&note);
	Py_XDECREF(node);
	Py_XDECREF(refs);
	PyMem_Free(entries);
	Py_DECREF(seq);
	return NULL;
}

PyObject *
rn_py_client_write(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	return transfer(self, RN_CLIENT_WRITE, args, kwds);
}

PyObject *
rn_py_client_read(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	return transfer(self, RN_CLIENT_READ, args, kwds);
}

PyObject *
rn_py_client_xfer_max(struct rn_py_client *self, PyObject *args,
		      PyObject *kwds)
{
	static char *kwlist[] = { "n_remotes", "note_bytes", NULL };
	unsigned int n_remotes = 1, note_bytes = 0, max;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|II:xfer_max", kwlist,
					 &n_remotes, &note_bytes))
		return NULL;
	if (rn_py_client_lock(self) != 0)
		return NULL;
	max = rn_client_xfer_max(self->c, n_remotes, note_bytes);
	rn_py_client_unlock(self);
	return PyLong_FromUnsignedLong(max);
}

int
rn_py_xfer_init(PyObject *m)
{
	if (rn_py_module_add_type(m, "Buffer", &buffer_type) < 0 ||
	    rn_py_module_add_type(m, "Region", &region_type) < 0 ||
	    rn_py_module_add_type(m, "Remote", &remote_type) < 0 ||
	    rn_py_module_add_type(m, "Batch", &batch_type) < 0 ||
	    PyModule_AddIntConstant(m, "LOCAL_WRITE",
				    RN_CLIENT_LOCAL_WRITE) < 0 ||
	    PyModule_AddIntConstant(m, "REMOTE_WRITE",
				    RN_CLIENT_REMOTE_WRITE) < 0 ||
	    PyModule_AddIntConstant(m, "REMOTE_READ",
				    RN_CLIENT_REMOTE_READ) < 0 ||
	    PyModule_AddIntConstant(m, "ACCESS_ALL", ACCESS_ALL) < 0 ||
	    PyModule_AddIntConstant(m, "DESC_SIZE", RN_CLIENT_DESC_SIZE) < 0 ||
	    PyModule_AddIntConstant(m, "REG_MAX_PIECES",
				    RN_CLIENT_REG_MAX_PIECES) < 0 ||
	    PyModule_AddIntConstant(m, "MAX_REGIONS",
				    RN_CLIENT_MAX_REGIONS) < 0 ||
	    PyModule_AddIntConstant(m, "XFER_MAX_REMOTES",
				    RN_CLIENT_XFER_MAX_REMOTES) < 0 ||
	    PyModule_AddIntConstant(m, "PUBLISH_NAME_MAX",
				    RN_CLIENT_PUBLISH_NAME_MAX) < 0 ||
	    PyModule_AddStringConstant(m, "XFER_FAILED_NAME",
				       RN_CLIENT_XFER_FAILED_NAME) < 0)
		return -1;
	return 0;
}
