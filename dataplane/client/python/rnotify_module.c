/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rnotify._rnotify: librnotify (rn_client.h) for Python, as the class
 * Client and the result types Notification and Event. The package
 * rnotify (rnotify/__init__.py) re-exports them; docs/client.md
 * ("Python") is the reference.
 *
 * Threads: librnotify wants one thread at a time per client, so each
 * Client has a lock that every library call is made under. The GIL is
 * released around each call that can block (attach, detach, send, which
 * may ask the daemon to resolve a node, add_peer, remove_peer), while
 * waiting for the lock, and in wait(). wait() blocks in poll(2) on the
 * client fd without the lock (the library armed the fd in a
 * rn_client_wait(c, 0) under it), so that another thread can send or poll
 * meanwhile: the Python idiom of a thread that waits and one that sends
 * works on one Client. A detach() while threads wait wakes them (a
 * per-Client eventfd) and the last one out detaches.
 *
 * Objects of transfers (rnotify_xfer.c) let go of their librnotify
 * objects from their deallocs without waiting for the lock: they queue
 * it (rn_py_client_let_go()), and whoever holds the lock next does it.
 *
 * Names: node and agent names are str, encoded as file names are (UTF-8,
 * surrogateescape), so that any bytes a C client used come back; bytes
 * are taken too. A notification's name and msg are bytes (str is sent as
 * UTF-8). poll() copies them out: the library's buffers are only valid
 * until its next poll.
 */
#include "module_pvt.h"

#include <structmember.h>

#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* How many results one poll(), completions() or events() returns at most. */
#define PY_RESULTS_MAX RN_CLIENT_POLL_MAX

/* Names of enum rn_client_event_type, as Event.type. */
static const char *const event_names[] = {
	[RN_CLIENT_EVENT_PEER_DOWN] = "peer_down",
	[RN_CLIENT_EVENT_PEER_UP] = "peer_up",
	[RN_CLIENT_EVENT_PEER_RESTARTED] = "peer_restarted",
	[RN_CLIENT_EVENT_PEER_REMOVED] = "peer_removed",
	[RN_CLIENT_EVENT_REFUSED] = "refused",
};
#define N_EVENT_NAMES (sizeof(event_names) / sizeof(event_names[0]))

static PyTypeObject notification_type;
static PyTypeObject event_type;
static PyTypeObject completion_type;

static PyStructSequence_Field notification_fields[] = {
	{ "node", "the sending node (daemon)" },
	{ "agent", "the sending agent" },
	{ "name", "the notification's name (bytes)" },
	{ "msg", "the notification's message (bytes)" },
	{ NULL, NULL },
};

static PyStructSequence_Desc notification_desc = {
	"rnotify.Notification",
	"A notification delivered to this client's agent.",
	notification_fields, 4,
};

/* A tuple (cookie, status), as before transfers, with kind by name only. */
static PyStructSequence_Field completion_fields[] = {
	{ "cookie", "the send's or the batch's cookie" },
	{ "status", "0, or a negative errno" },
	{ "kind", "'send', or 'write' or 'read' for a batch that became "
		  "final" },
	{ NULL, NULL },
};

static PyStructSequence_Desc completion_desc = {
	"rnotify.Completion",
	"The report of a send, or of a batch that became final: (cookie, "
	"status) as a tuple, and .kind.",
	completion_fields, 2,
};

static PyStructSequence_Field event_fields[] = {
	{ "type", "'peer_down', 'peer_up', 'peer_restarted', 'peer_removed' "
		  "or 'refused'" },
	{ "node", "the peer node the event is about" },
	{ "agent", "refused: the agent refused at node; else None" },
	{ "cookie", "refused: the cookie of the send; else 0" },
	{ "status", "refused: -ENOENT (no such agent attached there) or "
		    "-ENOBUFS (its client holds [client] hold_max frames it "
		    "has not taken: send again later); else a negative "
		    "errno, or 0" },
	{ NULL, NULL },
};

static PyStructSequence_Desc event_desc = {
	"rnotify.Event",
	"An event of the daemon: a peer node went down, came back, restarted "
	"or was removed, or a notification was refused.",
	event_fields, 5,
};

/* Raise OSError(err, "strerror: what"): Python picks the subclass that
 * err maps to (BlockingIOError for EAGAIN, FileNotFoundError for
 * ENOENT...). Returns NULL. */
PyObject *
rn_py_raise_errno(int err, const char *format, ...)
{
	PyObject *what, *text, *args;
	va_list ap;

	va_start(ap, format);
	what = PyUnicode_FromFormatV(format, ap);
	va_end(ap);
	if (what == NULL)
		return NULL;
	text = PyUnicode_FromFormat("%s: %U", strerror(err), what);
	Py_DECREF(what);
	if (text == NULL)
		return NULL;
	args = Py_BuildValue("(iN)", err, text);
	if (args != NULL) {
		PyErr_SetObject(PyExc_OSError, args);
		Py_DECREF(args);
	}
	return NULL;
}

/* O& converter: str, bytes or os.PathLike, or None (*out = NULL). */
static int
name_or_none(PyObject *obj, void *out)
{
	if (obj == Py_None) {
		*(PyObject **)out = NULL;
		return 1;
	}
	return PyUnicode_FSConverter(obj, out);
}

/* O& converter: an int of 0..2^64-1. */
int
rn_py_cookie_converter(PyObject *obj, void *out)
{
	unsigned long long v;

	if (!PyLong_Check(obj)) {
		PyErr_Format(PyExc_TypeError, "cookie must be int, not %s",
			     Py_TYPE(obj)->tp_name);
		return 0;
	}
	v = PyLong_AsUnsignedLongLong(obj);
	if (v == (unsigned long long)-1 && PyErr_Occurred())
		return 0;
	*(uint64_t *)out = v;
	return 1;
}

/* A name or msg: a bytes-like object, or str (as UTF-8). *tmp holds the
 * encoded str, if any; release with rn_py_payload_release(). */
int
rn_py_payload_get(PyObject *obj, const char *what, Py_buffer *view,
		  PyObject **tmp)
{
	*tmp = NULL;
	if (PyUnicode_Check(obj)) {
		*tmp = PyUnicode_AsUTF8String(obj);
		if (*tmp == NULL)
			return -1;
		obj = *tmp;
	}
	if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) != 0) {
		Py_CLEAR(*tmp);
		PyErr_Format(PyExc_TypeError,
			     "%s must be bytes-like or str", what);
		return -1;
	}
	if ((size_t)view->len > UINT32_MAX) {
		PyBuffer_Release(view);
		Py_CLEAR(*tmp);
		rn_py_raise_errno(EMSGSIZE, "%s of %zd bytes", what, view->len);
		return -1;
	}
	return 0;
}

void
rn_py_payload_release(Py_buffer *view, PyObject *tmp)
{
	PyBuffer_Release(view);
	Py_XDECREF(tmp);
}

/* Take the lock, letting other threads run while it is held elsewhere. */
static void
lock_raw(struct rn_py_client *self)
{
	if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
		Py_BEGIN_ALLOW_THREADS
		PyThread_acquire_lock(self->lock, WAIT_LOCK);
		Py_END_ALLOW_THREADS
	}
}

bool
rn_py_client_live(const struct rn_py_client *self, uint64_t epoch)
{
	return self->c != NULL && !self->detaching && self->epoch == epoch;
}

/* Keep ref (stolen) until the lock is released: dropping it may free an
 * object whose dealloc wants the lock. */
static void
drop_later(struct rn_py_client *self, PyObject *ref)
{
	if (ref == NULL)
		return;
	if (self->drop == NULL)
		self->drop = PyList_New(0);
	/* Out of memory: the reference leaks rather than deadlock. */
	if (self->drop != NULL && PyList_Append(self->drop, ref) == 0)
		Py_DECREF(ref);
	else
		PyErr_Clear();
}

/* With the lock held and c attached: do the queued lets-go. A batch not
 * yet final is cancelled and stays queued until it is. The array may grow
 * meanwhile (a dealloc that queues): it is read again each round. */
static void
pending_run(struct rn_py_client *self)
{
	Py_ssize_t i = 0;

	while (i < self->n_pending) {
		struct rn_py_pending job = self->pending[i];
		const struct rn_client_batch *b = job.p;

		switch (job.op) {
		case RN_PY_PENDING_DEREG:
			Py_BEGIN_ALLOW_THREADS
			(void)rn_client_dereg(self->c, job.p);
			Py_END_ALLOW_THREADS
			break;
		case RN_PY_PENDING_FORGET:
			rn_client_forget(self->c, job.p);
			break;
		case RN_PY_PENDING_BATCH:
			if (rn_client_batch_status(b, NULL, NULL) ==
			    -EINPROGRESS) {
				rn_client_batch_cancel(job.p);
				i++;
				continue;
			}
			(void)rn_client_batch_release(self->c, job.p);
			break;
		}
		self->pending[i] = self->pending[--self->n_pending];
		drop_later(self, job.obj);
	}
}

/* Detached: the C objects went with the client; only the references are
 * left to drop. */
static void
pending_forget(struct rn_py_client *self)
{
	while (self->n_pending > 0)
		drop_later(self, self->pending[--self->n_pending].obj);
}

void
rn_py_client_let_go(struct rn_py_client *self, enum rn_py_pending_op op,
		    void *p, PyObject *obj)
{
	PyObject *type, *value, *tb;

	/* From a dealloc, maybe while an exception propagates: keep it. */
	PyErr_Fetch(&type, &value, &tb);
	if (self->n_pending == self->cap_pending) {
		Py_ssize_t cap = self->cap_pending ? self->cap_pending * 2 : 8;
		struct rn_py_pending *more = PyMem_Realloc(
			self->pending, (size_t)cap * sizeof(*more));

		if (more == NULL) {
			/* The C object leaks (the client frees it at detach). */
			Py_XDECREF(obj);
			PyErr_Restore(type, value, tb);
			return;
		}
		self->pending = more;
		self->cap_pending = cap;
	}
	self->pending[self->n_pending++] = (struct rn_py_pending){
		.op = op, .p = p, .obj = obj };
	if (PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
		if (self->c != NULL && !self->detaching)
			pending_run(self);
		rn_py_client_unlock(self);
	}
	PyErr_Restore(type, value, tb);
}

/* Take the client's lock: 0, or -1 with ValueError when the client is
 * detached (or being detached). */
int
rn_py_client_lock(struct rn_py_client *self)
{
	if (self->lock == NULL) {
		PyErr_SetString(PyExc_ValueError, "client is not attached");
		return -1;
	}
	lock_raw(self);
	if (self->c == NULL || self->detaching) {
		rn_py_client_unlock(self);
		PyErr_SetString(PyExc_ValueError, "client is detached");
		return -1;
	}
	if (self->n_pending > 0)
		pending_run(self);
	return 0;
}

void
rn_py_client_unlock(struct rn_py_client *self)
{
	PyObject *drop = self->drop;

	self->drop = NULL;
	PyThread_release_lock(self->lock);
	if (drop != NULL) {
		PyObject *type, *value, *tb;

		/* Deallocs run here: keep the caller's exception. */
		PyErr_Fetch(&type, &value, &tb);
		Py_DECREF(drop);
		PyErr_Restore(type, value, tb);
	}
}

/* With the lock held: take c away (unless threads still wait: then the
 * last of them does) and unlock; detach it without the GIL. */
static void
client_detach_unlock(struct rn_py_client *self)
{
	struct rn_client *c = NULL;

	if (self->waiters == 0) {
		uint64_t woken;

		c = self->c;
		self->c = NULL;
		self->detaching = false;
		pending_forget(self);
		/* Spent: a Client attached again must not see it. */
		if (read(self->stop_fd, &woken, sizeof(woken)) < 0) {
			/* EAGAIN: nobody was woken. */
		}
	}
	rn_py_client_unlock(self);
	if (c != NULL) {
		Py_BEGIN_ALLOW_THREADS
		rn_client_detach(c);
		Py_END_ALLOW_THREADS
	}
}

static PyObject *
client_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
	struct rn_py_client *self = (struct rn_py_client *)type->tp_alloc(type, 0);

	(void)args;
	(void)kwds;
	if (self == NULL)
		return NULL;
	self->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (self->stop_fd < 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		Py_DECREF(self);
		return NULL;
	}
	self->lock = PyThread_allocate_lock();
	if (self->lock == NULL) {
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	return (PyObject *)self;
}

static int
client_init(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "agent", "socket", NULL };
	PyObject *agent = NULL, *sock = NULL;
	const char *path, *why;
	struct rn_client *c = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&|O&:Client", kwlist,
					 PyUnicode_FSConverter, &agent,
					 name_or_none, &sock))
		goto fail_args;
	if (self->c != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "client is attached");
		goto fail_args;
	}
	path = sock != NULL ? PyBytes_AS_STRING(sock) : NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_attach(path, PyBytes_AS_STRING(agent), &c);
	Py_END_ALLOW_THREADS
	if (rc < 0) {
		if (path == NULL)
			path = getenv(RN_CLIENT_SOCKET_ENV);
		why = path != NULL ? path : "none given, $" RN_CLIENT_SOCKET_ENV
					    " unset";
		rn_py_raise_errno(-rc, "attach as agent '%s' (socket %s)",
			    PyBytes_AS_STRING(agent), why);
		goto fail_args;
	}
	Py_XSETREF(self->agent, PyUnicode_DecodeFSDefault(
					PyBytes_AS_STRING(agent)));
	Py_XSETREF(self->node, PyUnicode_DecodeFSDefault(rn_client_node(c)));
	self->c = c;
	self->epoch++;
	Py_DECREF(agent);
	Py_XDECREF(sock);
	if (self->agent == NULL || self->node == NULL)
		return -1;
	return 0;

fail_args:
	Py_XDECREF(agent);
	Py_XDECREF(sock);
	return -1;
}

/* Detach, whatever state the daemon is in; threads in wait() are woken
 * and the last of them detaches. */
static void
client_detach_now(struct rn_py_client *self)
{
	if (self->lock == NULL)
		return;
	lock_raw(self);
	if (self->c != NULL && self->waiters > 0) {
		uint64_t one = 1;

		self->detaching = true;
		if (write(self->stop_fd, &one, sizeof(one)) < 0) {
			/* The counter is at its most: they are woken already. */
		}
	}
	client_detach_unlock(self);
}

static void
client_dealloc(struct rn_py_client *self)
{
	client_detach_now(self);
	PyMem_Free(self->pending);
	if (self->lock != NULL)
		PyThread_free_lock(self->lock);
	if (self->stop_fd >= 0)
		close(self->stop_fd);
	Py_XDECREF(self->agent);
	Py_XDECREF(self->node);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
client_detach(struct rn_py_client *self, PyObject *unused)
{
	(void)unused;
	client_detach_now(self);
	Py_RETURN_NONE;
}

static PyObject *
client_enter(struct rn_py_client *self, PyObject *unused)
{
	(void)unused;
	if (self->c == NULL) {
		PyErr_SetString(PyExc_ValueError, "client is detached");
		return NULL;
	}
	Py_INCREF(self);
	return (PyObject *)self;
}

static PyObject *
client_exit(struct rn_py_client *self, PyObject *args)
{
	(void)args;
	client_detach_now(self);
	Py_RETURN_FALSE;
}

static PyObject *
client_send(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "node", "agent", "name", "msg", "cookie",
				  "want_completion", NULL };
	PyObject *node = NULL, *agent = NULL, *name_obj, *msg_obj;
	PyObject *name_tmp = NULL, *msg_tmp = NULL, *ret = NULL;
	Py_buffer name, msg;
	uint64_t cookie = 0;
	int want = 0, rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O&OO|O&p:send", kwlist,
					 PyUnicode_FSConverter, &node,
					 PyUnicode_FSConverter, &agent,
					 &name_obj, &msg_obj,
					 rn_py_cookie_converter, &cookie, &want))
		goto out_names;
	if (rn_py_payload_get(name_obj, "name", &name, &name_tmp) != 0)
		goto out_names;
	if (rn_py_payload_get(msg_obj, "msg", &msg, &msg_tmp) != 0)
		goto out_name;
	if (rn_py_client_lock(self) != 0)
		goto out_msg;
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_send(self->c, PyBytes_AS_STRING(node),
			    PyBytes_AS_STRING(agent), name.buf,
			    (uint32_t)name.len, msg.buf, (uint32_t)msg.len,
			    cookie, want ? RN_CLIENT_WANT_COMPLETION : 0);
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0)
		rn_py_raise_errno(-rc, "send to agent '%s' on node '%s'",
			    PyBytes_AS_STRING(agent), PyBytes_AS_STRING(node));
	else
		ret = Py_NewRef(Py_None);
out_msg:
	rn_py_payload_release(&msg, msg_tmp);
out_name:
	rn_py_payload_release(&name, name_tmp);
out_names:
	Py_XDECREF(node);
	Py_XDECREF(agent);
	return ret;
}

/* The max argument of poll(), completions() and events(). */
static int
parse_max(PyObject *args, PyObject *kwds, const char *format,
	  unsigned int *max)
{
	static char *kwlist[] = { "max", NULL };
	int n = PY_RESULTS_MAX;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, format, kwlist, &n))
		return -1;
	if (n < 1 || n > (int)PY_RESULTS_MAX) {
		PyErr_Format(PyExc_ValueError, "max must be 1 to %u, not %d",
			     PY_RESULTS_MAX, n);
		return -1;
	}
	*max = (unsigned int)n;
	return 0;
}

static PyObject *
text_or_none(const char *s)
{
	if (s[0] == '\0')
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(s);
}

/* A struct sequence of type from v[0..n), which it takes; NULL (with the
 * error) when it or any of v is NULL. */
static PyObject *
struct_seq_of(PyTypeObject *type, PyObject **v, int n)
{
	PyObject *t = PyStructSequence_New(type);
	bool ok = t != NULL;

	for (int i = 0; i < n; i++) {
		ok = ok && v[i] != NULL;
		if (t != NULL)
			PyStructSequence_SET_ITEM(t, i, v[i]);
		else
			Py_XDECREF(v[i]);
	}
	if (!ok)
		Py_CLEAR(t);
	return t;
}

static PyObject *
notification_new(const struct rn_client_notification *n)
{
	PyObject *v[4] = {
		PyUnicode_DecodeFSDefault(n->node),
		PyUnicode_DecodeFSDefault(n->agent),
		PyBytes_FromStringAndSize((const char *)n->name, n->name_len),
		PyBytes_FromStringAndSize((const char *)n->msg, n->msg_len),
	};

	return struct_seq_of(&notification_type, v, 4);
}

/* Fill a list from n results, made by make(out[i]); NULL on failure. */
static PyObject *
list_of(const void *out, size_t size, int n, PyObject *(*make)(const void *))
{
	PyObject *list = PyList_New(n);

	for (int i = 0; list != NULL && i < n; i++) {
		PyObject *item = make((const char *)out + (size_t)i * size);

		if (item == NULL)
			Py_CLEAR(list);
		else
			PyList_SET_ITEM(list, i, item);
	}
	return list;
}

static PyObject *
make_notification(const void *p)
{
	return notification_new(p);
}

static PyObject *
make_completion(const void *p)
{
	const struct rn_client_completion *c = p;
	PyObject *v[3] = {
		PyLong_FromUnsignedLongLong(c->cookie),
		PyLong_FromLong(c->status),
		rn_py_kind_name(c->kind),
	};

	return struct_seq_of(&completion_type, v, 3);
}

static PyObject *
make_event(const void *p)
{
	const struct rn_client_event *e = p;
	PyObject *v[5];

	if (e->type < N_EVENT_NAMES && event_names[e->type] != NULL)
		v[0] = PyUnicode_FromString(event_names[e->type]);
	else
		v[0] = PyUnicode_FromFormat("type_%u", (unsigned int)e->type);
	v[1] = text_or_none(e->node);
	v[2] = text_or_none(e->agent);
	v[3] = PyLong_FromUnsignedLongLong(e->cookie);
	v[4] = PyLong_FromLong(e->status);
	return struct_seq_of(&event_type, v, 5);
}

static PyObject *
client_poll(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	struct rn_client_notification out[PY_RESULTS_MAX];
	unsigned int max;
	PyObject *list;
	int n;

	if (parse_max(args, kwds, "|i:poll", &max) != 0 ||
	    rn_py_client_lock(self) != 0)
		return NULL;
	n = rn_client_poll(self->c, out, max);
	/* Copied before the lock goes: the next poll frees the buffers. */
	list = n < 0 ? rn_py_raise_errno(-n, "poll as agent '%U'", self->agent) :
		       list_of(out, sizeof(out[0]), n, make_notification);
	rn_py_client_unlock(self);
	return list;
}

static PyObject *
client_completions(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	struct rn_client_completion out[PY_RESULTS_MAX];
	unsigned int max;
	int n;

	if (parse_max(args, kwds, "|i:completions", &max) != 0 ||
	    rn_py_client_lock(self) != 0)
		return NULL;
	n = rn_client_completions(self->c, out, max);
	rn_py_client_unlock(self);
	if (n < 0)
		return rn_py_raise_errno(-n, "completions of agent '%U'",
				   self->agent);
	return list_of(out, sizeof(out[0]), n, make_completion);
}

static PyObject *
client_events(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	struct rn_client_event out[PY_RESULTS_MAX];
	unsigned int max;
	int n;

	if (parse_max(args, kwds, "|i:events", &max) != 0 ||
	    rn_py_client_lock(self) != 0)
		return NULL;
	n = rn_client_events(self->c, out, max);
	rn_py_client_unlock(self);
	if (n < 0)
		return rn_py_raise_errno(-n, "events of agent '%U'", self->agent);
	return list_of(out, sizeof(out[0]), n, make_event);
}

static PyObject *
client_fileno(struct rn_py_client *self, PyObject *unused)
{
	int fd;

	(void)unused;
	if (rn_py_client_lock(self) != 0)
		return NULL;
	fd = rn_client_fd(self->c);
	rn_py_client_unlock(self);
	return PyLong_FromLong(fd);
}

double
rn_py_monotonic_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int
rn_py_timeout_parse(PyObject *args, PyObject *kwds, double *seconds)
{
	static char *kwlist[] = { "timeout", NULL };
	PyObject *timeout = Py_None;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:wait", kwlist,
					 &timeout))
		return -1;
	*seconds = -1;
	if (timeout == Py_None)
		return 0;
	*seconds = PyFloat_AsDouble(timeout);
	if (*seconds == -1 && PyErr_Occurred())
		return -1;
	/* Written so that NaN fails too. */
	if (!(*seconds >= 0) || *seconds > INT_MAX / 1000) {
		PyErr_SetString(PyExc_ValueError,
				"timeout must be None or 0 to 2^31 ms");
		return -1;
	}
	return 0;
}

/* How long wait() lets librnotify wait, under the lock, after poll(2) woke
 * it for nothing. */
#define SPURIOUS_WAIT_MS 10

/* Milliseconds left until deadline (seconds < 0: none, -1). */
static int
ms_left(double seconds, double deadline)
{
	double left;

	if (seconds < 0)
		return -1;
	left = deadline - rn_py_monotonic_s();
	return left > 0 ? (int)ceil(left * 1000) : 0;
}

/* In wait(): poll(2) the client fd and the stop eventfd without the
 * client's lock or the GIL. Returns poll's result, errno in *err. */
static int
wait_unlocked(struct rn_py_client *self, int fd, int ms, int *err)
{
	struct pollfd p[2] = {
		{ .fd = fd, .events = POLLIN },
		{ .fd = self->stop_fd, .events = POLLIN },
	};
	int rc;

	self->waiters++;
	rn_py_client_unlock(self);
	Py_BEGIN_ALLOW_THREADS
	rc = poll(p, 2, ms);
	*err = errno;
	Py_END_ALLOW_THREADS
	lock_raw(self);
	self->waiters--;
	return rc;
}

/*
 * wait(timeout=None): True when something waits to be taken, False on
 * timeout. The library looks (and arms the fd) under the lock; the
 * blocking is wait_unlocked()'s. A signal (Ctrl-C) interrupts it with its
 * exception; a detach() from another thread with ValueError.
 */
static PyObject *
client_wait(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	double seconds, deadline = 0;
	int rc = 0, ms, err = 0;
	bool woken = false;

	if (rn_py_timeout_parse(args, kwds, &seconds) != 0)
		return NULL;
	if (seconds >= 0)
		deadline = rn_py_monotonic_s() + seconds;
	if (rn_py_client_lock(self) != 0)
		return NULL;
	for (;;) {
		/* After a wake-up for nothing, the library's own wait (a short
		 * one, under the lock) drains the fd: else it would stay
		 * readable and poll(2) would spin. */
		int look = woken ? SPURIOUS_WAIT_MS : 0, prc;

		ms = ms_left(seconds, deadline);
		Py_BEGIN_ALLOW_THREADS
		rc = rn_client_wait(self->c, ms >= 0 && ms < look ? ms : look);
		Py_END_ALLOW_THREADS
		ms = ms_left(seconds, deadline);
		if (rc != 0 || ms == 0)
			break;
		prc = wait_unlocked(self, rn_client_fd(self->c), ms, &err);
		woken = prc > 0;
		if (self->detaching || self->c == NULL) {
			client_detach_unlock(self);
			PyErr_SetString(PyExc_ValueError,
					"client was detached while waiting");
			return NULL;
		}
		if (prc < 0 && err == EINTR && PyErr_CheckSignals() != 0) {
			rn_py_client_unlock(self);
			return NULL;
		}
		if (prc < 0 && err != EINTR) {
			rn_py_client_unlock(self);
			return rn_py_raise_errno(err, "wait as agent '%U'",
					   self->agent);
		}
	}
	rn_py_client_unlock(self);
	if (rc < 0)
		return rn_py_raise_errno(-rc, "wait as agent '%U'", self->agent);
	return PyBool_FromLong(rc > 0);
}

static PyObject *
client_add_peer(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "name", "address", "port", NULL };
	PyObject *name = NULL, *address = NULL, *ret = NULL;
	int port, rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&O&i:add_peer", kwlist,
					 PyUnicode_FSConverter, &name,
					 PyUnicode_FSConverter, &address,
					 &port))
		goto out;
	if (port < 0 || port > UINT16_MAX) {
		PyErr_Format(PyExc_ValueError, "port must be 1 to 65535, "
			     "not %d", port);
		goto out;
	}
	if (rn_py_client_lock(self) != 0)
		goto out;
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_peer_add(self->c, PyBytes_AS_STRING(name),
				PyBytes_AS_STRING(address), (uint16_t)port);
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0)
		rn_py_raise_errno(-rc, "add peer '%s' at %s port %d",
			    PyBytes_AS_STRING(name),
			    PyBytes_AS_STRING(address), port);
	else
		ret = Py_NewRef(Py_None);
out:
	Py_XDECREF(name);
	Py_XDECREF(address);
	return ret;
}

static PyObject *
client_remove_peer(struct rn_py_client *self, PyObject *args, PyObject *kwds)
{
	static char *kwlist[] = { "name", NULL };
	PyObject *name = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kwds, "O&:remove_peer", kwlist,
					 PyUnicode_FSConverter, &name))
		return NULL;
	if (rn_py_client_lock(self) != 0) {
		Py_DECREF(name);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = rn_client_peer_remove(self->c, PyBytes_AS_STRING(name));
	Py_END_ALLOW_THREADS
	rn_py_client_unlock(self);
	if (rc < 0) {
		rn_py_raise_errno(-rc, "remove peer '%s'", PyBytes_AS_STRING(name));
		Py_DECREF(name);
		return NULL;
	}
	Py_DECREF(name);
	Py_RETURN_NONE;
}

static PyObject *
client_get_node(struct rn_py_client *self, void *closure)
{
	(void)closure;
	if (self->node == NULL)
		Py_RETURN_NONE;
	return Py_NewRef(self->node);
}

static PyObject *
client_get_agent(struct rn_py_client *self, void *closure)
{
	(void)closure;
	if (self->agent == NULL)
		Py_RETURN_NONE;
	return Py_NewRef(self->agent);
}

static PyObject *
client_get_attached(struct rn_py_client *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->c != NULL);
}

static PyObject *
client_repr(struct rn_py_client *self)
{
	if (self->agent == NULL)
		return PyUnicode_FromString("<rnotify.Client, not attached>");
	return PyUnicode_FromFormat("<rnotify.Client agent=%R node=%R%s>",
				    self->agent, self->node,
				    self->c == NULL ? ", detached" : "");
}


static PyMethodDef client_methods[] = {
	{ "detach", METHOD(client_detach), METH_NOARGS,
	  "detach()\n--\n\nDetach from the daemon; deliveries not yet polled "
	  "are lost. Idempotent." },
	{ "__enter__", METHOD(client_enter), METH_NOARGS, NULL },
	{ "__exit__", METHOD(client_exit), METH_VARARGS, NULL },
	{ "send", METHOD(client_send), METH_VARARGS | METH_KEYWORDS,
	  "send(node, agent, name, msg, cookie=0, want_completion=False)\n--\n\n"
	  "Queue (name, msg) for agent on node. Raises OSError: "
	  "BlockingIOError (EAGAIN) when the ring is full or the endpoint is "
	  "still connecting (try again), ENOENT unknown node, ENOTCONN "
	  "endpoint down or daemon gone, EMSGSIZE too big, ENOTSUP no native "
	  "channel, EINVAL bad names. Errors after queueing, and with "
	  "want_completion the send's success, come from completions()." },
	{ "poll", METHOD(client_poll), METH_VARARGS | METH_KEYWORDS,
	  "poll(max=64)\n--\n\nThe notifications delivered to this agent, up "
	  "to max, as a list of Notification(node, agent, name, msg); in send "
	  "order per sending agent." },
	{ "completions", METHOD(client_completions),
	  METH_VARARGS | METH_KEYWORDS,
	  "completions(max=64)\n--\n\nReports of sends and of batches that "
	  "became final, as a list of Completion, a tuple (cookie, status) "
	  "with .kind ('send', 'write', 'read'): status 0 (acknowledged; the "
	  "batch done), or a negative errno." },
	{ "alloc", METHOD(rn_py_client_alloc), METH_VARARGS | METH_KEYWORDS,
	  "alloc(length)\n--\n\nA Buffer of length bytes the daemon can map "
	  "(a memfd, on hugepages when length is a multiple of 2 MiB and "
	  "some are free), zeroed, for register()." },
	{ "register", METHOD(rn_py_client_register),
	  METH_VARARGS | METH_KEYWORDS,
	  "register(buf, access=ACCESS_ALL)\n--\n\nRegister buf (a Buffer of "
	  "alloc(), or a bytes-like object over part of one) with the "
	  "daemon's device: a Region. Memory not of alloc() raises OSError "
	  "EFAULT." },
	{ "register_fd", METHOD(rn_py_client_register_fd),
	  METH_VARARGS | METH_KEYWORDS,
	  "register_fd(address, pieces, access=ACCESS_ALL, dmabuf=False)\n--\n"
	  "\nRegister memory this process mapped contiguously from address, "
	  "made of pieces [(fd, offset, length), ...] (memfd, hugetlbfs, or "
	  "dma-buf with dmabuf=True): a Region. The fds stay the caller's." },
	{ "fetch", METHOD(rn_py_client_fetch), METH_VARARGS | METH_KEYWORDS,
	  "fetch(node, name, timeout=5.0)\n--\n\nThe descriptor (bytes) node's "
	  "daemon publishes as name; waits up to timeout seconds." },
	{ "import_desc", METHOD(rn_py_client_import_desc),
	  METH_VARARGS | METH_KEYWORDS,
	  "import_desc(desc)\n--\n\nA Remote: the peer's region a descriptor "
	  "(Region.export(), fetch()) names." },
	{ "write", METHOD(rn_py_client_write), METH_VARARGS | METH_KEYWORDS,
	  "write(entries, notify=None, cookie=0)\n--\n\nSubmit a WRITE batch: "
	  "entries [(region, offset, remote, remote_offset, length), ...], "
	  "all remotes of one node; notify=(agent, name, msg) goes to agent "
	  "there once every byte is placed. Returns a Batch; never blocks." },
	{ "read", METHOD(rn_py_client_read), METH_VARARGS | METH_KEYWORDS,
	  "read(entries, notify=None, cookie=0)\n--\n\nSubmit a READ batch "
	  "(remote -> region), as write()." },
	{ "xfer_max", METHOD(rn_py_client_xfer_max),
	  METH_VARARGS | METH_KEYWORDS,
	  "xfer_max(n_remotes=1, note_bytes=0)\n--\n\nEntries one batch holds "
	  "at most with n_remotes remotes and a notification of note_bytes "
	  "(agent + name + msg)." },
	{ "events", METHOD(client_events), METH_VARARGS | METH_KEYWORDS,
	  "events(max=64)\n--\n\nDaemon events, as a list of Event(type, node, "
	  "agent, cookie, status)." },
	{ "fileno", METHOD(client_fileno), METH_NOARGS,
	  "fileno()\n--\n\nA descriptor readable while deliveries, completions "
	  "or events wait, and when the daemon is gone (for select, epoll, "
	  "asyncio's add_reader)." },
	{ "wait", METHOD(client_wait), METH_VARARGS | METH_KEYWORDS,
	  "wait(timeout=None)\n--\n\nBlock (without the GIL; other threads "
	  "may send and poll meanwhile) until something waits to be taken: "
	  "True; False after timeout seconds." },
	{ "add_peer", METHOD(client_add_peer), METH_VARARGS | METH_KEYWORDS,
	  "add_peer(name, address, port)\n--\n\nAdd a peer node to the daemon "
	  "at run time. Raises OSError: EEXIST, EINVAL, ENOSPC, EACCES." },
	{ "remove_peer", METHOD(client_remove_peer),
	  METH_VARARGS | METH_KEYWORDS,
	  "remove_peer(name)\n--\n\nRemove a peer node: its endpoint closes. "
	  "Raises FileNotFoundError (ENOENT) when there is none." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef client_getset[] = {
	{ "node", (getter)client_get_node, NULL,
	  "the name of the node (daemon) attached to", NULL },
	{ "agent", (getter)client_get_agent, NULL,
	  "the agent name this client attached as", NULL },
	{ "attached", (getter)client_get_attached, NULL,
	  "False once detached", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject client_type = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "rnotify.Client",
	.tp_basicsize = sizeof(struct rn_py_client),
	.tp_dealloc = (destructor)client_dealloc,
	.tp_repr = (reprfunc)client_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.tp_doc = "Client(agent, socket=None)\n--\n\n"
		  "A client of rnotifyd attached as agent over the daemon's "
		  "socket (None: $RNOTIFY_SOCKET). Raises OSError: "
		  "FileNotFoundError no socket, ConnectionRefusedError no "
		  "daemon, PermissionError refused, EADDRINUSE agent taken, "
		  "EUSERS too many clients, EPROTO other protocol.",
	.tp_methods = client_methods,
	.tp_getset = client_getset,
	.tp_init = (initproc)client_init,
	.tp_new = client_new,
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "rnotify._rnotify",
	.m_doc = "librnotify for Python: see the package rnotify.",
	.m_size = -1,
};

int
rn_py_module_add_type(PyObject *m, const char *name, PyTypeObject *type)
{
	if (PyType_Ready(type) < 0)
		return -1;
	return PyModule_AddObjectRef(m, name, (PyObject *)type);
}

/* As rn_py_module_add_type(), for a struct sequence type of desc. It is
 * built on the first import only: a type already built is not built
 * again. */
static int
module_add_struct_seq(PyObject *m, const char *name, PyTypeObject *type,
		      PyStructSequence_Desc *desc)
{
	if (type->tp_name == NULL &&
	    PyStructSequence_InitType2(type, desc) < 0)
		return -1;
	return PyModule_AddObjectRef(m, name, (PyObject *)type);
}

PyMODINIT_FUNC PyInit__rnotify(void);

PyMODINIT_FUNC
PyInit__rnotify(void)
{
	PyObject *m, *names;

	m = PyModule_Create(&module_def);
	if (m == NULL)
		return NULL;
	names = PyTuple_New(N_EVENT_NAMES - 1);
	for (size_t i = 1; names != NULL && i < N_EVENT_NAMES; i++)
		PyTuple_SET_ITEM(names, i - 1,
				 PyUnicode_FromString(event_names[i]));
	if (names == NULL ||
	    rn_py_module_add_type(m, "Client", &client_type) < 0 ||
	    module_add_struct_seq(m, "Notification", &notification_type,
				  &notification_desc) < 0 ||
	    module_add_struct_seq(m, "Event", &event_type, &event_desc) < 0 ||
	    module_add_struct_seq(m, "Completion", &completion_type,
				  &completion_desc) < 0 ||
	    rn_py_xfer_init(m) < 0 ||
	    PyModule_AddObjectRef(m, "EVENT_TYPES", names) < 0 ||
	    PyModule_AddIntConstant(m, "POLL_MAX", RN_CLIENT_POLL_MAX) < 0 ||
	    PyModule_AddIntConstant(m, "AGENT_MAX", RN_CLIENT_AGENT_MAX) < 0 ||
	    PyModule_AddIntConstant(m, "NODE_MAX", RN_CLIENT_NODE_MAX) < 0 ||
	    PyModule_AddStringConstant(m, "SOCKET_ENV",
				       RN_CLIENT_SOCKET_ENV) < 0) {
		Py_XDECREF(names);
		Py_DECREF(m);
		return NULL;
	}
	Py_DECREF(names);
	return m;
}
