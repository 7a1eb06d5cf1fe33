/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Client processes on the lcore (rn_lcore_client.h, rn_client_shm.h): each
 * turn, each attached client's submit ring of this lcore is peeked and its
 * SENDs posted as agent frames on the endpoints' native channels, the
 * source agent written from the client's link (a client cannot forge it);
 * an entry that cannot go for want of a credit stays at the head. Agent
 * frames received are copied once into the destination client's receive
 * buffer and their slot reposted at once; one whose client's deliver ring
 * is full is held, slot and all, and tried again each turn, up to [client]
 * hold_max for that client, past which it is refused as busy (a refusal
 * for it dropped). A frame for an agent not attached here is dropped and
 * refused: a refusal frame, with why, goes back on the same channel, and
 * comes to the sending client as a REFUSED entry.
 *
 * Nothing in a region is trusted (docs/security.md): the region's shape is
 * read once, at CLIENT_ADD, into the lcore's own copy; the rings are read
 * and written at the lcore's own positions, within that shape
 * (rn_client_ring_end.h); each entry and send buffer header is read once
 * into locals, and checked against that copy before a length is used.
 */
#include <errno.h>
#include <string.h>

#include <rte_malloc.h>

#include "lcore_post_pvt.h"
#include "lcore_pvt.h"
#include "rn_client_region.h"
#include "rn_client_ring_end.h"
#include "rn_lcore_client.h"

_Static_assert(RN_NOTIFY_AGENT_MAX == RN_CLIENT_AGENT_MAX,
	       "an agent name fits a frame");
_Static_assert(RN_NOTIFY_AGENT_MAX == 128, "deliver_fast() checks a bit");
_Static_assert(offsetof(struct rn_notify_agent_hdr, dst_len) == 4 &&
	       offsetof(struct rn_notify_agent_hdr, src_len) == 5 &&
	       offsetof(struct rn_notify_agent_hdr, reason) == 6,
	       "deliver_fast() reads them in the first word");
_Static_assert(RN_LCORE_MAX_CLIENTS <= 64, "to_wake is a 64-bit mask");
_Static_assert(RN_LCORE_MAX_CLIENTS == 1u << RN_CLIENT_SLOT_BITS,
	       "an attachment id holds its slot");
_Static_assert(sizeof(struct rn_client_send_hdr) ==
	       sizeof(struct rn_notify_agent_hdr),
	       "a send buffer is no longer than its agent frame, less src");
_Static_assert(sizeof(((struct rn_client_recv_hdr *)0)->node) ==
	       sizeof(((struct rn_ep_side *)0)->name), "node names");

/*
 * The agent table: agent name -> client, at most RN_LCORE_MAX_CLIENTS
 * entries, looked up once per agent frame received. Open addressing over
 * twice as many buckets as clients (so a probe always ends at an empty
 * one), keyed by a hash of the name's length and its first and last eight
 * bytes: O(1) whatever the length (a NIXL agent is a 36-byte UUID, whose
 * ends differ), then one full compare of the name. Names that share both
 * ends only probe further, at most RN_LCORE_MAX_CLIENTS buckets. Rebuilt
 * whole at each CLIENT_ADD and REMOVE (64 inserts, on the command path),
 * so there are no tombstones. Before it, the client found last is tried:
 * a stream to one agent then costs one compare of the name.
 */
#define AGENT_BUCKETS (2 * RN_LCORE_MAX_CLIENTS)
#define HELD_NONE UINT32_MAX

/* A received agent frame (or refusal) held for its client: its slot. */
struct lcore_held {
	struct rn_lcore_ep *ep;
	uint32_t index;          /* receive slot of ep */
	uint32_t len;
	uint32_t next;           /* in its client's queue, or the free list */
};

/* One attached client, as this lcore knows it: its own copy of the shape
 * of its region, taken at CLIENT_ADD. */
struct lcore_client {
	struct rn_client_link *link;   /* NULL: a free slot */
	struct rn_client_ring_end submit;   /* submit[i] for this lcore's i */
	struct rn_client_ring_end deliver;
	uint8_t *send_bufs;
	uint8_t *recv_bufs;
	uint32_t buf_size;
	uint32_t id;                   /* new at each CLIENT_ADD here, its
					* slot in c[] in the low bits
					* (client_slot()); not 0 */
	uint32_t held_head, held_tail; /* its held frames, oldest first */
	uint32_t n_held;               /* how many: lc->client_hold_max at
					 * most */
	uint8_t agent_len;
	const uint8_t *agent;          /* the link's: the daemon's memory */
	uint64_t agent_word;           /* its agent frames' first header
					* word, less dst_len */
};

/* Its place in c[]. */
static inline uint32_t
client_slot(const struct lcore_client *c)
{
	return c->id & (RN_LCORE_MAX_CLIENTS - 1);
}

/* A client's hot fields, in two cache lines. */
_Static_assert(sizeof(struct lcore_client) <= 128, "two cache lines");

struct rn_lcore_clients {
	uint64_t to_wake;              /* slots enqueued for this turn */
	uint32_t n_active;
	uint32_t next_id;
	uint32_t n_holding;            /* clients with frames held */
	struct lcore_client *last;     /* found last; NULL after a change */
	uint8_t active[RN_LCORE_MAX_CLIENTS];   /* slots in use */
	uint8_t bucket[AGENT_BUCKETS]; /* slot + 1; 0 empty */
	uint32_t bucket_hash[AGENT_BUCKETS];
	struct lcore_client c[RN_LCORE_MAX_CLIENTS];
	/* Every receive slot of the lcore may be held at once, at most. */
	uint32_t held_free;
	uint32_t n_held;
	struct lcore_held *held;
};

void
rn_lcore_set_client_sleeping(struct rn_lcore *lc, uint32_t index,
			     uint32_t *sleeping)
{
	lc->client_index = index;
	lc->client_sleeping = sleeping;
}

/* ---- the agent table ---- */

static inline uint32_t
agent_hash(const uint8_t *p, uint32_t len)
{
	uint64_t a, b;

	if (len >= 8) {
		memcpy(&a, p, 8);
		memcpy(&b, p + len - 8, 8);
	} else if (len >= 4) {
		uint32_t x, y;

		memcpy(&x, p, 4);
		memcpy(&y, p + len - 4, 4);
		a = x;
		b = y;
	} else {
		a = p[0] | (uint32_t)p[len / 2] << 8 | (uint32_t)p[len - 1] << 16;
		b = 0;
	}
	a ^= (b << 29 | b >> 35) ^ len;
	return (uint32_t)((a * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Whether the 16 bytes at x and y differ: nonzero if so. */
static inline uint64_t
differ16(const uint8_t *x, const uint8_t *y)
{
	uint64_t a[2], b[2];

	memcpy(a, x, 16);
	memcpy(b, y, 16);
	return (a[0] ^ b[0]) | (a[1] ^ b[1]);
}

/* Whether the 8 bytes at x and y differ: nonzero if so. */
static inline uint64_t
differ8(const uint8_t *x, const uint8_t *y)
{
	uint64_t a, b;

	memcpy(&a, x, 8);
	memcpy(&b, y, 8);
	return a ^ b;
}

/* Whether the len bytes at x and y are equal, len >= 1: sixteen at a
 * time, the last sixteen overlapping; up to 64 bytes (a UUID's 36 in
 * three) without a branch between the blocks. From 8 to 15 bytes, two
 * overlapping words: a call to memcmp() cost a delivery some twenty
 * instructions more. */
static inline bool
agent_equal(const uint8_t *x, const uint8_t *y, uint32_t len)
{
	uint64_t d;

	if (len < 8)
		return memcmp(x, y, len) == 0;
	if (len < 16)
		return (differ8(x, y) | differ8(x + len - 8, y + len - 8)) == 0;
	d = differ16(x, y) | differ16(x + len - 16, y + len - 16);
	if (len > 32) {
		d |= differ16(x + 16, y + 16);
		if (len > 48)
			d |= differ16(x + 32, y + 32);
	}
	for (uint32_t i = 48; d == 0 && i + 16 < len; i += 16)
		d = differ16(x + i, y + i);
	return d == 0;
}

static struct lcore_client *
agent_find(struct rn_lcore_clients *cs, const uint8_t *name, uint32_t len)
{
	uint32_t h = agent_hash(name, len);

	for (uint32_t b = h % AGENT_BUCKETS; cs->bucket[b] != 0;
	     b = (b + 1) % AGENT_BUCKETS) {
		struct lcore_client *c = &cs->c[cs->bucket[b] - 1];

		if (cs->bucket_hash[b] == h && c->agent_len == len &&
		    agent_equal(c->agent, name, len))
			return c;
	}
	return NULL;
}

/* The client of agent name: the one found last, or the table's. */
static inline struct lcore_client *
agent_lookup(struct rn_lcore_clients *cs, const uint8_t *name, uint32_t len)
{
	struct lcore_client *c = cs->last;

	if (c != NULL && c->agent_len == len && agent_equal(c->agent, name, len))
		return c;
	c = agent_find(cs, name, len);
	if (c != NULL)
		cs->last = c;
	return c;
}

static void
agent_table_build(struct rn_lcore_clients *cs)
{
	cs->last = NULL;
	memset(cs->bucket, 0, sizeof(cs->bucket));
	for (uint32_t i = 0; i < cs->n_active; i++) {
		uint32_t slot = cs->active[i];
		const struct lcore_client *c = &cs->c[slot];
		uint32_t h = agent_hash(c->agent, c->agent_len);
		uint32_t b = h % AGENT_BUCKETS;

		while (cs->bucket[b] != 0)
			b = (b + 1) % AGENT_BUCKETS;
		cs->bucket[b] = (uint8_t)(slot + 1);
		cs->bucket_hash[b] = h;
	}
}

/* ---- the deliver ring ---- */

static inline void
wake_later(struct rn_lcore_clients *cs, const struct lcore_client *c)
{
	cs->to_wake |= 1ull << client_slot(c);
}

/*
 * An entry for c's deliver ring: deliver_start() gives the receive buffer
 * of the position it will take (NULL when the ring is full), to be
 * written before deliver_finish() publishes the entry. This lcore is the
 * ring's only producer, so the position stays free between the two.
 */
static inline uint8_t *
deliver_start(struct lcore_client *c)
{
	if (!rn_client_ring_end_room(&c->deliver))
		return NULL;
	return c->recv_bufs + (size_t)(c->deliver.pos & c->deliver.mask) *
			      c->buf_size;
}

static __rte_always_inline void
deliver_finish(struct rn_lcore_clients *cs, struct lcore_client *c,
	       const struct rn_client_entry *e)
{
	memcpy(rn_client_ring_end_at(&c->deliver, 0, sizeof(*e)), e,
	       sizeof(*e));
	rn_client_ring_end_put(&c->deliver);
	wake_later(cs, c);
}

/* A COMPLETION entry: false when the ring is full. */
static bool
complete(struct rn_lcore_clients *cs, struct lcore_client *c, uint64_t cookie,
	 int status)
{
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_COMPLETION,
				     .status = status, .cookie = cookie };

	if (deliver_start(c) == NULL)
		return false;
	deliver_finish(cs, c, &e);
	return true;
}

void
rn_lcore_client_report(struct rn_lcore *lc, const struct rn_client_sent *s,
		       int status)
{
	struct rn_lcore_clients *cs = lc->clients;
	struct lcore_client *c;

	if (cs == NULL)
		return;
	c = &cs->c[s->id & (RN_LCORE_MAX_CLIENTS - 1)];
	if (c->link == NULL || c->id != s->id)
		return;      /* removed meanwhile: nobody to tell */
	if (!complete(cs, c, s->cookie, status))
		rn_lcore_count(&lc->stats.reports_dropped, 1);
}

bool
rn_lcore_client_xfer_done(struct rn_lcore *lc, uint32_t slot, uint32_t id,
			  struct rn_client_entry *e)
{
	struct rn_lcore_clients *cs = lc->clients;
	struct lcore_client *c;

	if (cs == NULL || slot >= RN_LCORE_MAX_CLIENTS)
		return false;
	c = &cs->c[slot];
	if (c->link == NULL || c->id != id)
		return false;      /* removed meanwhile: nobody to tell */
	if (deliver_start(c) == NULL) {
		rn_lcore_count(&lc->stats.reports_dropped, 1);
		return false;
	}
	deliver_finish(cs, c, e);
	return true;
}

/* ---- receiving ---- */

/*
 * A delivery from ep into the receive buffer buf: the sender's node, then
 * name, msg and its agent (src_len bytes), which follow one another from
 * name on in the frame as in the buffer (one copy). Field by field: a
 * header struct went to the stack.
 */
static __rte_always_inline void
delivery_write(uint8_t *buf, const struct rn_lcore_ep *ep,
	       const uint8_t *name, uint8_t src_len, uint32_t name_len,
	       uint32_t msg_len)
{
	struct rn_client_recv_hdr *r = (struct rn_client_recv_hdr *)buf;

	memcpy(r->node, ep->req->remote.name, sizeof(r->node));
	r->name_len = name_len;
	r->msg_len = msg_len;
	r->agent_len = src_len;
	memset(r->pad, 0, sizeof(r->pad));
	rn_notify_copy_long(buf + sizeof(*r), name,
			    name_len + msg_len + src_len);
}

/* Hand the agent frame v (validated) from ep to c. False when the
 * deliver ring is full. */
static bool
deliver_frame(struct rn_lcore *lc, struct lcore_client *c,
	      const struct rn_lcore_ep *ep,
	      const struct rn_notify_agent_view *v)
{
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_DELIVERY,
				     .ep_index = (uint16_t)ep->req->ep_index };
	uint8_t *buf = deliver_start(c);

	if (buf == NULL)
		return false;
	delivery_write(buf, ep, v->name, v->src_len, v->name_len, v->msg_len);
	deliver_finish(lc->clients, c, &e);
	rn_lcore_count(&lc->stats.client_delivered, 1);
	return true;
}

/* A refusal from ep, for c: a REFUSED entry, its buffer an event. */
static bool
deliver_refusal(struct rn_lcore *lc, struct lcore_client *c,
		const struct rn_lcore_ep *ep,
		const struct rn_notify_agent_view *v)
{
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_REFUSED,
				     .ep_index = (uint16_t)ep->req->ep_index,
				     .cookie = v->cookie };
	struct rn_client_event ev = {
		.type = RN_CLIENT_EVENT_REFUSED, .cookie = v->cookie,
		.status = v->reason == RN_NOTIFY_REFUSED_BUSY ? -ENOBUFS :
								-ENOENT,
	};
	uint8_t *buf = deliver_start(c);

	if (buf == NULL)
		return false;
	memcpy(ev.node, ep->req->remote.name, sizeof(ev.node));
	memcpy(ev.agent, v->src, v->src_len);   /* the agent refused */
	memcpy(buf, &ev, sizeof(ev));
	deliver_finish(lc->clients, c, &e);
	return true;
}

/* What becomes of a frame for c: handed over (true), or it waits. */
static bool
hand_over(struct rn_lcore *lc, struct lcore_client *c,
	  const struct rn_lcore_ep *ep, const struct rn_notify_agent_view *v)
{
	return v->kind == RN_NOTIFY_KIND_AGENT ? deliver_frame(lc, c, ep, v) :
						 deliver_refusal(lc, c, ep, v);
}

/* Whether c's receive buffer takes what v hands over. */
static bool
fits(const struct lcore_client *c, const struct rn_notify_agent_view *v)
{
	uint64_t need = v->kind == RN_NOTIFY_KIND_AGENT ?
		sizeof(struct rn_client_recv_hdr) + (uint64_t)v->src_len +
		v->name_len + v->msg_len : sizeof(struct rn_client_event);

	return need <= c->buf_size;
}

/* Hold slot index of ep for c, behind what c holds already. */
static void
hold(struct rn_lcore *lc, struct lcore_client *c, struct rn_lcore_ep *ep,
     uint32_t index, uint32_t len)
{
	struct rn_lcore_clients *cs = lc->clients;
	uint32_t i = cs->held_free;
	struct lcore_held *h;

	/* Every slot of the lcore has a record, so one is free; should
	 * none be, the frame is dropped rather than anything overrun. */
	if (unlikely(i == HELD_NONE)) {
		rn_lcore_count(&lc->stats.notify_rejected, 1);
		rn_lcore_notify_repost(lc, ep, index, false);
		return;
	}
	h = &cs->held[i];
	cs->held_free = h->next;
	*h = (struct lcore_held){ .ep = ep, .index = index, .len = len,
				  .next = HELD_NONE };
	if (c->held_head == HELD_NONE) {
		c->held_head = i;
		cs->n_holding++;
	} else {
		cs->held[c->held_tail].next = i;
	}
	c->held_tail = i;
	c->n_held++;
	ep->n.held++;
	rn_lcore_count(&lc->stats.client_held, 1);
}

/* c's oldest held frame is done with: its slot back. */
static void
unhold(struct rn_lcore *lc, struct lcore_client *c)
{
	struct rn_lcore_clients *cs = lc->clients;
	uint32_t i = c->held_head;
	struct lcore_held *h = &cs->held[i];

	c->held_head = h->next;
	c->n_held--;
	if (c->held_head == HELD_NONE)
		cs->n_holding--;
	rn_lcore_notify_repost(lc, h->ep, h->index, true);
	h->next = cs->held_free;
	cs->held_free = i;
}

/* c's held frames, oldest first, while its deliver ring takes them. Out
 * of line: the poll of clients that hold none keeps a small frame. */
static __rte_noinline unsigned int
retry_held(struct rn_lcore *lc, struct lcore_client *c)
{
	unsigned int n = 0;

	while (c->held_head != HELD_NONE) {
		const struct lcore_held *h = &lc->clients->held[c->held_head];
		const struct rn_lcore_ep *ep = h->ep;
		struct rn_notify_agent_view v;

		/* Read when it came; the slot has not been reposted since. */
		if (rn_notify_agent_frame_read(rn_lcore_ep_recv_slot(ep,
								     h->index),
					       h->len, &v) == 0 &&
		    !hand_over(lc, c, ep, &v))
			break;
		unhold(lc, c);
		n++;
	}
	return n;
}

/* Refuse the agent frame v on ep's channel, while its agents are still
 * in the slot: its agent dst is not attached here (ABSENT), or holds
 * hold_max frames it has not taken (BUSY). */
static __rte_cold void
refuse(struct rn_lcore *lc, struct rn_lcore_ep *ep,
       const struct rn_notify_agent_view *v, enum rn_notify_refusal reason)
{
	struct rn_lcore_agent_out a = {
		.kind = RN_NOTIFY_KIND_REFUSAL, .reason = (uint16_t)reason,
		.cookie = v->cookie, .inline_max = ep->n.agent_inline,
		.dst = v->src, .dst_len = v->src_len,   /* to the sender */
		.src = v->dst, .src_len = v->dst_len,   /* the one refused */
	};
	uint64_t len = rn_notify_agent_frame_size(a.dst_len, a.src_len, 0, 0);

	rn_lcore_count(reason == RN_NOTIFY_REFUSED_BUSY ?
		       &lc->stats.client_busy : &lc->stats.client_refused, 1);
	/* A closing endpoint's QP is in ERR: the refusal would be flushed
	 * (its early receives are delivered as it closes). */
	if (!ep->closing && ep->n.state == RN_CHANNEL_NATIVE &&
	    len <= ep->n.max_frame &&
	    rn_lcore_notify_post_agent(lc, ep, &a, len) == 0) {
		rn_lcore_notify_ring(ep);
		rn_lcore_count(&lc->stats.notify_sent, 1);
		return;
	}
	rn_lcore_count(&lc->stats.refusals_dropped, 1);
}

/* What is not the common case of a frame received: a refusal, an agent
 * not attached here (c NULL), a frame too large for c's buffers, or c's
 * deliver ring full or frames held before it. */
static __rte_noinline __rte_cold void
received_other(struct rn_lcore *lc, struct lcore_client *c,
	       struct rn_lcore_ep *ep, const struct rn_notify_agent_view *v,
	       uint32_t index, uint32_t len)
{
	if (unlikely(c == NULL || !fits(c, v))) {
		/* A refusal for an agent gone is dropped; an agent frame
		 * too large for the client's buffers is, like a malformed
		 * one, rejected (the sending lcore checks it against this
		 * node's slot size, which is the buffers' size). */
		if (c != NULL)
			rn_lcore_count(&lc->stats.notify_rejected, 1);
		else if (v->kind == RN_NOTIFY_KIND_AGENT)
			refuse(lc, ep, v, RN_NOTIFY_REFUSED_ABSENT);
		rn_lcore_notify_repost(lc, ep, index, false);
		return;
	}
	if (c->held_head == HELD_NONE && hand_over(lc, c, ep, v)) {
		rn_lcore_notify_repost(lc, ep, index, false);
	} else if (c->n_held < lc->client_hold_max) {
		hold(lc, c, ep, index, len);
	} else {
		/* Its slot would be one more of the node pair's kept for a
		 * client that does not take them: an agent frame goes back
		 * to its sender, a refusal (news for a client that does not
		 * take its events) is dropped, so that the pair's other
		 * agents keep their slots. */
		if (v->kind == RN_NOTIFY_KIND_AGENT)
			refuse(lc, ep, v, RN_NOTIFY_REFUSED_BUSY);
		else
			rn_lcore_count(&lc->stats.refusals_dropped, 1);
		rn_lcore_notify_repost(lc, ep, index, false);
	}
}

/*
 * The common case of an agent frame of len bytes at frame (at least its
 * header), for a client that holds nothing, with room in its deliver ring
 * and its buffer: the frame read by hand, with the checks of
 * rn_notify_agent_frame_read() for an AGENT (whose view the compiler kept
 * on the stack), and written into the client's receive buffer. Returns
 * the client, whose entry is still to be enqueued, or NULL: anything
 * else is received_other()'s, after the full reader.
 */
static __rte_always_inline struct lcore_client *
deliver_fast(struct rn_lcore *lc, const struct rn_lcore_ep *ep,
	     const uint8_t *frame, uint32_t len)
{
	const struct rn_notify_agent_hdr *h = (const void *)frame;
	uint32_t name_len, msg_len;
	uint8_t dst_len, src_len;
	struct lcore_client *c;
	uint64_t body, head;
	uint8_t *buf;

	/* Field by field: a copy of the whole header went to the stack.
	 * Its first word whole: kind, dst_len, src_len and reason, checked
	 * at once (an AGENT's reason is 0; agents of 1..128 bytes have
	 * length - 1 below 128, so their OR too). */
	memcpy(&head, h, 8);
	memcpy(&name_len, &h->name_len, 4);
	memcpy(&msg_len, &h->msg_len, 4);
	head = rte_le_to_cpu_64(head);
	dst_len = (uint8_t)(head >> 32);
	src_len = (uint8_t)(head >> 40);
	name_len = rte_le_to_cpu_32(name_len);
	msg_len = rte_le_to_cpu_32(msg_len);
	/* In 64 bits: two lengths from the wire cannot wrap the sum. */
	body = (uint64_t)name_len + msg_len;
	if (unlikely((head & 0xffff0000ffffffffull) != RN_NOTIFY_KIND_AGENT ||
		     (uint8_t)((dst_len - 1) | (src_len - 1)) >=
		     RN_NOTIFY_AGENT_MAX ||
		     sizeof(*h) + dst_len + src_len + body != len ||
		     lc->clients == NULL))
		return NULL;
	c = agent_lookup(lc->clients, frame + sizeof(*h), dst_len);
	if (unlikely(c == NULL || c->held_head != HELD_NONE ||
		     sizeof(struct rn_client_recv_hdr) + src_len + body >
		     c->buf_size))
		return NULL;
	buf = deliver_start(c);
	if (unlikely(buf == NULL))
		return NULL;
	delivery_write(buf, ep, frame + sizeof(*h) + dst_len, src_len,
		       name_len, msg_len);
	return c;
}

/*
 * The common case whole: an agent frame deliver_fast() takes, handed over,
 * its slot reposted (true); false with nothing done. Inlined in
 * rn_lcore_client_received(), whose other cases go out of line, so that
 * the common one keeps no view of a frame and few registers.
 */
static __rte_always_inline bool
deliver_common(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	       const uint8_t *frame, uint32_t index, uint32_t len)
{
	struct lcore_client *c;
	struct rn_client_entry e = { .type = RN_CLIENT_ENTRY_DELIVERY };

	if (unlikely(len < sizeof(struct rn_notify_agent_hdr)))
		return false;
	c = deliver_fast(lc, ep, frame, len);
	if (unlikely(c == NULL))
		return false;
	e.ep_index = (uint16_t)ep->req->ep_index;
	deliver_finish(lc->clients, c, &e);
	rn_lcore_count(&lc->stats.client_delivered, 1);
	rn_lcore_notify_repost(lc, ep, index, false);
	return true;
}

/* A frame deliver_common() did not take, read by the full reader: 0, or
 * -EBADMSG when it is of no client kind. */
static __rte_noinline int
frame_other(struct rn_lcore *lc, struct rn_lcore_ep *ep, const uint8_t *frame,
	    uint32_t index, uint32_t len)
{
	struct rn_notify_agent_view v;

	if (rn_notify_agent_frame_read(frame, len, &v) != 0)
		return -EBADMSG;
	received_other(lc, lc->clients != NULL ?
		       agent_lookup(lc->clients, v.dst, v.dst_len) : NULL,
		       ep, &v, index, len);
	return 0;
}

int
rn_lcore_client_frame(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		      const uint8_t *frame, uint32_t index, uint32_t len)
{
	if (deliver_common(lc, ep, frame, index, len))
		return 0;
	return frame_other(lc, ep, frame, index, len);
}

/* The plain SEND wc that deliver_common() did not take. */
static __rte_noinline void
received_send_other(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		    const struct rn_wc *wc)
{
	uint32_t index = RN_EP_WR_INDEX(wc->wr_id);

	if (frame_other(lc, ep, ep->n.recv_slots +
			(size_t)index * lc->notify.slot_size, index,
			wc->byte_len) != 0)
		rn_lcore_notify_received(lc, ep, wc);
}

void
rn_lcore_client_received(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			 const struct rn_wc *wc)
{
	uint32_t index = RN_EP_WR_INDEX(wc->wr_id);

	if (unlikely(!deliver_common(lc, ep, ep->n.recv_slots +
				     (size_t)index * lc->notify.slot_size,
				     index, wc->byte_len)))
		received_send_other(lc, ep, wc);
}

/* ---- sending ---- */

/* The send buffer of c's submit position pos. */
static inline const uint8_t *
send_buf(const struct lcore_client *c, uint32_t pos)
{
	return c->send_bufs + (size_t)(pos & c->submit.mask) * c->buf_size;
}

/*
 * What the client writes (entry_read(), send_hdr_read()), each word read
 * once. The client may write it while it is read, so the reads are
 * relaxed atomic loads: plain ones the compiler may repeat, and did
 * (send_fast() wrote a frame's lengths from a second read of them, not
 * the one its checks and its size took, and the peer rejected the frame
 * and counted it in the embedded API's send order). They cost what plain
 * loads do.
 */

/* The submit entry at (16-byte aligned, as rte_ring lays them out). */
static __rte_always_inline struct rn_client_entry
entry_read(const void *at)
{
	const uint64_t *w = at;
	uint64_t word[2] = { __atomic_load_n(&w[0], __ATOMIC_RELAXED),
			     __atomic_load_n(&w[1], __ATOMIC_RELAXED) };
	struct rn_client_entry e;

	memcpy(&e, word, sizeof(e));
	return e;
}

/* The header of the send buffer buf (64-byte aligned): its two pairs of
 * 32-bit fields in one load each. */
static __rte_always_inline struct rn_client_send_hdr
send_hdr_read(const uint8_t *buf)
{
	const struct rn_client_send_hdr *h = (const void *)buf;
	/* Its words 0 and 1 (the asserts below): buf is aligned. */
	const uint64_t *w = __builtin_assume_aligned(buf, 8);
	uint64_t tag_flags = __atomic_load_n(&w[0], __ATOMIC_RELAXED);
	uint64_t lens = __atomic_load_n(&w[1], __ATOMIC_RELAXED);
	struct rn_client_send_hdr r = {
		.agent_len = __atomic_load_n(&h->agent_len, __ATOMIC_RELAXED),
	};

	memcpy(&r.ep_tag, &tag_flags, sizeof(tag_flags));
	memcpy(&r.name_len, &lens, sizeof(lens));
	return r;
}
_Static_assert(offsetof(struct rn_client_send_hdr, ep_tag) == 0 &&
	       offsetof(struct rn_client_send_hdr, flags) == 4 &&
	       offsetof(struct rn_client_send_hdr, name_len) == 8 &&
	       offsetof(struct rn_client_send_hdr, msg_len) == 12,
	       "send_hdr_read() reads the pairs as words");

/*
 * The endpoint of the SEND e whose header h (read once) passes the checks
 * both ways of posting it make: a SEND entry, an endpoint of this lcore
 * with the tag the client looked up and a native channel, an agent of 1
 * to RN_CLIENT_AGENT_MAX bytes, no flag but WANT_COMPLETION. NULL
 * otherwise, for send_entry() to say why.
 */
static __rte_always_inline struct rn_lcore_ep *
send_endpoint(const struct rn_lcore *lc, const struct rn_client_entry *e,
	      const struct rn_client_send_hdr *h)
{
	struct rn_lcore_ep *ep;

	if (unlikely(e->type != RN_CLIENT_ENTRY_SEND ||
		     e->ep_index >= RN_MAX_ENDPOINTS))
		return NULL;
	ep = lc->by_index[e->ep_index];
	if (unlikely(ep == NULL || ep->req->peer_tag != h->ep_tag ||
		     ep->n.state != RN_CHANNEL_NATIVE ||
		     (uint8_t)(h->agent_len - 1) >= RN_CLIENT_AGENT_MAX ||
		     (h->flags & ~RN_CLIENT_WANT_COMPLETION) != 0))
		return NULL;
	return ep;
}

/*
 * The SEND e at submit position pos of c that send_fast() did not post,
 * when it does not go inline: checked, written into the send buffer of
 * its window entry (the daemon's memory, which the NIC reads) and posted
 * by a data segment, as the embedded API's post_from_buf() does, on the
 * endpoint it returns. Within client_frame, it fits the peer's slot and
 * its client's receive buffer there, and its bytes here lie within c's
 * send buffer (client_shape(): not smaller than a slot). NULL, with
 * nothing posted, for send_entry(). Apart from send_fast(), which then
 * keeps its registers: the buffer is read again, and checked again.
 */
static __rte_noinline struct rn_lcore_ep *
send_from_buf(struct rn_lcore *lc, const struct lcore_client *c,
	      const struct rn_client_entry *e, uint32_t pos)
{
	const uint8_t *buf = send_buf(c, pos);
	/* Once: the client may write it meanwhile. */
	struct rn_client_send_hdr h = send_hdr_read(buf);
	uint64_t body = (uint64_t)h.name_len + h.msg_len;
	struct rn_lcore_ep *ep;
	struct send_head head;
	struct rn_sge sge;
	uint8_t *frame;
	uint64_t len;

	ep = send_endpoint(lc, e, &h);
	len = sizeof(struct rn_notify_agent_hdr) + (uint64_t)h.agent_len +
	      c->agent_len + body;
	if (ep == NULL || len > ep->n.client_frame || !entry_and_credit(ep))
		return NULL;
	frame = rn_notify_send_buf(&lc->notify, (uint32_t)ep->bay,
				   rn_send_window_next(&ep->n.sends));
	rn_notify_agent_frame_put(frame,
				  c->agent_word | (uint64_t)h.agent_len << 32,
				  rn_notify_agent_lens(h.name_len, h.msg_len),
				  e->cookie, buf + sizeof(h),
				  h.agent_len + (uint32_t)body, c->agent,
				  c->agent_len);
	head = next_send(&ep->n, h.flags != 0);
	sge = (struct rn_sge){ (uintptr_t)frame, (uint32_t)len,
			       lc->notify.mr.lkey };
	if (rn_sq_post_send_sge(&ep->n.qp->sq, &sge, RN_WR_SEND,
				rn_notify_imm(0), head.flags,
				head.wr_id) != 0)
		return NULL;
	push_client(&ep->n, e->cookie, c->id, head.want);
	return ep;
}

/*
 * The common SEND e at submit position pos of c: to a native channel,
 * inline, a window entry and a credit at hand, checked and written
 * straight into its WQE on the endpoint it returns. NULL, with nothing
 * posted, for send_from_buf() or send_entry() to take it; the buffer is
 * then read again, and checked again.
 */
static __rte_always_inline struct rn_lcore_ep *
send_fast(struct rn_lcore *lc, const struct lcore_client *c,
	  const struct rn_client_entry *e, uint32_t pos)
{
	const uint8_t *buf = send_buf(c, pos);
	/* Once: the client may write it meanwhile. */
	struct rn_client_send_hdr h = send_hdr_read(buf);
	uint64_t body = (uint64_t)h.name_len + h.msg_len;
	struct rn_lcore_ep *ep;
	struct rn_sq_place at;
	struct send_head head;
	uint64_t len;

	ep = send_endpoint(lc, e, &h);
	len = sizeof(struct rn_notify_agent_hdr) + (uint64_t)h.agent_len +
	      c->agent_len + body;
	/* Inline when its name and msg would be, in a node-level frame.
	 * Within client_inline (within agent_inline, what the SQ takes), it
	 * fits the peer's slot and its client's receive buffer there, and
	 * its buffer here lies within c's send buffer (client_shape(): not
	 * smaller than a slot). */
	if (unlikely(ep == NULL ||
		     RN_NOTIFY_OVERHEAD + body > lc->max_inline ||
		     len > ep->n.client_inline || !entry_and_credit(ep) ||
		     !rn_sq_send_inline_place(&ep->n.qp->sq, (uint32_t)len,
					      &at)))
		return NULL;
	/* The WQE and the window entry first, then the frame: the copies'
	 * stores may alias anything, to the compiler, and the other order
	 * kept more of the SEND's values on the stack across them. Safe as
	 * long as the frame is written before the doorbell, which is the
	 * caller's (rn_sq_ring_doorbell_posted()): the NIC reads a WQE only
	 * after it. */
	head = post_placed(&ep->n, &at, (uint32_t)len, RN_WR_SEND,
			   rn_notify_imm(0), h.flags != 0);
	push_client(&ep->n, e->cookie, c->id, head.want);
	rn_notify_agent_frame_put(at.data,
				  c->agent_word | (uint64_t)h.agent_len << 32,
				  rn_notify_agent_lens(h.name_len, h.msg_len),
				  e->cookie, buf + sizeof(h),
				  h.agent_len + (uint32_t)body, c->agent,
				  c->agent_len);
	return ep;
}

/*
 * The SEND entry e at submit position pos of c, when send_fast() did not
 * post it: checked, then posted on its endpoint (*out), inline or from a
 * send buffer. Returns 0, -EAGAIN (no credit or room now: it stays at the
 * head), or the error its completion reports.
 */
static __rte_noinline int
send_entry(struct rn_lcore *lc, const struct lcore_client *c,
	   const struct rn_client_entry *e, uint32_t pos,
	   struct rn_lcore_ep **out)
{
	const uint8_t *buf = send_buf(c, pos);
	struct rn_client_send_hdr h;
	struct rn_lcore_agent_out a;
	struct rn_lcore_ep *ep;
	uint64_t len;

	h = send_hdr_read(buf);
	if (unlikely(e->type != RN_CLIENT_ENTRY_SEND ||
		     e->ep_index >= RN_MAX_ENDPOINTS))
		return e->type != RN_CLIENT_ENTRY_SEND ? -EINVAL : -ENOENT;
	ep = lc->by_index[e->ep_index];
	if (unlikely(ep == NULL))
		return -ENOTCONN;      /* failed, closing, or not this lcore's */
	if (unlikely(ep->req->peer_tag != h.ep_tag))
		return -ENOENT;        /* another peer has that index now */
	if (unlikely(ep->n.state != RN_CHANNEL_NATIVE))
		return -ENOTSUP;
	if (unlikely(h.agent_len == 0 || h.agent_len > RN_CLIENT_AGENT_MAX ||
		     (h.flags & ~RN_CLIENT_WANT_COMPLETION) != 0 ||
		     sizeof(h) + (uint64_t)h.agent_len + h.name_len +
		     h.msg_len > c->buf_size))
		return -EINVAL;
	len = rn_notify_agent_frame_size(h.agent_len, c->agent_len,
					 h.name_len, h.msg_len);
	/* It must fit the peer's slot, and its client's receive buffer
	 * there (the peer's slot size too). */
	if (unlikely(len > ep->n.max_frame ||
		     sizeof(struct rn_client_recv_hdr) + (uint64_t)c->agent_len +
		     h.name_len + h.msg_len > ep->n.peer_slot_size))
		return -EMSGSIZE;
	a = (struct rn_lcore_agent_out){
		.kind = RN_NOTIFY_KIND_AGENT, .dst_len = h.agent_len,
		.src_len = c->agent_len,
		.want = (h.flags & RN_CLIENT_WANT_COMPLETION) != 0,
		.client_id = c->id, .name_len = h.name_len,
		/* Inline when its name and msg would be, in a node-level
		 * frame; its agents come on top. */
		.inline_max = rn_notify_frame_size(h.name_len, h.msg_len) <=
			      lc->max_inline ? ep->n.agent_inline : 0,
		.msg_len = h.msg_len, .cookie = e->cookie,
		.dst = buf + sizeof(h), .src = c->agent,
		.body = buf + sizeof(h) + h.agent_len,
	};
	*out = ep;
	return rn_lcore_notify_post_agent(lc, ep, &a, len);
}

/*
 * The entry at submit position pos of c that send_fast() did not post: a
 * batch (taken or refused at once, never held), or a SEND for
 * send_entry(). Read again from the ring, and checked again. Returns 0 or
 * send_entry()'s error, its cookie in *cookie.
 */
static __rte_noinline int
send_other(struct rn_lcore *lc, struct lcore_client *c, uint32_t pos,
	   struct rn_lcore_ep **out, uint64_t *cookie)
{
	struct rn_client_entry e;

	e = entry_read(rn_client_ring_end_at(&c->submit, pos - c->submit.pos,
					     sizeof(e)));
	*cookie = e.cookie;
	if (e.type == RN_CLIENT_ENTRY_XFER) {
		rn_lcore_client_xfer(lc, c->link, client_slot(c), c->id, &e);
		return 0;
	}
	return send_entry(lc, c, &e, pos, out);
}

/* The n entries at the head of c's submit ring, in order, as many as go
 * now, one doorbell per run of SENDs to one endpoint. tried: send_fast()
 * and send_from_buf() did not take the first already. */
static __rte_noinline unsigned int
send_burst(struct rn_lcore *lc, struct lcore_client *c, unsigned int n,
	   bool tried)
{
	struct rn_lcore_ep *bell = NULL;
	uint32_t pos = c->submit.pos;
	unsigned int done, sent = 0;

	for (done = 0; done < n; done++) {
		const uint8_t *at = rn_client_ring_end_at(&c->submit, done,
							  sizeof(struct
								 rn_client_entry));
		struct rn_lcore_ep *ep;
		struct rn_client_entry e;

		/* Once, into locals: the client may write it meanwhile. */
		e = entry_read(at);
		ep = NULL;
		if (done != 0 || !tried) {
			ep = send_fast(lc, c, &e, pos + done);
			if (unlikely(ep == NULL))
				ep = send_from_buf(lc, c, &e, pos + done);
		}
		if (unlikely(ep == NULL)) {
			uint64_t cookie;
			int rc = send_other(lc, c, pos + done, &ep, &cookie);

			/* An error is reported, and needs room for its
			 * report. */
			if (rc != 0) {
				if (rc == -EAGAIN ||
				    !complete(lc->clients, c, cookie, rc))
					break;
				continue;
			}
			if (ep == NULL)
				continue;      /* a batch */
		}
		if (ep != bell) {
			if (bell != NULL)
				rn_sq_ring_doorbell_posted(&bell->n.qp->sq);
			bell = ep;
		}
		sent++;
	}
	if (bell != NULL)
		rn_sq_ring_doorbell_posted(&bell->n.qp->sq);
	/* Only what was taken: the rest stays at the head. */
	rn_client_ring_end_take(&c->submit, done);
	if (sent != 0)
		rn_lcore_count(&lc->stats.client_sent, sent);
	return done;
}

/*
 * The one entry in c's submit ring, the common case while a client waits
 * for each answer: a SEND goes straight through, without the loop's state
 * to keep in registers; anything else is send_burst()'s. Out of line, as
 * the embedded API's send_one() is, for the instruction bench
 * (scripts/bench-client-instructions.sh).
 */
static __rte_noinline unsigned int
client_send_one(struct rn_lcore *lc, struct lcore_client *c)
{
	struct rn_client_entry e;
	struct rn_lcore_ep *ep;

	e = entry_read(rn_client_ring_end_at(&c->submit, 0, sizeof(e)));
	ep = send_fast(lc, c, &e, c->submit.pos);
	if (unlikely(ep == NULL))
		ep = send_from_buf(lc, c, &e, c->submit.pos);
	if (unlikely(ep == NULL))
		return send_burst(lc, c, 1, true);
	rn_sq_ring_doorbell_posted(&ep->n.qp->sq);
	rn_client_ring_end_take(&c->submit, 1);
	rn_lcore_count(&lc->stats.client_sent, 1);
	return 1;
}

unsigned int
rn_lcore_client_poll(struct rn_lcore *lc)
{
	struct rn_lcore_clients *cs = lc->clients;
	unsigned int work = 0;

	for (uint32_t i = 0; i < cs->n_active; i++) {
		struct lcore_client *c = &cs->c[cs->active[i]];
		uint32_t n;

		if (unlikely(c->held_head != HELD_NONE))
			work += retry_held(lc, c);
		/* An idle client costs a look at its ring, not a call. */
		n = rn_client_ring_end_count(&c->submit);
		if (n == 1)
			work += client_send_one(lc, c);
		else if (n != 0)
			work += send_burst(lc, c,
					   RTE_MIN(n, (uint32_t)RN_LCORE_BURST),
					   false);
	}
	/* One look at each client enqueued for, not one per entry. */
	while (cs->to_wake != 0) {
		unsigned int slot = (unsigned int)__builtin_ctzll(cs->to_wake);

		cs->to_wake &= cs->to_wake - 1;
		rn_client_link_wake(cs->c[slot].link);
	}
	return work;
}

/* Frames held for a client whose deliver ring is full are no reason to
 * stay awake: the client may not poll for long, and tells nobody when it
 * does; a sleeping lcore tries them again after idle_sleep_us. */
bool
rn_lcore_client_pending(const struct rn_lcore *lc)
{
	const struct rn_lcore_clients *cs = lc->clients;

	if (cs == NULL)
		return false;
	for (uint32_t i = 0; i < cs->n_active; i++)
		if (rn_client_ring_end_count(&cs->c[cs->active[i]].submit) != 0)
			return true;
	return false;
}

bool
rn_lcore_client_holding(const struct rn_lcore *lc)
{
	return lc->clients != NULL && lc->clients->n_holding != 0;
}

/* ---- commands ---- */

static int
clients_alloc(struct rn_lcore *lc)
{
	uint32_t n_held = lc->notify.n_bays * lc->notify.slots;
	struct rn_lcore_clients *cs;

	cs = rte_zmalloc("rn_lcore_clients", sizeof(*cs), RTE_CACHE_LINE_SIZE);
	if (cs == NULL)
		return -ENOMEM;
	if (n_held != 0) {
		cs->held = rte_zmalloc("rn_lcore_held",
				       n_held * sizeof(*cs->held), 0);
		if (cs->held == NULL) {
			rte_free(cs);
			return -ENOMEM;
		}
	}
	for (uint32_t i = 0; i < n_held; i++)
		cs->held[i].next = i + 1 < n_held ? i + 1 : HELD_NONE;
	cs->held_free = n_held != 0 ? 0 : HELD_NONE;
	cs->n_held = n_held;
	lc->clients = cs;
	return 0;
}

/* Link's region as this lcore (worker index i, receive slots of
 * slot_size bytes) uses it, or why not. */
static const char *
client_shape(struct lcore_client *c, const struct rn_client_link *link,
	     uint32_t i, uint32_t slot_size)
{
	struct rn_client_region r;

	/* One read of the header, then only the copy. */
	memcpy(&r, link->region, sizeof(r));
	if (rn_client_region_check(&r, link->region_size) != 0)
		return "its region does not check";
	if (i >= r.n_lcores)
		return "its region has no rings for this lcore";
	if (r.buf_size < slot_size)
		return "its buffers are smaller than a receive slot";
	if (link->agent_len == 0 || link->agent_len > RN_CLIENT_AGENT_MAX)
		return "its agent name is empty or too long";
	rn_client_ring_end_init(&c->submit,
				rn_client_region_at(link->region,
						    r.submit_off[i]),
				r.ring_size - 1, false);
	rn_client_ring_end_init(&c->deliver,
				rn_client_region_at(link->region,
						    r.deliver_off[i]),
				r.ring_size - 1, true);
	c->send_bufs = rn_client_region_at(link->region, r.send_bufs_off[i]);
	c->recv_bufs = rn_client_region_at(link->region, r.recv_bufs_off[i]);
	c->buf_size = r.buf_size;
	return NULL;
}

static int
client_add(struct rn_lcore *lc, struct rn_client_link *link, uint32_t i)
{
	struct lcore_client c = { .link = link, .held_head = HELD_NONE,
				  .held_tail = HELD_NONE,
				  .agent_len = link->agent_len,
				  .agent = (const uint8_t *)link->agent,
				  .agent_word = rn_notify_agent_word(
					RN_NOTIFY_KIND_AGENT, 0,
					link->agent_len, 0) };
	const char *why = client_shape(&c, link, i, lc->notify.slot_size);
	struct rn_lcore_clients *cs;
	uint32_t slot;
	int rc = -EPROTO;

	if (why == NULL && lc->clients == NULL && clients_alloc(lc) != 0) {
		why = "out of memory";
		rc = -ENOMEM;
	}
	cs = lc->clients;
	if (why == NULL && cs->n_active == RN_LCORE_MAX_CLIENTS) {
		why = "RN_LCORE_MAX_CLIENTS are attached";
		rc = -EUSERS;
	}
	if (why == NULL && agent_find(cs, c.agent, c.agent_len) != NULL) {
		why = "its agent is attached already";
		rc = -EADDRINUSE;
	}
	if (why != NULL) {
		RN_LCORE_LOG(ERR, "lcore %u: client %u not added: %s",
			     lc->lcore_id, link->client_id, why);
		return rc;
	}
	for (slot = 0; cs->c[slot].link != NULL; slot++)
		;
	/* Not 0 (none): the count runs from 1, and wraps to 1. */
	if (++cs->next_id == 1u << (32 - RN_CLIENT_SLOT_BITS))
		cs->next_id = 1;
	c.id = cs->next_id << RN_CLIENT_SLOT_BITS | slot;
	cs->c[slot] = c;
	cs->active[cs->n_active++] = (uint8_t)slot;
	agent_table_build(cs);
	lc->n_clients = cs->n_active;
	return 0;
}

/* Nothing of this lcore points into link's region after this: its held
 * frames go back to their slots (dropped), its reports to come find its
 * slot empty or another's. */
static void
client_remove(struct rn_lcore *lc, const struct rn_client_link *link)
{
	struct rn_lcore_clients *cs = lc->clients;

	for (uint32_t i = 0; cs != NULL && i < cs->n_active; i++) {
		uint32_t slot = cs->active[i];
		struct lcore_client *c = &cs->c[slot];

		if (c->link != link)
			continue;
		while (c->held_head != HELD_NONE)
			unhold(lc, c);
		cs->active[i] = cs->active[--cs->n_active];
		cs->to_wake &= ~(1ull << slot);
		memset(c, 0, sizeof(*c));
		agent_table_build(cs);
		lc->n_clients = cs->n_active;
		break;
	}
}

void
rn_lcore_client_command(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd)
{
	struct rn_client_link *link = (void *)(uintptr_t)cmd->cookie;

	if (cmd->type == RN_LCORE_CMD_CLIENT_ADD) {
		struct rn_lcore_event ev = {
			.type = RN_LCORE_EVENT_CLIENT_ADDED,
			.lcore_id = (uint16_t)lc->lcore_id,
			.arg = client_add(lc, link, lc->client_index),
			.cookie = cmd->cookie,
		};

		/* Must arrive: the client is answered only after it. */
		rn_lcore_post_event_wait(lc, ev);
	} else {
		struct rn_lcore_event ev = {
			.type = RN_LCORE_EVENT_CLIENT_REMOVED,
			.lcore_id = (uint16_t)lc->lcore_id,
			.cookie = cmd->cookie,
		};

		client_remove(lc, link);
		/* Must arrive: the control thread frees link after it. Not
		 * before its batches here are final and its regions
		 * deregistered: then lcore_client_xfer.c sends it. */
		if (rn_lcore_client_xfer_remove(lc, link))
			rn_lcore_post_event_wait(lc, ev);
	}
}

void
rn_lcore_client_fini(struct rn_lcore *lc)
{
	if (lc->clients != NULL)
		rte_free(lc->clients->held);
	rte_free(lc->clients);
	lc->clients = NULL;
	lc->n_clients = 0;
}
