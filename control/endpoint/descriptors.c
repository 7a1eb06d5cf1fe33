/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Descriptor requests: a peer asks for the descriptor of a region this
 * node's application published under a name, and this node asks its
 * peers the same (rn_plane_desc_fetch()).
 *
 * A descriptor carries rkeys: whoever holds one may READ or WRITE the
 * region. So a request is answered only on a connection whose peer proved
 * the shared secret (both proofs checked, c->auth.done) and that carries
 * its endpoint (established); before that the handshake closes the
 * connection on it as out of order, and a node without a secret answers
 * every request UNAUTHENTICATED, with no blob.
 *
 * A request from another thread is a small object with two references:
 * the caller's, dropped when it returns (answered or timed out), and the
 * control thread's, dropped when the request ends there (answer, deadline,
 * endpoint lost, shutdown). The last one frees it. The caller waits with
 * 1 ms naps: a control-path call, answered within a tick and a round trip.
 *
 * The control thread's own requests (rn_plane_desc_fetch_start(), the
 * client server's FETCH) wait for nobody: they have the control thread's
 * reference only, and a callback that takes the result where a caller
 * would have loaded it.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "descriptors_pvt.h"
#include "endpoint_pvt.h"

struct rn_desc_fetch {
	struct rn_desc_fetch *next;
	atomic_int refs;              /* the caller's, the control thread's */
	/* -EINPROGRESS, then RN_PROTO_DESC_BLOB (blob written) or an error;
	 * release-stored after blob, acquire-loaded by the caller. */
	atomic_int result;
	char peer[RN_EP_NAME_SIZE];
	char name[RN_PROTO_DESC_NAME_MAX + 1];
	uint64_t deadline_ms;
	/* The control thread's: */
	uint32_t id;
	bool sent;
	uint32_t generation;          /* the endpoint's, when sent */
	rn_plane_desc_done done;      /* NULL: a caller waits */
	void *done_arg;
	uint8_t blob[RN_PROTO_DESC_BLOB];
};

static void
fetch_put(struct rn_desc_fetch *r)
{
	if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1)
		free(r);
}

/* The request's end on the control thread: result, then its reference. */
static void
fetch_end(struct rn_desc_fetch *r, int result)
{
	if (r->done != NULL)
		r->done(r->done_arg, result, r->blob);
	atomic_store_explicit(&r->result, result, memory_order_release);
	fetch_put(r);
}

int
rn_desc_init(struct rn_plane *pl)
{
	return -pthread_mutex_init(&pl->desc.lock, NULL);
}

void
rn_desc_fini(struct rn_plane *pl)
{
	struct rn_desc_fetch *r, *next;

	pthread_mutex_lock(&pl->desc.lock);
	r = pl->desc.submitted;
	pl->desc.submitted = NULL;
	pl->desc.closed = true;
	pthread_mutex_unlock(&pl->desc.lock);
	for (; r != NULL; r = next) {
		next = r->next;
		fetch_end(r, -ESHUTDOWN);
	}
	for (r = pl->desc.pending; r != NULL; r = next) {
		next = r->next;
		fetch_end(r, -ESHUTDOWN);
	}
	pl->desc.pending = NULL;
}

void
rn_plane_set_descriptors(struct rn_plane *pl, rn_plane_desc_source source,
			 void *arg)
{
	pl->desc.source = source;
	pl->desc.source_arg = arg;
}

void
rn_plane_set_client_descriptors(struct rn_plane *pl,
				rn_plane_desc_source source, void *arg)
{
	pl->desc.client_source = source;
	pl->desc.client_source_arg = arg;
}

int
rn_plane_desc_served(struct rn_plane *pl, const char *name, void *blob,
		     size_t cap)
{
	int rc = -ENOENT;

	if (pl->desc.source == NULL && pl->desc.client_source == NULL)
		return -EOPNOTSUPP;
	if (pl->desc.source != NULL)
		rc = pl->desc.source(pl->desc.source_arg, name, blob, cap);
	if (rc == -ENOENT && pl->desc.client_source != NULL)
		rc = pl->desc.client_source(pl->desc.client_source_arg, name,
					    blob, cap);
	return rc;
}

/* Send r's request on ep's connection. */
static void
send_request(struct rn_plane *pl, struct rn_endpoint *ep,
	     struct rn_desc_fetch *r)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_DESC_REQUEST_FIXED +
		      RN_PROTO_DESC_NAME_MAX];
	size_t n;

	r->id = ++pl->desc.next_id;
	r->sent = true;
	r->generation = ep->generation;
	n = rn_proto_encode_desc_request(frame, sizeof(frame), r->id, r->name);
	rn_conn_send(ep->conn, frame, n);
}

/*
 * Where r stands now: 1 to keep it, or its end (an errno, negative). Sent
 * once the endpoint is connected; connecting it if it is not, as a first
 * use does.
 */
static int
fetch_step(struct rn_plane *pl, struct rn_desc_fetch *r, uint64_t now)
{
	struct rn_endpoint *ep = rn_ep_find(pl, r->peer);
	int rc;

	if (ep == NULL)
		return -ENOENT;
	if (r->sent)
		return ep->generation == r->generation &&
		       ep->state == RN_EP_CONNECTED && ep->conn != NULL ? 1 :
		       -ENOTCONN;
	if (now >= r->deadline_ms)
		return -ETIMEDOUT;
	rc = rn_plane_use(pl, r->peer);
	if (rc == -ENOTCONN || rc == -ENOENT)
		return rc;
	if (rc == 0 && ep->conn != NULL &&
	    ep->conn->phase == RN_CONN_ESTABLISHED)
		send_request(pl, ep, r);
	return 1;
}

void
rn_desc_tick(struct rn_plane *pl)
{
	struct rn_desc_fetch **pp, *r, *in;
	uint64_t now = rn_now_ms();

	pthread_mutex_lock(&pl->desc.lock);
	in = pl->desc.submitted;
	pl->desc.submitted = NULL;
	pthread_mutex_unlock(&pl->desc.lock);
	while (in != NULL) {
		r = in;
		in = in->next;
		r->next = pl->desc.pending;
		pl->desc.pending = r;
	}
	for (pp = &pl->desc.pending; (r = *pp) != NULL;) {
		int rc = now >= r->deadline_ms ? -ETIMEDOUT :
			 fetch_step(pl, r, now);

		if (rc == 1) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		fetch_end(r, rc);
	}
}

static bool
fetch_names_valid(const char *peer, const char *name)
{
	return rn_proto_desc_name_valid(name, strnlen(name,
						      RN_PROTO_DESC_NAME_MAX + 1)) &&
	       strnlen(peer, RN_EP_NAME_SIZE) != 0 &&
	       strnlen(peer, RN_EP_NAME_SIZE) < RN_EP_NAME_SIZE;
}

int
rn_plane_desc_fetch(struct rn_plane *pl, const char *peer, const char *name,
		    uint32_t timeout_ms, void *blob, size_t cap)
{
	struct rn_desc_fetch *r;
	struct timespec nap = { .tv_nsec = 1000000 };
	uint64_t until = rn_now_ms() + timeout_ms;
	int rc;

	if (cap < RN_PROTO_DESC_BLOB)
		return -ENOSPC;
	if (!fetch_names_valid(peer, name))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	atomic_init(&r->refs, 2);
	atomic_init(&r->result, -EINPROGRESS);
	snprintf(r->peer, sizeof(r->peer), "%s", peer);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->deadline_ms = until;
	pthread_mutex_lock(&pl->desc.lock);
	if (pl->desc.closed) {
		pthread_mutex_unlock(&pl->desc.lock);
		free(r);
		return -ESHUTDOWN;
	}
	r->next = pl->desc.submitted;
	pl->desc.submitted = r;
	pthread_mutex_unlock(&pl->desc.lock);
	while ((rc = atomic_load_explicit(&r->result, memory_order_acquire)) ==
	       -EINPROGRESS && rn_now_ms() < until)
		nanosleep(&nap, NULL);
	if (rc == RN_PROTO_DESC_BLOB)
		memcpy(blob, r->blob, RN_PROTO_DESC_BLOB);
	else if (rc == -EINPROGRESS)
		rc = -ETIMEDOUT;   /* the control thread ends it too */
	fetch_put(r);
	return rc;
}

int
rn_plane_desc_fetch_start(struct rn_plane *pl, const char *peer,
			  const char *name, uint32_t timeout_ms,
			  rn_plane_desc_done done, void *arg,
			  struct rn_desc_fetch **out)
{
	struct rn_desc_fetch *r;
	int rc;

	if (!fetch_names_valid(peer, name) || done == NULL)
		return -EINVAL;
	if (pl->desc.closed)
		return -ESHUTDOWN;
	if (rn_ep_find(pl, peer) == NULL)
		return -ENOENT;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return -ENOMEM;
	atomic_init(&r->refs, 1);
	atomic_init(&r->result, -EINPROGRESS);
	snprintf(r->peer, sizeof(r->peer), "%s", peer);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->deadline_ms = rn_now_ms() + timeout_ms;
	/* Sent now when the endpoint is established; else at a tick. */
	rc = fetch_step(pl, r, rn_now_ms());
	if (rc != 1) {
		free(r);
		return rc;
	}
	r->done = done;
	r->done_arg = arg;
	r->next = pl->desc.pending;
	pl->desc.pending = r;
	*out = r;
	return 0;
}

void
rn_plane_desc_fetch_cancel(struct rn_plane *pl, struct rn_desc_fetch *r)
{
	for (struct rn_desc_fetch **pp = &pl->desc.pending; *pp != NULL;
	     pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			r->done = NULL;
			fetch_put(r);
			return;
		}
}

/* What a requester's call returns for an answer's status. */
static int
status_errno(uint16_t status)
{
	switch (status) {
	case RN_DESC_UNKNOWN:
		return -ENODATA;
	case RN_DESC_UNAUTHENTICATED:
		return -EACCES;
	default:
		return -EOPNOTSUPP;
	}
}

void
rn_desc_answered(struct rn_plane *pl, struct rn_endpoint *ep,
		 const struct rn_proto_frame *f)
{
	struct rn_desc_fetch **pp, *r;

	for (pp = &pl->desc.pending; (r = *pp) != NULL; pp = &r->next)
		if (r->sent && r->id == f->desc_answer.id &&
		    strcmp(r->peer, ep->name) == 0)
			break;
	if (r == NULL)
		return;   /* one that ended already (timed out) */
	*pp = r->next;
	if (f->desc_answer.status != RN_DESC_OK) {
		fetch_end(r, status_errno(f->desc_answer.status));
		return;
	}
	memcpy(r->blob, f->desc_answer.blob, RN_PROTO_DESC_BLOB);
	fetch_end(r, RN_PROTO_DESC_BLOB);
}

void
rn_desc_serve(struct rn_plane *pl, struct rn_conn *c,
	      const struct rn_proto_frame *f)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_DESC_ANSWER_FIXED +
		      RN_PROTO_DESC_BLOB];
	uint8_t blob[RN_PROTO_DESC_BLOB];
	uint16_t status = RN_DESC_UNAVAILABLE;
	const char *peer = c->ep != NULL ? c->ep->name : c->peer;
	int rc;

	if (!rn_hs_auth_on(&pl->auth) || !c->auth.done) {
		status = RN_DESC_UNAUTHENTICATED;
	} else if (pl->desc.source != NULL || pl->desc.client_source != NULL) {
		rc = rn_plane_desc_served(pl, f->desc_request.name, blob,
					  sizeof(blob));
		status = rc == RN_PROTO_DESC_BLOB ? RN_DESC_OK :
			 rc == -ENOENT ? RN_DESC_UNKNOWN : RN_DESC_UNAVAILABLE;
	}
	if (status != RN_DESC_OK)
		RN_PLANE_LOG(INFO, "endpoint %s: descriptor '%s' not given: %s",
			     peer, f->desc_request.name,
			     status == RN_DESC_UNKNOWN ? "none published so" :
			     status == RN_DESC_UNAUTHENTICATED ?
			     "this node has no secret ([control] secret_file)" :
			     "none served here");
	rn_conn_send(c, frame, rn_proto_encode_desc_answer(
			     frame, sizeof(frame), f->desc_request.id, status,
			     status == RN_DESC_OK ? blob : NULL,
			     status == RN_DESC_OK ? RN_PROTO_DESC_BLOB : 0));
}
