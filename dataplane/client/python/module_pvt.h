/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PY_MODULE_PVT_H
#define RN_PY_MODULE_PVT_H

/*
 * What the two files of rnotify._rnotify share: rnotify_module.c (the
 * Client, its notifications and events) and rnotify_xfer.c (transfers:
 * Buffer, Region, Remote, Batch, and the Client's calls that make them).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include <stdbool.h>
#include <stdint.h>

#include "rn_client.h"

/*
 * A librnotify object to let go of, queued by a dealloc (which must not
 * wait for the client's lock: its own thread may hold it) and done by the
 * next thread that holds the lock (rn_py_client_lock()). obj is a
 * reference dropped once it is done (after the lock is released): what
 * must outlive the C object (a region's memory, a batch's regions and
 * remotes).
 */
enum rn_py_pending_op {
	RN_PY_PENDING_DEREG = 1,  /* rn_client_dereg(p) */
	RN_PY_PENDING_FORGET,     /* rn_client_forget(p) */
	RN_PY_PENDING_BATCH,      /* release p once final; cancelled */
};

struct rn_py_pending {
	enum rn_py_pending_op op;
	void *p;
	PyObject *obj;            /* owned; may be NULL */
};

struct rn_py_client {
	PyObject_HEAD
	struct rn_client *c;      /* NULL once detached */
	PyThread_type_lock lock;  /* one librnotify call at a time; guards
				   * c, waiters and detaching */
	int waiters;              /* threads in wait()'s poll(2), unlocked */
	bool detaching;           /* detach() came while some waited */
	int stop_fd;              /* eventfd: detach() wakes the waiters */
	PyObject *agent;          /* str */
	PyObject *node;           /* str, kept after detach */
	/* Which attachment: objects made under another one (or after the
	 * detach) name C objects that are gone with it. */
	uint64_t epoch;
	/* Under the GIL (never touched without it): lets-go to do, and the
	 * references to drop once the lock is released. */
	struct rn_py_pending *pending;
	Py_ssize_t n_pending, cap_pending;
	PyObject *drop;           /* list, or NULL */
};

/* Raise OSError(err, "strerror: what"); returns NULL. */
PyObject *rn_py_raise_errno(int err, const char *format, ...);

/* Take the client's lock (0), or raise ValueError when it is detached
 * (-1). Does the queued lets-go first. */
int rn_py_client_lock(struct rn_py_client *self);
/* Release it, then drop the references the lets-go left. */
void rn_py_client_unlock(struct rn_py_client *self);
/* Whether objects of epoch may still call the library: attached, the
 * same attachment. */
bool rn_py_client_live(const struct rn_py_client *self, uint64_t epoch);
/* Queue a let-go (steals obj). Does it at once when the lock is free;
 * never waits for it. */
void rn_py_client_let_go(struct rn_py_client *self, enum rn_py_pending_op op,
			 void *p, PyObject *obj);

/* O& converter: an int of 0..2^64-1. */
int rn_py_cookie_converter(PyObject *obj, void *out);
/* A name or msg: bytes-like or str (UTF-8); release with
 * rn_py_payload_release(). */
int rn_py_payload_get(PyObject *obj, const char *what, Py_buffer *view,
		      PyObject **tmp);
void rn_py_payload_release(Py_buffer *view, PyObject *tmp);
double rn_py_monotonic_s(void);
/* The timeout argument of the wait() methods (Client's, Batch's): None
 * (*seconds = -1) or seconds of 0 to 2^31 ms. 0, or -1 with the error. */
int rn_py_timeout_parse(PyObject *args, PyObject *kwds, double *seconds);

/* Ready type and add it to module m as name (a new reference); 0, or -1
 * with the error. */
int rn_py_module_add_type(PyObject *m, const char *name, PyTypeObject *type);

/* rnotify_xfer.c: the types (ready and added to module m), and the
 * Client's methods. */
int rn_py_xfer_init(PyObject *m);
PyObject *rn_py_client_alloc(struct rn_py_client *self, PyObject *args,
			     PyObject *kwds);
PyObject *rn_py_client_register(struct rn_py_client *self, PyObject *args,
				PyObject *kwds);
PyObject *rn_py_client_register_fd(struct rn_py_client *self,
				   PyObject *args, PyObject *kwds);
PyObject *rn_py_client_fetch(struct rn_py_client *self, PyObject *args,
			     PyObject *kwds);
PyObject *rn_py_client_import_desc(struct rn_py_client *self,
				   PyObject *args, PyObject *kwds);
PyObject *rn_py_client_write(struct rn_py_client *self, PyObject *args,
			     PyObject *kwds);
PyObject *rn_py_client_read(struct rn_py_client *self, PyObject *args,
			    PyObject *kwds);
PyObject *rn_py_client_xfer_max(struct rn_py_client *self, PyObject *args,
				PyObject *kwds);
/* Method tables take PyCFunction; the cast through void (*)(void) says
 * that the signature is the one METH_* names. */
#define METHOD(fn) ((PyCFunction)(void (*)(void))(fn))

/* Kind of a completion, as Completion.kind: "send", "write", "read". */
PyObject *rn_py_kind_name(uint32_t kind);

#endif /* RN_PY_MODULE_PVT_H */
