/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Taking what the daemon put in the region: deliveries (handed to the
 * application, their receive buffers held until the next poll), send
 * reports and refusals from the same deliver rings (copied into c's
 * queues at once), control events from the events ring, and the final
 * statuses of batches (their slots, looked at on an XFER_DONE and on
 * every collect: client_xfer.c). The windows and
 * their rules are described at struct rn_client_deliver (client_pvt.h).
 */
#include <errno.h>
#include <string.h>

#include "client_pvt.h"

static inline uint32_t
min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/*
 * Finish the window's prefix before its first held delivery, giving those
 * buffers back. The peek API finishes from the tail only and forgets what
 * was started beyond (in single-consumer mode it sets head = tail), so
 * the rest of the window is started again, unread: it was taken already.
 */
static inline void
window_finish(struct rte_ring *ring, struct rn_client_deliver *d)
{
	struct rn_client_entry skip[RN_CLIENT_POLL_MAX];
	uint32_t k, rest;

	if (d->win == 0)
		return;
	k = rn_client_fifo_count(&d->held) != 0 ?
	    d->held_pos[d->held.head & d->held.mask] - d->tail : d->win;
	if (k == 0)
		return;
	rest = d->win - k;
	rte_ring_dequeue_elem_finish(ring, k);
	d->tail += k;
	while (rest != 0) {
		uint32_t n = rte_ring_dequeue_bulk_elem_start(ring, skip,
				sizeof(skip[0]),
				min_u32(rest, RN_CLIENT_POLL_MAX), NULL);

		if (n == 0)
			break;   /* cannot be: those entries are there */
		rest -= n;
	}
	d->win -= k + rest;
}

/* The delivery at pos of lcore, as the application gets it; false when
 * the lcore wrote something that does not fit its buffer. */
static inline bool
read_delivery(const struct rn_client *c, uint32_t lcore, uint32_t pos,
	      struct rn_client_notification *out)
{
	const uint8_t *buf = rn_client_recv_buf(c->region, lcore, pos);
	const struct rn_client_recv_hdr *hdr = (const void *)buf;
	/* Each field read once: the checks hold for what is used. */
	uint32_t agent_len = __atomic_load_n(&hdr->agent_len, __ATOMIC_RELAXED);
	uint32_t name_len = __atomic_load_n(&hdr->name_len, __ATOMIC_RELAXED);
	uint32_t msg_len = __atomic_load_n(&hdr->msg_len, __ATOMIC_RELAXED);
	const uint8_t *p = buf + sizeof(*hdr);

	if (agent_len == 0 || agent_len > RN_CLIENT_AGENT_MAX ||
	    sizeof(*hdr) + (uint64_t)agent_len + name_len + msg_len >
	    c->buf_size)
		return false;
	memcpy(out->node, hdr->node, sizeof(hdr->node));
	out->node[RN_CLIENT_NODE_MAX] = '\0';
	out->name = p;
	out->name_len = name_len;
	out->msg = p + name_len;
	out->msg_len = msg_len;
	memcpy(out->agent, p + name_len + msg_len, agent_len);
	out->agent[agent_len] = '\0';
	return true;
}

/* A REFUSED entry's event (in its receive buffer) into c's queue. */
static void
stash_refused(struct rn_client *c, uint32_t lcore, uint32_t pos,
	      const struct rn_client_entry *e)
{
	struct rn_client_event *ev =
		&c->events[c->event_q.tail++ & c->event_q.mask];

	/* Within its own buffer, however small the daemon made them. */
	memset(ev, 0, sizeof(*ev));
	memcpy(ev, rn_client_recv_buf(c->region, lcore, pos),
	       sizeof(*ev) < c->buf_size ? sizeof(*ev) : c->buf_size);
	ev->type = RN_CLIENT_EVENT_REFUSED;
	ev->cookie = e->cookie;
	ev->node[RN_CLIENT_NODE_MAX] = '\0';
	ev->agent[RN_CLIENT_AGENT_MAX] = '\0';
}

/*
 * The entry at pos, just started: a report or refusal goes to c's queues;
 * a delivery is held. Returns whether it was a delivery.
 */
static inline bool
take_entry(struct rn_client *c, uint32_t lcore, uint32_t pos,
	   const struct rn_client_entry *e)
{
	struct rn_client_deliver *d = &c->deliver[lcore];

	switch (e->type) {
	case RN_CLIENT_ENTRY_DELIVERY:
		d->held_pos[d->held.tail++ & d->held.mask] = pos;
		return true;
	case RN_CLIENT_ENTRY_COMPLETION:
		c->comps[c->comp_q.tail++ & c->comp_q.mask] =
			(struct rn_client_completion){ .cookie = e->cookie,
						       .status = e->status };
		return false;
	case RN_CLIENT_ENTRY_REFUSED:
		stash_refused(c, lcore, pos, e);
		return false;
	case RN_CLIENT_ENTRY_XFER_DONE:
		/* A wake-up: the slots say which batches are final. */
		rn_client_xfer_done(c, lcore, e);
		return false;
	default:
		return false;   /* not ours to know: given back */
	}
}

/* Entries a start may take now without overflowing c's queues. */
static inline uint32_t
queue_room(const struct rn_client *c)
{
	return min_u32(rn_client_fifo_free(&c->comp_q),
		       rn_client_fifo_free(&c->event_q));
}

/* Control events from the events ring into c's queue. */
static bool
take_events(struct rn_client *c)
{
	struct rte_ring *ring = rn_client_events_ring(c->region);
	bool took = false;

	while (rte_ring_count(ring) != 0) {
		uint32_t room = rn_client_fifo_free(&c->event_q);
		struct rn_client_event *ev;

		if (room == 0 ||
		    rte_ring_dequeue_elem(ring, &c->events[c->event_q.tail &
							   c->event_q.mask],
					  sizeof(*ev)) != 0)
			break;
		ev = &c->events[c->event_q.tail++ & c->event_q.mask];
		ev->node[RN_CLIENT_NODE_MAX] = '\0';
		ev->agent[RN_CLIENT_AGENT_MAX] = '\0';
		took = true;
	}
	return took;
}

/*
 * Start the deliver ring of lcore one entry at a time up to its first
 * delivery (held, for the next poll), taking the reports and refusals
 * before it. Returns whether anything new was taken.
 */
static bool
collect_lcore(struct rn_client *c, uint32_t lcore)
{
	struct rte_ring *ring = rn_client_deliver_ring(c->region, lcore);
	struct rn_client_deliver *d = &c->deliver[lcore];
	struct rn_client_entry e;
	bool took = false;

	window_finish(ring, d);
	if (rn_client_fifo_count(&d->held) > d->handed)
		return false;   /* a delivery waits for a poll first */
	while (queue_room(c) != 0 &&
	       rte_ring_dequeue_bulk_elem_start(ring, &e, sizeof(e), 1,
						NULL) == 1) {
		uint32_t pos = d->tail + d->win++;

		took = true;
		if (take_entry(c, lcore, pos, &e))
			break;
	}
	window_finish(ring, d);
	return took;
}

bool
rn_client_collect(struct rn_client *c)
{
	bool took = false;

	for (uint32_t i = 0; i < c->n_lcores; i++)
		took |= collect_lcore(c, i);
	/* Batches final whose XFER_DONE a full deliver ring dropped. */
	took |= rn_client_xfer_collect(c);
	took |= take_events(c);
	return took;
}

bool
rn_client_pending(const struct rn_client *c)
{
	if (rn_client_fifo_count(&c->comp_q) != 0 ||
	    rn_client_fifo_count(&c->event_q) != 0 ||
	    rte_ring_count(rn_client_events_ring(c->region)) != 0 ||
	    rn_client_xfer_pending(c))
		return true;
	for (uint32_t i = 0; i < c->n_lcores; i++) {
		const struct rn_client_deliver *d = &c->deliver[i];

		if (rn_client_fifo_count(&d->held) > d->handed ||
		    rte_ring_count(rn_client_deliver_ring(c->region, i)) >
		    d->win)
			return true;
	}
	return false;
}

/* Deliveries of lcore into out[0..max): the held ones first, then new
 * entries. Returns how many. */
static unsigned int
poll_lcore(struct rn_client *c, uint32_t lcore,
	   struct rn_client_notification *out, unsigned int max)
{
	struct rte_ring *ring = rn_client_deliver_ring(c->region, lcore);
	struct rn_client_deliver *d = &c->deliver[lcore];
	struct rn_client_entry e[RN_CLIENT_POLL_MAX];
	unsigned int got = 0;

	/* Held deliveries not handed yet (a collect met them). */
	while (got < max && rn_client_fifo_count(&d->held) > d->handed) {
		uint32_t pos = d->held_pos[(d->held.head + d->handed) &
					   d->held.mask];

		d->handed++;
		got += read_delivery(c, lcore, pos, &out[got]);
	}
	while (got < max) {
		uint32_t n = rte_ring_dequeue_burst_elem_start(ring, e,
				sizeof(e[0]), min_u32(max - got, queue_room(c)),
				NULL);

		if (n == 0)
			break;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t pos = d->tail + d->win++;

			if (take_entry(c, lcore, pos, &e[i])) {
				d->handed++;
				got += read_delivery(c, lcore, pos, &out[got]);
			}
		}
	}
	return got;
}

/* Give back the buffers of the last poll's deliveries, then fill out. */
static unsigned int
take_deliveries(struct rn_client *c, struct rn_client_notification *out,
		unsigned int max)
{
	unsigned int got = 0;

	for (uint32_t i = 0; i < c->n_lcores; i++) {
		struct rn_client_deliver *d = &c->deliver[i];

		d->held.head += d->handed;
		d->handed = 0;
		window_finish(rn_client_deliver_ring(c->region, i), d);
	}
	for (uint32_t i = 0; i < c->n_lcores && got < max; i++)
		got += poll_lcore(c, i, out + got, max - got);
	take_events(c);
	return got;
}

int
rn_client_poll(struct rn_client *c, struct rn_client_notification *out,
	       unsigned int max)
{
	unsigned int got;
	int rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	if (max > RN_CLIENT_POLL_MAX)
		max = RN_CLIENT_POLL_MAX;
	got = take_deliveries(c, out, max);
	if (got != 0)
		return (int)got;   /* the caller comes back until 0 */
	if (!rn_client_pending(c) && rn_client_arm(c))
		got = take_deliveries(c, out, max);
	if (got == 0 && rn_client_pending(c))
		rn_client_keep_readable(c);   /* reports or events wait */
	return (int)got;
}

/*
 * What rn_client_completions() and rn_client_events() share: take what
 * the rings hold into c's queues, arm when nothing at all waits, then
 * move up to max items of the queue q (items of size bytes) to out.
 */
static int
take_queued(struct rn_client *c, struct rn_client_fifo *q, const void *items,
	    size_t size, void *out, unsigned int max)
{
	unsigned int n = 0;
	int rc = rn_client_alive(c, false);

	if (rc != 0)
		return rc;
	rn_client_collect(c);
	if (rn_client_fifo_count(q) == 0 && !rn_client_pending(c) &&
	    rn_client_arm(c))
		rn_client_collect(c);
	for (; n < max && rn_client_fifo_count(q) != 0; n++)
		memcpy((uint8_t *)out + n * size,
		       (const uint8_t *)items + (q->head++ & q->mask) * size,
		       size);
	if (n == 0 && rn_client_pending(c))
		rn_client_keep_readable(c);   /* the other kinds wait */
	return (int)n;
}

int
rn_client_completions(struct rn_client *c, struct rn_client_completion *out,
		      unsigned int max)
{
	return take_queued(c, &c->comp_q, c->comps, sizeof(*out), out, max);
}

int
rn_client_events(struct rn_client *c, struct rn_client_event *out,
		 unsigned int max)
{
	return take_queued(c, &c->event_q, c->events, sizeof(*out), out, max);
}
