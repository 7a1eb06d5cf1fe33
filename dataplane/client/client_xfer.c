/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Batches: rn_client_transfer() checks what needs no daemon, finds the
 * node's endpoint as a send does, takes a free batch slot of the lcore
 * that owns it, writes the request there (rn_client_shm.h: the request,
 * the descriptors once each, the triples, the notification) and enqueues
 * an XFER entry naming the slot. The lcore copies and checks the request
 * at once, and at the batch's final status stores the result in the slot
 * (status last) and enqueues XFER_DONE. The slot is the truth: XFER_DONE
 * is a wake-up (a full deliver ring drops it), and the library finds
 * final statuses by looking at the slots of its batches in flight
 * (rn_client_xfer_collect()), so every batch is reported once by
 * rn_client_completions(). No syscall unless the lcore sleeps.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_pvt.h"

/* The smallest slot that holds a request of one descriptor and one
 * triple. */
#define SLOT_MIN (RN_CLIENT_XFER_BODY_OFF + RN_CLIENT_DESC_SIZE + \
		  sizeof(struct rn_client_xfer_triple))

int
rn_client_xfer_init(struct rn_client *c)
{
	const struct rn_client_region *r = c->region;
	uint32_t slots = r->xfer_slots, size = r->xfer_slot_size, n;

	if (slots == 0)
		return 0;
	if (size % 64 != 0 || size < SLOT_MIN || slots > 65536)
		return -EPROTO;
	n = c->n_lcores * slots;
	for (uint32_t i = 0; i < c->n_lcores; i++) {
		uint64_t off = r->xfer_off[i];

		if (off % 64 != 0 || off > c->region_len ||
		    (uint64_t)slots * size > c->region_len - off)
			return -EPROTO;
	}
	c->batches = calloc(n, sizeof(*c->batches));
	c->inflight = calloc(n, sizeof(*c->inflight));
	c->free_slots = calloc(n, sizeof(*c->free_slots));
	if (c->batches == NULL || c->inflight == NULL || c->free_slots == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < c->n_lcores; i++) {
		for (uint32_t k = 0; k < slots; k++) {
			struct rn_client_batch *b = &c->batches[i * slots + k];

			b->c = c;
			b->slot = rn_client_xfer_slot(r, i, k);
			b->lcore = i;
			b->index = k;
			/* Popped from the end: slot 0 first. */
			c->free_slots[i * slots + k] = slots - 1 - k;
		}
		c->n_free[i] = slots;
	}
	c->xfer_slots = slots;
	c->xfer_slot_size = size;
	return 0;
}

void
rn_client_xfer_fini(struct rn_client *c)
{
	free(c->batches);
	free(c->inflight);
	free(c->free_slots);
	c->batches = NULL;
	c->inflight = NULL;
	c->free_slots = NULL;
	c->xfer_slots = 0;
}

static inline int64_t
slot_status(const struct rn_client_batch *b)
{
	if (b->refused)
		return b->refusal;
	/* Pairs with the lcore's release store of status after bytes_done
	 * and notify_status. */
	return __atomic_load_n(&b->slot->status, __ATOMIC_ACQUIRE);
}

/* A final status as the API gives it: 0 or -errno (anything else the
 * daemon wrote is -EPROTO). */
static inline int
final_rc(int64_t st)
{
	return st == 0 || (st < 0 && st >= -4095) ? (int)st : -EPROTO;
}

static void
slot_free(struct rn_client *c, struct rn_client_batch *b)
{
	b->state = RN_CLIENT_BATCH_FREE;
	c->free_slots[b->lcore * c->xfer_slots + c->n_free[b->lcore]++] =
		b->index;
}

static void
inflight_remove(struct rn_client *c, struct rn_client_batch *b)
{
	struct rn_client_batch *last = c->inflight[--c->n_inflight];

	c->inflight[b->inflight_pos] = last;
	last->inflight_pos = b->inflight_pos;
}

/* Queue b's completion report (final status st); false when the queue is
 * full (b stays in flight, reported later). */
static bool
report(struct rn_client *c, struct rn_client_batch *b, int64_t st)
{
	if (rn_client_fifo_free(&c->comp_q) == 0)
		return false;
	c->comps[c->comp_q.tail++ & c->comp_q.mask] =
		(struct rn_client_completion){ .cookie = b->cookie,
					       .status = final_rc(st),
					       .kind = b->kind };
	inflight_remove(c, b);
	if (b->state == RN_CLIENT_BATCH_ORPHAN)
		slot_free(c, b);
	else
		b->state = RN_CLIENT_BATCH_FINAL;
	return true;
}

bool
rn_client_xfer_collect(struct rn_client *c)
{
	bool took = false;

	/* Backwards: a report moves the last one into its place. O(in
	 * flight), at most n_lcores * xfer_slots. */
	for (uint32_t i = c->n_inflight; i-- > 0;) {
		struct rn_client_batch *b = c->inflight[i];
		int64_t st = slot_status(b);

		if (st == RN_CLIENT_XFER_PENDING)
			continue;
		if (!report(c, b, st))
			break;
		took = true;
	}
	return took;
}

/*
 * The slot is the truth, but an lcore refuses with XFER_DONE alone a batch
 * whose slot it may not write (out of range, or its batch runs still:
 * this library submits neither). Such an
 * entry is taken as the final status only when it cannot be an older
 * batch's of the same slot: no other XFER_DONE of the slot is due (one
 * is due per submission; a dropped one stays due for good, and turns
 * this off for its slot), and the slot still says pending.
 */
void
rn_client_xfer_done(struct rn_client *c, uint32_t lcore,
		    const struct rn_client_entry *e)
{
	if (e->ep_index < c->xfer_slots && lcore < c->n_lcores) {
		struct rn_client_batch *b =
			&c->batches[lcore * c->xfer_slots + e->ep_index];

		if (b->dones_due != 0 && --b->dones_due == 0 &&
		    (b->state == RN_CLIENT_BATCH_IN_FLIGHT ||
		     b->state == RN_CLIENT_BATCH_ORPHAN) &&
		    slot_status(b) == RN_CLIENT_XFER_PENDING) {
			b->refusal = e->status < 0 ? e->status : -EPROTO;
			b->refused = true;
		}
	}
	rn_client_xfer_collect(c);
}

bool
rn_client_xfer_pending(const struct rn_client *c)
{
	for (uint32_t i = 0; i < c->n_inflight; i++)
		if (slot_status(c->inflight[i]) != RN_CLIENT_XFER_PENDING)
			return true;
	return false;
}

/* The notification's agent length (0: none), or -EINVAL. */
static int
note_check(const struct rn_client_xfer_notify *note, uint64_t *bytes)
{
	size_t a;

	*bytes = 0;
	if (note == NULL)
		return 0;
	if (note->agent == NULL || (note->name_len != 0 && note->name == NULL) ||
	    (note->msg_len != 0 && note->msg == NULL))
		return -EINVAL;
	a = strnlen(note->agent, RN_CLIENT_AGENT_MAX + 1);
	if (a == 0 || a > RN_CLIENT_AGENT_MAX)
		return -EINVAL;
	*bytes = (uint64_t)a + note->name_len + note->msg_len;
	return (int)a;
}

/* Whether two imported descriptors are the same region: one descriptor
 * per region in a batch, however often the application imported it. */
static inline bool
same_remote(const struct rn_client_remote *a, const struct rn_client_remote *b)
{
	return a == b || memcmp(a->desc, b->desc, sizeof(a->desc)) == 0;
}

/* rem's index in rems[0..n), or n. */
static inline uint32_t
remote_index(const struct rn_client_remote *const *rems, uint32_t n,
	     const struct rn_client_remote *rem)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (same_remote(rems[i], rem))
			break;
	return i;
}

/* The entries' checks and their distinct descriptors, into rems. Returns
 * how many, or -EINVAL. */
static int
entries_check(const struct rn_client_xfer_entry *entries, unsigned int n,
	      const struct rn_client_remote **rems)
{
	uint32_t n_rems = 0;

	for (unsigned int i = 0; i < n; i++) {
		const struct rn_client_xfer_entry *e = &entries[i];
		uint32_t k;

		if (e->length == 0 || e->rem == NULL ||
		    (uintptr_t)e->local > UINT64_MAX - e->length ||
		    e->remote > UINT64_MAX - e->length)
			return -EINVAL;
		k = remote_index(rems, n_rems, e->rem);
		if (k < n_rems)
			continue;
		if (n_rems == RN_CLIENT_XFER_MAX_REMOTES ||
		    (n_rems != 0 &&
		     strcmp(rems[0]->r.node, e->rem->r.node) != 0))
			return -EINVAL;   /* too many, or two nodes */
		rems[n_rems++] = e->rem;
	}
	return (int)n_rems;
}

/* Write the request into slot (rn_client_shm.h's order). */
static void
slot_write(struct rn_client_xfer_slot *slot, const struct rn_client_xfer_req *req,
	   const struct rn_client_remote *const *rems,
	   const struct rn_client_xfer_entry *entries,
	   const struct rn_client_xfer_notify *note)
{
	uint8_t *p = rn_client_xfer_body(slot);

	memcpy(&slot->req, req, sizeof(*req));
	for (uint32_t i = 0; i < req->n_remotes; i++, p += RN_CLIENT_DESC_SIZE)
		memcpy(p, rems[i]->desc, RN_CLIENT_DESC_SIZE);
	for (uint32_t i = 0; i < req->n_entries; i++, p += sizeof(
			struct rn_client_xfer_triple)) {
		const struct rn_client_xfer_entry *e = &entries[i];
		struct rn_client_xfer_triple t = {
			.local = (uintptr_t)e->local, .remote = e->remote,
			.length = e->length,
			.remote_index = remote_index(rems, req->n_remotes,
						     e->rem) };

		memcpy(p, &t, sizeof(t));
	}
	if (req->note_agent_len != 0) {
		memcpy(p, note->agent, req->note_agent_len);
		p += req->note_agent_len;
		if (req->note_name_len != 0)
			memcpy(p, note->name, req->note_name_len);
		p += req->note_name_len;
		if (req->note_msg_len != 0)
			memcpy(p, note->msg, req->note_msg_len);
	}
	/* The result part, the lcore's from the XFER entry on; the ring's
	 * enqueue (release) publishes all of it. */
	slot->bytes_done = 0;
	slot->notify_status = 0;
	__atomic_store_n(&slot->cancel, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&slot->status, RN_CLIENT_XFER_PENDING,
			 __ATOMIC_RELAXED);
}

int
rn_client_transfer(struct rn_client *c, enum rn_client_xfer_kind kind,
		   const struct rn_client_xfer_entry *entries, unsigned int n,
		   const struct rn_client_xfer_notify *note, uint64_t cookie,
		   struct rn_client_batch **out)
{
	const struct rn_client_remote *rems[RN_CLIENT_XFER_MAX_REMOTES];
	const struct rn_client_route *route;
	struct rn_client_xfer_req req = { .kind = (uint8_t)kind };
	struct rn_client_batch *b;
	struct rn_client_entry e;
	struct rte_ring *ring;
	uint64_t note_bytes;
	int n_rems, agent_len, rc;

	rc = rn_client_alive(c, false);
	if (rc != 0)
		return rc;
	if (out == NULL || entries == NULL || n == 0 ||
	    (kind != RN_CLIENT_WRITE && kind != RN_CLIENT_READ))
		return -EINVAL;
	agent_len = note_check(note, &note_bytes);
	if (agent_len < 0)
		return agent_len;
	n_rems = entries_check(entries, n, rems);
	if (n_rems < 0)
		return n_rems;
	if (c->xfer_slots == 0)
		return -ENOTSUP;   /* the daemon has no transfers */
	if (agent_len != 0 &&
	    sizeof(struct rn_client_send_hdr) + note_bytes > c->buf_size)
		return -EMSGSIZE;   /* as rn_client_send() */
	if (RN_CLIENT_XFER_BODY_OFF +
	    (uint64_t)n_rems * RN_CLIENT_DESC_SIZE +
	    (uint64_t)n * sizeof(struct rn_client_xfer_triple) + note_bytes >
	    c->xfer_slot_size)
		return -E2BIG;
	rc = rn_client_route(c, rems[0]->r.node, &route);
	if (rc != 0)
		return rc;
	ring = rn_client_submit_ring(c->region, route->lcore);
	if (c->n_free[route->lcore] == 0 || rte_ring_free_count(ring) == 0)
		return -EAGAIN;
	b = &c->batches[route->lcore * c->xfer_slots +
			c->free_slots[route->lcore * c->xfer_slots +
				      c->n_free[route->lcore] - 1]];
	req.ep_tag = route->tag;
	req.n_remotes = (uint8_t)n_rems;
	req.note_agent_len = (uint8_t)agent_len;
	req.n_entries = n;
	if (agent_len != 0) {
		req.note_name_len = note->name_len;
		req.note_msg_len = note->msg_len;
	}
	slot_write(b->slot, &req, rems, entries, note);
	e = (struct rn_client_entry){ .type = RN_CLIENT_ENTRY_XFER,
				      .ep_index = route->ep_index,
				      .slot = b->index, .cookie = cookie };
	/* Release: the slot is written before the entry shows. We are the
	 * ring's only producer and saw room: it goes. */
	if (rte_ring_enqueue_elem(ring, &e, sizeof(e)) != 0)
		return -EAGAIN;
	c->n_free[route->lcore]--;
	b->dones_due++;
	b->refused = false;
	b->state = RN_CLIENT_BATCH_IN_FLIGHT;
	b->kind = (uint8_t)kind;
	b->cookie = cookie;
	b->inflight_pos = c->n_inflight;
	c->inflight[c->n_inflight++] = b;
	rn_client_wake_lcore(c, route->lcore);
	*out = b;
	return 0;
}

unsigned int
rn_client_xfer_max(const struct rn_client *c, unsigned int n_remotes,
		   uint32_t note_bytes)
{
	uint64_t fixed = RN_CLIENT_XFER_BODY_OFF +
			 (uint64_t)n_remotes * RN_CLIENT_DESC_SIZE + note_bytes;

	if (c->xfer_slots == 0 || n_remotes == 0 ||
	    n_remotes > RN_CLIENT_XFER_MAX_REMOTES || fixed >= c->xfer_slot_size)
		return 0;
	return (unsigned int)((c->xfer_slot_size - fixed) /
			      sizeof(struct rn_client_xfer_triple));
}

int
rn_client_batch_status(const struct rn_client_batch *b, uint64_t *bytes_done,
		       int *notify_status)
{
	int64_t st;

	if (b == NULL || b->state == RN_CLIENT_BATCH_FREE ||
	    b->state == RN_CLIENT_BATCH_ORPHAN)
		return -EINVAL;
	st = slot_status(b);
	if (st == RN_CLIENT_XFER_PENDING)
		/* A daemon gone never says: the socket does. */
		return rn_client_alive(b->c, false) != 0 ? -ENOTCONN :
		       -EINPROGRESS;
	if (bytes_done != NULL)
		*bytes_done = b->refused ? 0 : b->slot->bytes_done;
	if (notify_status != NULL)
		*notify_status = b->refused ? 0 : b->slot->notify_status;
	return final_rc(st);
}

void
rn_client_batch_cancel(struct rn_client_batch *b)
{
	/* Relaxed: the lcore looks at it each turn; a batch final already
	 * is not changed by it. */
	if (b != NULL && b->state == RN_CLIENT_BATCH_IN_FLIGHT)
		__atomic_store_n(&b->slot->cancel, 1, __ATOMIC_RELAXED);
}

int
rn_client_batch_release(struct rn_client *c, struct rn_client_batch *b)
{
	int64_t st;

	if (b == NULL || b->state == RN_CLIENT_BATCH_FREE ||
	    b->state == RN_CLIENT_BATCH_ORPHAN)
		return -EINVAL;
	if (b->state == RN_CLIENT_BATCH_FINAL) {
		slot_free(c, b);
		return 0;
	}
	st = slot_status(b);
	if (st == RN_CLIENT_XFER_PENDING) {
		if (rn_client_alive(c, false) == 0)
			return -EBUSY;
		/* The daemon is gone: nobody writes the slot any more. */
		inflight_remove(c, b);
		slot_free(c, b);
		return 0;
	}
	/* Final, not reported yet: reported now, or once there is room. */
	if (!report(c, b, st))
		b->state = RN_CLIENT_BATCH_ORPHAN;
	else
		slot_free(c, b);
	return 0;
}

/*
 * Arm for a batch's wake-up whatever else waits: as rn_client_arm()
 * (client_wait.c), but the eventfd is drained even when deliveries or
 * reports wait, so that only a producer's next write (the lcore's, at the
 * final status; or another one's) ends the sleep. The caller makes the fd
 * readable again for what waits (rn_client_keep_readable()) before it
 * returns: no other thread uses c meanwhile.
 */
static void
arm_for_batch(struct rn_client *c)
{
	if (__atomic_load_n(&c->region->armed, __ATOMIC_ACQUIRE) == 0)
		c->owed++;   /* a producer took it: its write comes */
	if (c->owed != 0)
		rn_client_drain(c);
	/* Pairs with rn_client_link_wake(): our store of armed before our
	 * look at the slot, its store of the slot before its load of armed. */
	__atomic_store_n(&c->region->armed, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Spin for the client's spin time as rn_client_wait() does (yielding the
 * CPU between looks: on two cores a pure spin would hold the one the
 * daemon needs to finish the batch), then block until the lcore's wake-up
 * at the final status (or another's: then look and block again). */
int
rn_client_batch_wait(struct rn_client *c, struct rn_client_batch *b,
		     int timeout_ms)
{
	uint64_t start = rn_client_now_ns();
	uint64_t spin_end = start + c->spin_us * 1000ull;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX :
			    start + (uint64_t)timeout_ms * 1000000ull;
	bool armed = false;
	int rc, woken;

	for (;;) {
		rc = rn_client_batch_status(b, NULL, NULL);
		if (rc != -EINPROGRESS)
			break;
		if (rn_client_spin(spin_end, deadline))
			continue;
		if (rn_client_now_ns() >= deadline) {
			rc = -ETIMEDOUT;
			break;
		}
		arm_for_batch(c);
		armed = true;
		rc = rn_client_batch_status(b, NULL, NULL);
		if (rc != -EINPROGRESS)
			break;
		/* EINTR: look again; the daemon gone: -ENOTCONN. */
		rc = rn_client_block(c, deadline, &woken);
		if (rc == -EINTR)
			continue;
		if (rc != 0)
			break;
	}
	if (armed && rn_client_pending(c))
		rn_client_keep_readable(c);   /* for what else waits */
	return rc;
}
