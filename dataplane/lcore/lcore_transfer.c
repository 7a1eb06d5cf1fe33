/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The transfer engine on the lcore that owns an endpoint: registrations
 * with this lcore's device, and batches of RDMA WRITEs or READs posted on
 * the endpoint's data QPs, then the notification after their data.
 *
 * A batch is cut into chunks of at most chunk_size bytes, posted round
 * robin over the connected data QPs while each has room: a free BB in its
 * SQ, a place in its in-flight FIFO, and for READs fewer than
 * RN_XFER_RD_ATOMIC READs out. What does not fit waits in the batch and
 * goes as completions free room (each turn, after the CQs were polled).
 * One chunk in RN_XFER_SIGNAL_EVERY is signalled, and the last posted on a
 * QP for a batch in a turn (patched in before the doorbell), so every
 * chunk is covered by a CQE: RC completes a QP's WQEs in order, and an
 * unsignalled one that fails gets its own error CQE.
 *
 * The notification is posted by this lcore once the batch's last chunk is
 * known complete, without the application polling: a WRITE's completion
 * at the requester means the responder acknowledged it, which it does
 * only after placing its bytes; a READ's completion means its bytes are
 * here. docs/transfers.md has the argument.
 */
#include <errno.h>
#include <rte_malloc.h>
#include <string.h>

#include "lcore_pvt.h"
#include "rn_client_shm.h"
#include "rn_cq.h"
#include "rn_lcore_xfer.h"
#include "rn_sq.h"

#define XFER_QP_DEPTH 64   /* in-flight chunks per data QP: >= its SQ */
_Static_assert((XFER_QP_DEPTH & (XFER_QP_DEPTH - 1)) == 0, "power of two");
#define XFER_MAX_DATA_QPS (RN_EP_MAX_QPS - 1)

struct xfer_slot {
	struct rn_xfer_batch *b;
	uint32_t len;
	uint8_t read;
};

/* One data QP's chunks in flight, oldest first: a CQE's wr_id index is
 * the FIFO position of its chunk, and retires every chunk up to it. */
struct xfer_qp {
	uint32_t head, tail;     /* free running */
	uint32_t reads;          /* READs among them */
	uint32_t unsignaled;     /* posted since the last signalled one */
	bool last_signaled;
	struct xfer_slot slots[XFER_QP_DEPTH];
};

struct rn_xfer_ep {
	uint32_t n_qps;          /* data QPs connected: 0 .. n_qps - 1 */
	uint32_t next_qp;        /* round robin */
	struct xfer_qp qp[XFER_MAX_DATA_QPS];
};

struct rn_lcore_xfer {
	struct rte_ring *ring;   /* struct rn_xfer_op *, MP/SC */
	struct rn_xfer_batch *head, *tail;   /* accepted, not final */
};

int
rn_lcore_xfer_init(struct rn_lcore *lc)
{
	char name[RTE_RING_NAMESIZE];
	struct rn_lcore_xfer *x = rte_zmalloc("rn_xfer", sizeof(*x), 0);

	if (x == NULL)
		return -ENOMEM;
	snprintf(name, sizeof(name), "rn_xfer_%u", lc->lcore_id);
	x->ring = rte_ring_create(name, RN_XFER_RING_SIZE, SOCKET_ID_ANY,
				  RING_F_SC_DEQ);
	if (x->ring == NULL) {
		rte_free(x);
		return -ENOMEM;
	}
	lc->xfer = x;
	return 0;
}

static void
answer(struct rn_xfer_op *op, int rc)
{
	__atomic_store_n(&op->answer, rc, __ATOMIC_RELEASE);
}

void
rn_lcore_xfer_fini(struct rn_lcore *lc)
{
	struct rn_lcore_xfer *x = lc->xfer;
	void *op;

	if (x == NULL)
		return;
	rn_lcore_client_xfer_fini(lc);
	while (rte_ring_sc_dequeue(x->ring, &op) == 0)
		answer(op, -ESHUTDOWN);
	rte_ring_free(x->ring);
	rte_free(x);
	lc->xfer = NULL;
}

int
rn_lcore_xfer_submit(struct rn_lcore *lc, struct rn_xfer_op *op)
{
	op->answer = RN_XFER_PENDING;
	if (rte_ring_mp_enqueue(lc->xfer->ring, op) != 0)
		return -ENOBUFS;
	rn_lcore_wake(lc);
	return 0;
}

bool
rn_lcore_xfer_queued(const struct rn_lcore *lc)
{
	return lc->xfer != NULL && !rte_ring_empty(lc->xfer->ring);
}

/* Data QPs of ep that pair with one of the peer's: the first ones. */
static uint32_t
connected_data_qps(const struct rn_lcore_ep *ep)
{
	uint32_t n = 0;

	while (n < ep->n_qps && n < XFER_MAX_DATA_QPS &&
	       ep->req->local.qps[n].kind == RN_EP_QP_DATA &&
	       rn_lcore_qp_peer(ep->req, n) != NULL)
		n++;
	return n;
}

/* The rkey of rem at the peer's lcore that owns the endpoint. */
static int
rkey_of(const struct rn_lcore_ep *ep, const struct rn_xfer_remote *rem,
	uint32_t *rkey)
{
	if (rem->n_keys == 1) {
		*rkey = rem->keys[0].rkey;
		return 0;
	}
	if (ep->peer_lcore == UINT32_MAX)
		return -EAGAIN;   /* not probed yet */
	for (uint32_t i = 0; i < rem->n_keys; i++) {
		if (rem->keys[i].lcore == ep->peer_lcore) {
			*rkey = rem->keys[i].rkey;
			return 0;
		}
	}
	return -EINVAL;
}

static inline bool
has_note(const struct rn_xfer_batch *b)
{
	return b->note_name_len != 0 || b->note_agent != NULL;
}

/* The agent frame of b's notification, and of its failure notice. */
static uint64_t
agent_note_size(const struct rn_xfer_batch *b, bool failed)
{
	return failed ?
	       rn_notify_agent_frame_size(b->note_agent_len, b->note_src_len,
					  sizeof(RN_XFER_FAILED_NAME) - 1,
					  b->note_name_len) :
	       rn_notify_agent_frame_size(b->note_agent_len, b->note_src_len,
					  b->note_name_len, b->note_msg_len);
}

/* Whether either agent frame b may send is over ep's slots, or what the
 * receiving client gets of it over its receive buffer (the peer's slot
 * size, as lcore_client.c's send_entry() checks). */
static __rte_noinline bool
agent_note_too_big(const struct rn_lcore_ep *ep, const struct rn_xfer_batch *b)
{
	uint64_t body = RTE_MAX((uint64_t)b->note_name_len + b->note_msg_len,
				sizeof(RN_XFER_FAILED_NAME) - 1 +
				(uint64_t)b->note_name_len);

	return agent_note_size(b, false) > ep->n.max_frame ||
	       agent_note_size(b, true) > ep->n.max_frame ||
	       sizeof(struct rn_client_recv_hdr) + b->note_src_len + body >
	       ep->n.peer_slot_size;
}

/* Every check of a batch before it is taken; entries' rkeys filled.
 * Inlined in both acceptances: a call costs the embedded one some twenty
 * instructions (scripts/bench-transfer-instructions.sh). */
static __rte_always_inline int
check_batch(struct rn_lcore *lc, struct rn_xfer_batch *b,
	    struct rn_lcore_ep **out)
{
	struct rn_lcore_ep *ep = lc->by_index[b->ep_index];
	const struct rn_xfer_remote *last = NULL;
	uint32_t rkey = 0;
	int rc;

	/* Counted once per endpoint: rn_lcore_qp_peer() is a scan. */
	if (ep == NULL ||
	    (ep->xfer != NULL ? ep->xfer->n_qps : connected_data_qps(ep)) == 0)
		return -ENOTCONN;
	if (has_note(b)) {
		if (ep->n.state != RN_CHANNEL_NATIVE)
			return ep->n.state == RN_CHANNEL_DRAINING ? -EPIPE :
								    -ENOTSUP;
		if (unlikely(b->note_agent != NULL) ?
		    agent_note_too_big(ep, b) :
		    rn_notify_frame_size(b->note_name_len, b->note_msg_len) >
		    ep->n.max_frame)
			return -EMSGSIZE;
	}
	for (uint32_t i = 0; i < b->n_entries; i++) {
		struct rn_xfer_entry *e = &b->entries[i];

		if (e->remote != last) {
			last = e->remote;
			if (strncmp(last->node, ep->req->remote.name,
				    sizeof(last->node)) != 0)
				return -EINVAL;
			/* Keys of another life of the peer match nothing, or
			 * worse, another region: refused before any WQE. */
			if (last->session_id != ep->req->remote.session_id)
				return -ESTALE;
			rc = rkey_of(ep, last, &rkey);
			if (rc != 0)
				return rc;
		}
		e->rkey = rkey;
	}
	if (ep->xfer == NULL) {
		ep->xfer = rte_zmalloc("rn_xfer_ep", sizeof(*ep->xfer),
				       RTE_CACHE_LINE_SIZE);
		if (ep->xfer == NULL)
			return -ENOMEM;
		ep->xfer->n_qps = connected_data_qps(ep);
	}
	*out = ep;
	return 0;
}

static __rte_always_inline int
accept(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	struct rn_lcore_xfer *x = lc->xfer;
	struct rn_lcore_ep *ep = NULL;
	int rc = check_batch(lc, b, &ep);

	if (rc != 0)
		return rc;
	b->ep = ep;
	b->next_entry = 0;
	b->next_off = 0;
	b->chunks_out = 0;
	b->done = 0;
	b->error = 0;
	b->notify_due = 0;
	b->next = NULL;
	if (x->tail != NULL)
		x->tail->next = b;
	else
		x->head = b;
	x->tail = b;
	return 0;
}

/* Out of line, as post_chunks() and finish() are, so that callgrind
 * records each call (scripts/bench-transfer-instructions.sh). A batch of
 * the ring is the embedded API's: no agent, no hook (its fields zero), its
 * cancel its own. */
static __rte_noinline void
take_batch(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	b->cancel_at = &b->cancel;
	answer(&b->op, accept(lc, b));
}

int
rn_lcore_xfer_accept(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	if (b->cancel_at == NULL)
		b->cancel_at = &b->cancel;
	return accept(lc, b);
}

static void
take_op(struct rn_lcore *lc, struct rn_xfer_op *op)
{
	struct rn_xfer_reg *r = (struct rn_xfer_reg *)op;

	switch (op->type) {
	case RN_XFER_OP_REG:
		answer(op, r->dmabuf ?
		       rn_nic_mr_reg_dmabuf(lc->nic, r->offset, r->length,
					    (uintptr_t)r->addr, r->fd,
					    r->access, r->mr) :
		       rn_nic_mr_reg(lc->nic, r->addr, r->length, r->access,
				     r->mr));
		return;
	case RN_XFER_OP_DEREG:
		answer(op, rn_nic_mr_dereg(lc->nic, r->mr));
		return;
	case RN_XFER_OP_BATCH:
		take_batch(lc, (struct rn_xfer_batch *)op);
		return;
	default:
		answer(op, -EINVAL);
		return;
	}
}

/* What a failed chunk's CQE means for its batch (rn_transfer.h). */
static int
error_of(uint8_t syndrome)
{
	switch (rn_wc_status_ibv(syndrome)) {
	case IBV_WC_REM_ACCESS_ERR:
		return -EACCES;
	case IBV_WC_LOC_PROT_ERR:
		return -EFAULT;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return -ENOTCONN;
	default:
		return -EPIPE;   /* flushed, or another fault of the QP */
	}
}

void
rn_lcore_xfer_completion(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			 const struct rn_wc *wc)
{
	struct rn_xfer_ep *xe = ep->xfer;
	uint32_t q = (uint32_t)(wc->qp - ep->qps);
	uint32_t index = RN_EP_WR_INDEX(wc->wr_id);
	int err = wc->status != 0 ? error_of(wc->status) : 0;
	struct xfer_qp *xq;

	(void)lc;
	if (unlikely(xe == NULL || q >= xe->n_qps))
		return;
	xq = &xe->qp[q];
	while (xq->tail != xq->head) {
		struct xfer_slot *s = &xq->slots[xq->tail & (XFER_QP_DEPTH - 1)];
		bool last = (xq->tail & 0xffffff) == index;

		xq->tail++;
		xq->reads -= s->read;
		s->b->chunks_out--;
		/* Those before it completed without error: an unsignalled
		 * chunk that fails has its own CQE. */
		if (last && err != 0) {
			if (s->b->error == 0)
				s->b->error = err;
		} else {
			s->b->done += s->len;
		}
		if (last)
			break;
	}
}

static bool
qp_full(const struct xfer_qp *xq, const struct rn_sq *sq, bool read)
{
	return xq->head - xq->tail == XFER_QP_DEPTH || rn_sq_room(sq) == 0 ||
	       (read && xq->reads >= RN_XFER_RD_ATOMIC);
}

/*
 * Post b's next chunks while a data QP has room, round robin; then signal
 * the last one posted on each QP, if it is not already, and ring each
 * QP's doorbell once. Returns the chunks posted.
 */
static __rte_noinline unsigned int
post_chunks(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	struct rn_lcore_ep *ep = b->ep;
	struct rn_xfer_ep *xe = ep->xfer;
	bool read = b->kind == RN_XFER_READ;
	uint8_t opcode = read ? RN_WR_READ : RN_WR_WRITE;
	uint64_t gen_kind = RN_EP_WR_ID(ep->req->local.generation,
					RN_EP_WR_XFER, 0);
	uint32_t all = (1u << xe->n_qps) - 1, full = 0, touched = 0;
	unsigned int posted = 0;

	while (b->next_entry < b->n_entries && full != all) {
		uint32_t q = xe->next_qp;
		struct xfer_qp *xq = &xe->qp[q];
		struct rn_sq *sq = &ep->qps[q].sq;
		const struct rn_xfer_entry *e = &b->entries[b->next_entry];
		uint64_t left = e->length - b->next_off;
		uint32_t len = left < b->chunk_size ? (uint32_t)left :
						      b->chunk_size;
		struct rn_sge sge = { e->laddr + b->next_off, len, e->lkey };
		bool signal;

		xe->next_qp = q + 1 == xe->n_qps ? 0 : q + 1;
		if ((full & 1u << q) || qp_full(xq, sq, read)) {
			full |= 1u << q;
			continue;
		}
		signal = ++xq->unsignaled >= RN_XFER_SIGNAL_EVERY;
		if (rn_sq_post_rdma(sq, opcode, &sge, e->raddr + b->next_off,
				    e->rkey, 0, signal ? RN_WR_SIGNALED : 0,
				    gen_kind | (xq->head & 0xffffff)) != 0) {
			--xq->unsignaled;
			full |= 1u << q;
			continue;
		}
		if (signal)
			xq->unsignaled = 0;
		xq->last_signaled = signal;
		xq->slots[xq->head & (XFER_QP_DEPTH - 1)] =
			(struct xfer_slot){ .b = b, .len = len, .read = read };
		xq->head++;
		xq->reads += read;
		touched |= 1u << q;
		b->chunks_out++;
		posted++;
		b->next_off += len;
		if (b->next_off == e->length) {
			b->next_entry++;
			b->next_off = 0;
		}
	}
	for (uint32_t q = 0; touched != 0; q++, touched >>= 1) {
		struct rn_sq *sq = &ep->qps[q].sq;
		struct xfer_qp *xq = &xe->qp[q];

		if (!(touched & 1))
			continue;
		if (!xq->last_signaled) {
			/* Not doorbelled yet: the device has not read it. */
			sq->last_ctrl->fm_ce_se |= MLX5_WQE_CTRL_CQ_UPDATE;
			sq->unsignaled_bbs = 0;
			xq->unsignaled = 0;
			xq->last_signaled = true;
		}
		rn_sq_ring_doorbell_posted(sq);
	}
	rn_lcore_count(&lc->stats.xfer_wqes, posted);
	return posted;
}

/* A client batch's notification, or its failure notice: an agent frame
 * from the client's agent to the note's, as a client's SEND is
 * (lcore_client.c), its cookie the batch's (a refusal of it names it). */
static int
notify_agent(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	struct rn_lcore_ep *ep = b->ep;
	bool failed = b->notify_due == 2;
	struct rn_lcore_agent_out a = {
		.kind = RN_NOTIFY_KIND_AGENT, .cookie = b->cookie,
		.dst = b->note_agent, .dst_len = b->note_agent_len,
		.src = b->note_src, .src_len = b->note_src_len,
		.name_len = failed ? sizeof(RN_XFER_FAILED_NAME) - 1 :
				     b->note_name_len,
		.msg_len = failed ? b->note_name_len : b->note_msg_len,
		.body = failed ? b->note_fail : b->note_name,
	};
	uint64_t len = agent_note_size(b, failed);
	int rc;

	if (ep->n.state != RN_CHANNEL_NATIVE)
		return ep->n.state == RN_CHANNEL_DRAINING ? -EPIPE : -ENOTSUP;
	if (len > ep->n.max_frame)
		return -EMSGSIZE;
	a.inline_max = rn_notify_frame_size(a.name_len, a.msg_len) <=
		       lc->max_inline ? ep->n.agent_inline : 0;
	rc = rn_lcore_notify_post_agent(lc, ep, &a, len);
	if (rc == 0) {
		rn_lcore_notify_ring(ep);
		rn_lcore_count(&lc->stats.notify_sent, 1);
	}
	return rc;
}

/* The notification b owes its peer, or the failure one; -EAGAIN: no
 * credit now, try again next turn. */
static int
notify(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	struct rn_notify_out o = { .name = b->note_name,
				   .name_len = b->note_name_len,
				   .msg = b->note_msg,
				   .msg_len = b->note_msg_len };

	/* A failed endpoint's notify QP still sends: the control thread
	 * hears of the failure once the notice went (lcore_endpoint.c). */
	if (b->ep->closing)
		return -ENOTCONN;
	if (b->note_agent != NULL)
		return notify_agent(lc, b);
	if (b->notify_due == 2) {
		/* The target learns which notification will not come. */
		o = (struct rn_notify_out){ .name = RN_XFER_FAILED_NAME,
					    .name_len = sizeof(RN_XFER_FAILED_NAME)
							- 1,
					    .msg = b->note_name,
					    .msg_len = b->note_name_len };
	}
	return rn_lcore_notify_post(lc, b->ep, &o);
}

/* b's final status, once its notification went; false: not yet. */
static __rte_noinline bool
finish(struct rn_lcore *lc, struct rn_xfer_batch *b)
{
	void (*on_final)(struct rn_lcore *, struct rn_xfer_batch *) =
		b->on_final;

	if (has_note(b) && b->notify_due == 0)
		b->notify_due = b->error == 0 ? 1 : 2;
	if (b->notify_due != 0) {
		int rc = notify(lc, b);

		/* A batch that may not wait (its client is gone) lets its
		 * notification go rather than hold up the client's removal. */
		if (rc == -EAGAIN && !b->no_wait)
			return false;
		b->notify_status = rc;
	}
	for (uint32_t i = 0; i < b->n_entries; i++)
		__atomic_fetch_sub(b->entries[i].users, 1, __ATOMIC_RELEASE);
	b->bytes_done = b->done;
	rn_lcore_count(&lc->stats.xfer_batches, 1);
	/* An embedded batch may be freed from here on: on_final was read. */
	__atomic_store_n(&b->status, b->error, __ATOMIC_RELEASE);
	if (on_final != NULL)
		on_final(lc, b);
	return true;
}

/* Post what fits of each batch, oldest first, and finish those done. */
static unsigned int
pump(struct rn_lcore *lc)
{
	struct rn_lcore_xfer *x = lc->xfer;
	struct rn_xfer_batch **link = &x->head, *prev = NULL;
	unsigned int work = 0;

	while (*link != NULL) {
		struct rn_xfer_batch *b = *link;
		struct rn_xfer_batch *next = b->next;   /* b is not ours after
							 * finish() */
		struct rn_lcore_ep *ep = b->ep;

		if (b->error == 0 && (ep->failed || ep->closing))
			b->error = -ENOTCONN;
		if (b->error == 0 &&
		    __atomic_load_n(b->cancel_at, __ATOMIC_RELAXED) != 0 &&
		    b->next_entry < b->n_entries)
			b->error = -ECANCELED;
		if (b->error == 0 && b->next_entry < b->n_entries)
			work += post_chunks(lc, b);
		if (b->chunks_out == 0 &&
		    (b->error != 0 || b->next_entry == b->n_entries)) {
			bool tail = x->tail == b;

			if (finish(lc, b)) {
				*link = next;
				if (tail)
					x->tail = prev;
				work++;
				continue;
			}
		}
		prev = b;
		link = &b->next;
	}
	return work;
}

unsigned int
rn_lcore_xfer_poll(struct rn_lcore *lc)
{
	struct rn_lcore_xfer *x = lc->xfer;
	void *ops[RN_LCORE_BURST];
	unsigned int n;

	/* Every turn of every lcore comes here: nothing to do costs two
	 * loads and a compare, not a dequeue. */
	if (likely(x->head == NULL) && rte_ring_empty(x->ring))
		return 0;
	n = rte_ring_sc_dequeue_burst(x->ring, ops, RN_LCORE_BURST, NULL);
	for (unsigned int i = 0; i < n; i++)
		take_op(lc, ops[i]);
	if (x->head == NULL)
		return n;
	return n + pump(lc);
}

bool
rn_lcore_xfer_ep_busy(const struct rn_lcore *lc, const struct rn_lcore_ep *ep)
{
	for (const struct rn_xfer_batch *b = lc->xfer != NULL ?
	     lc->xfer->head : NULL; b != NULL; b = b->next)
		if (b->ep == ep)
			return true;
	return false;
}

void
rn_lcore_xfer_ep_fini(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	struct rn_lcore_xfer *x = lc->xfer;
	struct rn_xfer_batch **link = &x->head, *prev = NULL;

	/* Its QPs are gone: what did not complete never will. */
	while (x != NULL && *link != NULL) {
		struct rn_xfer_batch *b = *link;
		struct rn_xfer_batch *next = b->next;

		if (b->ep != ep) {
			prev = b;
			link = &b->next;
			continue;
		}
		if (b->error == 0)
			b->error = -EPIPE;
		b->chunks_out = 0;
		b->notify_due = 0;
		/* Nothing to send it on: no notification, and no failure
		 * notice either. */
		b->notify_status = -ENOTCONN;
		b->note_name_len = 0;
		b->note_agent = NULL;
		if (x->tail == b)
			x->tail = prev;
		*link = next;
		finish(lc, b);
	}
	rte_free(ep->xfer);
	ep->xfer = NULL;
}
