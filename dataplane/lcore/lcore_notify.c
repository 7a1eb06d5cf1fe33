/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Native notifications on the lcore that owns the endpoint: one SEND_IMM
 * per notification on the notify QP, never without a credit, the frame
 * inline up to max_inline bytes, else from a send buffer; receive slots
 * delivered to the application zero-copy and reposted when it releases
 * them. Credits go back to the sender in an RDMA WRITE of a credit word,
 * which consumes no receive slot, once half of them are due. The immediate
 * says how many of the endpoint's notifications went over TCP before this
 * one, for the receiver to keep send order across both channels
 * (dataplane/api/notify_order_pvt.h). Every work request carries its
 * incarnation's generation: a completion of another generation is counted
 * and dropped. A diagnostic request's fault is lcore_diag.c's.
 */
#include <errno.h>
#include <inttypes.h>
#include <rte_cycles.h>
#include <rte_malloc.h>
#include <string.h>

#include "lcore_post_pvt.h"
#include "lcore_pvt.h"
#include "rn_notify_engine.h"
#include "rn_cq.h"
#include "rn_rq.h"
#include "rn_sq.h"

static uint32_t
generation(const struct rn_lcore_ep *ep)
{
	return ep->req->local.generation;
}

static void write_credits(struct rn_lcore *lc, struct rn_lcore_ep *ep);

int
rn_lcore_notify_init(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	uint32_t slots = lc->notify.slots;
	struct ep_notify *n = &ep->n;

	/* Freed by rn_lcore_notify_fini(), also after a failure here. */
	rn_send_window_init(&n->sends, slots,
			   rte_zmalloc("rn_notify_cookie",
				       slots * sizeof(*n->sends.cookie), 0),
			   rte_zmalloc("rn_notify_want", slots, 0));
	n->client_sent = rte_zmalloc("rn_client_sent",
				     slots * sizeof(*n->client_sent), 0);
	if (n->sends.cookie == NULL || n->sends.want == NULL ||
	    n->client_sent == NULL)
		return -ENOMEM;
	n->recv_slots = rn_notify_recv_slot(&lc->notify, (uint32_t)ep->bay, 0);
	n->recv_wr_id = RN_EP_WR_ID(generation(ep), RN_EP_WR_RECV, 0);
	n->native_received = ep->natives_received;
	rn_credit_rx_init(&n->rx, slots);
	return 0;
}

void
rn_lcore_notify_attach(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		       const struct rn_ep_qp_info *peer)
{
	struct ep_notify *n = &ep->n;

	(void)lc;
	n->peer_slot_size = peer->slot_size;
	n->send_wr_id = RN_EP_WR_ID(generation(ep), RN_EP_WR_SEND, 0);
	rn_credit_tx_init(&n->tx, peer->credits);
	rn_send_window_allow(&n->sends, rn_credit_allowed(&n->tx));
	n->credit_raddr = ep->req->remote.probe_addr +
			  EP_PROBE_CREDITS * RN_EP_PROBE_SIZE;
	n->credit_rkey = ep->req->remote.probe_rkey;
}

void
rn_lcore_notify_enable(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	struct ep_notify *n = &ep->n;

	n->max_frame = RTE_MIN(lc->notify.slot_size, n->peer_slot_size);
	/* [notify] max_inline, even where the device allows more; and no
	 * larger than the send window's signalling allows inline SENDs paced
	 * by it (RN_WR_PACED): a no-op with 2 entries or more, where the ring
	 * has a WQE of the largest size per entry (tests/nic/test_sim.c);
	 * with one entry, each paced SEND may take half the ring only. */
	n->agent_inline = RTE_MIN(RTE_MIN(n->max_frame, n->qp->sq.max_inline),
		rn_sq_send_inline_max(rn_sq_paced_max_bbs(
			&n->qp->sq, n->sends.signal_mask + 1)));
	n->max_inline = RTE_MIN(n->agent_inline, lc->max_inline);
	n->client_inline = n->peer_slot_size > RN_CLIENT_RECV_EXTRA ?
		RTE_MIN(n->agent_inline,
			n->peer_slot_size - RN_CLIENT_RECV_EXTRA) : 0;
	n->client_frame = n->peer_slot_size > RN_CLIENT_RECV_EXTRA ?
		RTE_MIN(n->max_frame,
			n->peer_slot_size - RN_CLIENT_RECV_EXTRA) : 0;
	/* Slots released before now (the peer may send first) are credits
	 * the peer waits for. */
	if (rn_credit_update_due(&n->rx))
		write_credits(lc, ep);
}

void
rn_lcore_notify_stop(struct rn_lcore_ep *ep)
{
	ep->n.max_frame = 0;
	ep->n.max_inline = 0;
	ep->n.agent_inline = 0;
	ep->n.client_inline = 0;
	ep->n.client_frame = 0;
}

/* A send's fate, to the application; counted when its ring is full. */
static void
report(struct rn_lcore *lc, uint64_t cookie, int status)
{
	if (!rn_notify_complete(lc->notify_completions, cookie, status))
		rn_lcore_count(&lc->stats.reports_dropped, 1);
}

/*
 * The QP failed: every SEND still holding a window entry failed with it,
 * signalled or not. Reported (if a completion was asked for), never
 * replayed.
 */
void
rn_lcore_notify_fail_pending(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	struct ep_notify *n = &ep->n;
	uint64_t cookie;

	while (rn_send_window_used(&n->sends) != 0) {
		struct rn_client_sent *s =
			&n->client_sent[rn_send_window_oldest(&n->sends)];

		/* A client's SEND: its fate goes to its client, asked for
		 * or not. */
		if (s->id != 0 && s->seq == n->sends.freed) {
			rn_lcore_client_report(lc, s, -EPIPE);
			s->id = 0;
		}
		if (rn_send_window_fail_oldest(&n->sends, &cookie) ==
		    RN_SEND_REPORT_APP)
			report(lc, cookie, -EPIPE);
	}
}

void
rn_lcore_notify_fini(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	/* Freed before every CQE came (a CQ that stopped, a drain that
	 * timed out): what is still in flight failed, as with the QP. */
	if (ep->n.sends.cookie != NULL)
		rn_lcore_notify_fail_pending(lc, ep);
	rte_free(ep->n.sends.cookie);
	rte_free(ep->n.sends.want);
	rte_free(ep->n.client_sent);
	ep->n.sends.cookie = NULL;
	ep->n.sends.want = NULL;
	ep->n.client_sent = NULL;
}

/*
 * The immediate of every SEND_IMM of a request: how many of the endpoint's
 * NOTIFY frames were queued on TCP before it. The same for all of them: a
 * request's notifications go one after the other, and only its first may
 * go over TCP. Relaxed: a TCP one the sender sent before this request was
 * counted before its answer, which the sender waited for before handing
 * this one over through the request ring (release, then acquire).
 */
static inline __be32
tcp_before(const struct rn_lcore_ep *ep)
{
	return rn_notify_imm(__atomic_load_n(&ep->req->tcp_queued,
					     __ATOMIC_RELAXED));
}

/*
 * Post the SEND_IMM of o's frame of len bytes from its send buffer, by a
 * data segment; signalled when the window says so. What post_inline() cannot
 * post comes here (from send_burst() or send_general()): frames over
 * max_inline, and inline ones that would wrap at the ring's end or find no
 * room for their larger WQE (one BB here, never wrapping). Returns 0,
 * -EAGAIN (no room in the SQ) or -EPIPE.
 */
static int
post_from_buf(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	       const struct rn_notify_out *o, const struct rn_lcore_agent_out *a,
	       uint32_t req_flags, __be32 imm, uint32_t len)
{
	struct ep_notify *n = &ep->n;
	struct send_head h = next_send(n, a != NULL ? a->want :
				       (req_flags &
					RN_NOTIFY_WANT_COMPLETION) != 0);
	uint8_t *buf = rn_notify_send_buf(&lc->notify, (uint32_t)ep->bay,
					   rn_send_window_next(&n->sends));
	struct rn_sge sge = { (uintptr_t)buf, len, lc->notify.mr.lkey };
	int rc;

	frame_write(buf, o, a);
	rc = rn_sq_post_send_sge(&n->qp->sq, &sge, frame_opcode(a), imm, h.flags,
				 h.wr_id);
	if (rc != 0)
		return rc == -EAGAIN ? -EAGAIN : -EPIPE;
	push(n, o, a, h.want);
	return 0;
}

/*
 * Hand the request to the control thread, which owns the connection,
 * stamped with the SENDs posted before it: the receiver hands its first
 * notification, the only one that goes, over after those.
 */
static void
forward_tcp(struct rn_lcore *lc, const struct rn_lcore_ep *ep,
	    struct rn_notify_request *req)
{
	struct rn_lcore_event ev = { .type = RN_LCORE_EVENT_NOTIFY_TCP,
				     .lcore_id = (uint16_t)lc->lcore_id,
				     .cookie = (uintptr_t)req };

	req->native_before = ep->natives_posted + ep->n.sends.posted -
			     ep->n.agent_posted;
	req->generation = generation(ep);
	rn_lcore_post_event_wait(lc, ev);
}

/*
 * A first notification over max_frame: a failed channel, no channel (here
 * or at the peer), or a frame over a slot. Answers req, or hands it to the
 * control thread (TCP).
 */
static __rte_cold void
send_other(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	   struct rn_notify_request *req)
{
	struct ep_notify *n = &ep->n;

	if (n->state == RN_CHANNEL_DRAINING)
		rn_notify_answer(req, -EPIPE);   /* never falls back */
	else if (lc->notify_fallback)
		forward_tcp(lc, ep, req);
	else
		rn_notify_answer(req, n->state == RN_CHANNEL_NATIVE ?
				 -EMSGSIZE : -ENOTSUP);
}

/*
 * The endpoint req is for, unless it is gone, failed or closing: by_index
 * holds connected endpoints only, and each leaves it as it fails or starts
 * closing (lcore_endpoint.c). req->ep_index is an endpoint index of the
 * control plane, which has no more than by_index (rn_notify_submit()).
 */
static inline struct rn_lcore_ep *
usable_endpoint(const struct rn_lcore *lc, const struct rn_notify_request *req)
{
	RTE_ASSERT(req->ep_index < RN_MAX_ENDPOINTS);
	return lc->by_index[req->ep_index];
}

/*
 * Post o's frame as len bytes (at most max_frame) on ep's native channel,
 * inline or through its send buffer, and ring the doorbell. Returns 0,
 * -EAGAIN (no credit, window entry or SQ room) or -EPIPE.
 */
static inline int
post_one(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	 const struct rn_notify_out *o, uint32_t req_flags, uint64_t len)
{
	bool want = (req_flags & RN_NOTIFY_WANT_COMPLETION) != 0;
	__be32 imm = tcp_before(ep);
	int rc;

	if (!entry_and_credit(ep))
		rc = -EAGAIN;
	else if (post_inline(ep, o, NULL, want, imm, len))
		rc = 0;
	else
		rc = post_from_buf(lc, ep, o, NULL, req_flags, imm,
				   (uint32_t)len);
	if (rc == 0) {
		rn_sq_ring_doorbell(&ep->n.qp->sq);
		rn_lcore_count(&lc->stats.notify_sent, 1);
	}
	return rc;
}

int
rn_lcore_notify_post(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		     const struct rn_notify_out *o)
{
	uint64_t len = rn_notify_frame_size(o->name_len, o->msg_len);

	if (ep->n.state != RN_CHANNEL_NATIVE)
		return ep->n.state == RN_CHANNEL_DRAINING ? -EPIPE : -ENOTSUP;
	if (len > ep->n.max_frame)
		return -EMSGSIZE;
	return post_one(lc, ep, o, 0, len);
}

/*
 * A request's first notification, when send_one() or send_burst() could
 * not post it, or one that wants its completion reported: every check,
 * the fallbacks, the frame inline or through its send buffer, and the
 * answer for it alone (the application sends the rest again).
 */
static __rte_noinline void
send_general(struct rn_lcore *lc, struct rn_notify_request *req)
{
	struct rn_lcore_ep *ep = usable_endpoint(lc, req);
	const struct rn_notify_out *o = &req->out[0];
	uint64_t len = rn_notify_frame_size(o->name_len, o->msg_len);

	if (unlikely(ep == NULL))
		rn_notify_answer(req, -ENOTCONN);
	else if (unlikely(len > ep->n.max_frame))
		send_other(lc, ep, req);
	else
		rn_notify_answer(req, post_one(lc, ep, o, req->flags, len));
}

/*
 * A request of one plain notification (rn_notify_send() without flags),
 * inline: straight through, without send_burst()'s loop, which costs the
 * single send some twenty instructions more. Anything else, a completion
 * to report included, is send_general()'s. Kept out of line so that
 * callgrind records each call, which the instruction bench
 * (scripts/bench-notify-instructions.sh) reads by name.
 */
static __rte_noinline void
send_one(struct rn_lcore *lc, struct rn_notify_request *req)
{
	struct rn_lcore_ep *ep = usable_endpoint(lc, req);
	const struct rn_notify_out *o = &req->out[0];

	if (unlikely(ep == NULL || req->flags != 0 || !entry_and_credit(ep) ||
		     !post_inline(ep, o, NULL, false, tcp_before(ep),
				  rn_notify_frame_size(o->name_len,
						       o->msg_len)))) {
		send_general(lc, req);
		return;
	}
	rn_sq_ring_doorbell_posted(&ep->n.qp->sq);
	rn_lcore_count(&lc->stats.notify_sent, 1);
	rn_notify_answer_sent(req, 1);
}

/*
 * A request's notifications, natively, in order, under one doorbell, as
 * many as the send window lets go now (checked once for all of them),
 * until one cannot go: inline while they fit, else from their send buffers.
 * The answer says how many went. When the first cannot go this way,
 * send_general() takes it (over TCP, or its error). Out of line, as
 * send_one() is, for the instruction bench.
 */
static __rte_noinline void
send_burst(struct rn_lcore *lc, struct rn_notify_request *req)
{
	struct rn_lcore_ep *ep = usable_endpoint(lc, req);
	bool want = (req->flags & RN_NOTIFY_WANT_COMPLETION) != 0;
	uint32_t went, room;
	__be32 imm;

	if (unlikely(ep == NULL)) {
		send_general(lc, req);
		return;
	}
	room = rn_send_window_room(&ep->n.sends);
	if (room < req->count) {
		hear_credits(ep);
		room = rn_send_window_room(&ep->n.sends);
	}
	room = RTE_MIN(room, req->count);
	imm = tcp_before(ep);
	for (went = 0; went < room; went++) {
		const struct rn_notify_out *o = &req->out[went];
		uint64_t len = rn_notify_frame_size(o->name_len, o->msg_len);

		if (!post_inline(ep, o, NULL, want, imm, len) &&
		    (len > ep->n.max_frame ||
		     post_from_buf(lc, ep, o, NULL, req->flags, imm,
				    (uint32_t)len) != 0))
			break;
	}
	if (unlikely(went == 0)) {
		send_general(lc, req);
		return;
	}
	rn_sq_ring_doorbell_posted(&ep->n.qp->sq);
	rn_lcore_count(&lc->stats.notify_sent, went);
	rn_notify_answer_sent(req, (int)went);
}

int
rn_lcore_notify_post_agent(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			   const struct rn_lcore_agent_out *a, uint64_t len)
{
	/* The receiver reads no immediate of an agent frame: the send order
	 * across channels is the embedded API's alone. */
	__be32 imm = rn_notify_imm(0);

	if (!entry_and_credit(ep))
		return -EAGAIN;
	if (post_inline(ep, NULL, a, a->want, imm, len))
		return 0;
	return post_from_buf(lc, ep, NULL, a, 0, imm, (uint32_t)len);
}

void
rn_lcore_notify_ring(struct rn_lcore_ep *ep)
{
	rn_sq_ring_doorbell_posted(&ep->n.qp->sq);
}

/* The credit WRITE of what was reposted, with flags; 0, or -EAGAIN when
 * the SQ has no room. */
static __rte_always_inline int
post_credits(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint8_t flags)
{
	struct ep_notify *n = &ep->n;
	uint32_t count = rn_credit_count(&n->rx);

	if (rn_sq_post_write_word(&n->qp->sq, count, n->credit_raddr,
				  n->credit_rkey, flags,
				  RN_EP_WR_ID(generation(ep), RN_EP_WR_CREDIT,
					      0)) != 0)
		return -EAGAIN;
	rn_sq_ring_doorbell(&n->qp->sq);
	rn_credit_told(&n->rx, count);
	rn_lcore_count(&lc->stats.credit_writes, 1);
	return 0;
}

/*
 * Tell the peer how many slots we reposted, without using one of its. Out
 * of line: one repost in slots / 2 needs it, and inlined it made every
 * repost save and restore six more registers.
 */
static __rte_noinline void
write_credits(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	/* When the SQ is full the update stays due, and the next SEND
	 * completion, which makes room, tries again. */
	(void)post_credits(lc, ep, 0);
}

int
rn_lcore_notify_fence(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	/* The count is what write_credits() would tell: never wrong. */
	return post_credits(lc, ep, RN_WR_SIGNALED);
}

/*
 * Put released receive slot index back on ep's RQ and count it as a
 * credit. The RQ doorbell is a store to the doorbell record, no MMIO: one
 * per slot cost less than one per burst of releases (docs/performance.md).
 * Out of line, as send_one() is, for the instruction bench.
 */
__rte_noinline void
rn_lcore_repost(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint32_t index)
{
	struct ep_notify *n = &ep->n;
	struct rn_sge sge = {
		(uintptr_t)(n->recv_slots + (size_t)index * lc->notify.slot_size),
		lc->notify.slot_size, lc->notify.mr.lkey,
	};

	if (rn_rq_post_sge(&n->qp->rq, &sge, n->recv_wr_id | index) != 0)
		return;
	rn_rq_ring_doorbell(&n->qp->rq);
	rn_credit_repost(&n->rx);
	if (rn_credit_update_due(&n->rx) && n->state == RN_CHANNEL_NATIVE)
		write_credits(lc, ep);
}

struct rn_lcore *
rn_lcore_ep_lcore(const struct rn_lcore_ep *ep)
{
	return ep->lc;
}

const uint8_t *
rn_lcore_ep_recv_slot(const struct rn_lcore_ep *ep, uint32_t index)
{
	/* Both set before the first delivery was enqueued; recv_slots changes
	 * only when a failed channel retires, after every delivery of it was
	 * released (rn_lcore_channel_reap()). */
	return ep->n.recv_slots + (size_t)index * ep->lc->notify.slot_size;
}

/*
 * A frame whose lengths do not add up: counted and logged here, and still
 * handed to the poll, which never delivers it (its frame does not read)
 * but counts its place in send order; a TCP notification sent after it
 * would otherwise wait for it (dataplane/api/notify_order_pvt.h). Its slot
 * is reposted when the poll releases it, as any other. At most one line a
 * second: each is a write(2) on the worker.
 */
static __rte_cold void
rejected(struct rn_lcore *lc, const struct rn_lcore_ep *ep, uint32_t len)
{
	uint64_t now = rte_get_tsc_cycles();

	rn_lcore_count(&lc->stats.notify_rejected, 1);
	if (lc->rejected_logged_tsc != 0 &&
	    now - lc->rejected_logged_tsc < lc->tsc_hz) {
		lc->rejected_unlogged++;
		return;
	}
	RN_LCORE_LOG(WARNING, "lcore %u: notification of %u bytes from %s "
		     "rejected: lengths do not add up (and %" PRIu64 " more "
		     "on this lcore since its last such line)", lc->lcore_id, len,
		     ep->req->remote.name, lc->rejected_unlogged);
	lc->rejected_logged_tsc = now;
	lc->rejected_unlogged = 0;
}

/*
 * A frame the node-level reader refused, d its delivery: another kind
 * (rn_notify_frame.h), a client's, which lcore_client.c takes, off the
 * embedded API's ring and out of its send order; or a malformed one,
 * rejected and delivered all the same, as received() says. received()
 * ends in this call, so that its common path keeps no more registers.
 */
static __rte_noinline __rte_cold void
not_node_level(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	       struct rn_notify_delivery *d)
{
	const uint8_t *frame = ep->n.recv_slots +
			       (size_t)d->index * lc->notify.slot_size;

	if (rn_lcore_client_frame(lc, ep, frame, d->index, d->len) == 0) {
		ep->n.native_received--;
		return;
	}
	rejected(lc, ep, d->len);
	rte_ring_sp_enqueue_elem(lc->notify_deliveries, d, sizeof(*d));
	ep->n.held++;
}

/* Out of line, as send_one() is, for the instruction bench. */
static __rte_noinline void
received(struct rn_lcore *lc, struct rn_lcore_ep *ep, const struct rn_wc *wc)
{
	struct ep_notify *n = &ep->n;
	uint32_t index = RN_EP_WR_INDEX(wc->wr_id);
	uint8_t *frame = n->recv_slots + (size_t)index * lc->notify.slot_size;
	struct rn_notify_delivery d = { .owner = ep, .len = wc->byte_len,
					.ep_index = (uint16_t)ep->req->ep_index,
					.index = (uint16_t)index,
					/* Ours are all SEND_IMMs. */
					.seq = wc->opcode == RN_WC_RECV_IMM ?
					       rn_notify_imm_count(wc->imm) : 0,
					.pos = n->native_received++,
					.generation = generation(ep) };
	struct rn_notify_view v;

	if (unlikely(rn_notify_frame_read(frame, wc->byte_len, &v) != 0)) {
		not_node_level(lc, ep, &d);
		return;
	}
	rn_lcore_count(&lc->stats.notify_received, 1);
	/* The ring holds every receive slot of the lcore: never full. */
	rte_ring_sp_enqueue_elem(lc->notify_deliveries, &d, sizeof(d));
	n->held++;
}

/*
 * A plain SEND: an agent frame or refusal (frame_opcode()), which
 * lcore_client.c takes, off the embedded API's ring and out of its send
 * order. Anything else goes the node-level path, as if it had come as a
 * SEND_IMM: the opcode is the peer's to choose, the frame says what it is.
 */
static __rte_noinline void
received_send(struct rn_lcore *lc, struct rn_lcore_ep *ep,
	      const struct rn_wc *wc)
{
	rn_lcore_client_received(lc, ep, wc);
}

void
rn_lcore_notify_received(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			 const struct rn_wc *wc)
{
	received(lc, ep, wc);
}

/* A SEND completed, which made room in the SQ: a credit WRITE that found
 * it full goes now. */
static inline void
retry_credits(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	if (unlikely(rn_credit_update_due(&ep->n.rx)) &&
	    ep->n.state == RN_CHANNEL_NATIVE)
		write_credits(lc, ep);
}

/*
 * The same for a SEND that wanted its success reported, in entry: to the
 * application, or to a client (its entry's record says which). Out of
 * line, so that the completion path keeps no frame for it.
 */
static __rte_noinline void
report_sent(struct rn_lcore *lc, struct rn_lcore_ep *ep, uint32_t entry,
	    uint8_t to, uint64_t cookie)
{
	if (to == RN_SEND_REPORT_APP)
		report(lc, cookie, 0);
	else
		rn_lcore_client_report(lc, &ep->n.client_sent[entry], 0);
	retry_credits(lc, ep);
}

/*
 * Early receives: the handshake ends on the callee one control frame
 * (READY) after it ends on the caller, which may send natively at once.
 * Delivered then, a notification could be answered before this node
 * takes a send to the peer (-ENOTCONN); so it waits, in its slot, for
 * RN_LCORE_CMD_EP_DELIVER, which the control thread sends once the
 * endpoint is connected. Holding the delivery back is simpler than
 * taking sends earlier, and safe where that is not: only READY says that
 * the peer's QPs are connected, and a SEND to a QP that is not would be
 * lost to its retries. An endpoint that fails or closes first delivers
 * them then (lcore_endpoint.c): the peer's NIC acknowledged them, so its
 * application counts them as arrived; an answer fails (-ENOTCONN), as to
 * any endpoint that failed or is closing.
 */
static __rte_noinline __rte_cold void
keep_early(struct rn_lcore *lc, struct rn_lcore_ep *ep, const struct rn_wc *wc)
{
	/* Never full (lcore_pvt.h), and early is there with a channel that
	 * defers; delivered at once otherwise, as before deferring. */
	if (unlikely(ep->early == NULL || ep->n_early == lc->notify.slots)) {
		if (wc->opcode == RN_WC_RECV_IMM)
			received(lc, ep, wc);
		else
			received_send(lc, ep, wc);
		return;
	}
	ep->early[ep->n_early++] = *wc;
	rn_lcore_count(&lc->stats.notify_early, 1);
}

/*
 * n early receives of ep whose slots are gone: the peer's NIC
 * acknowledged them, its application counts them as arrived. Counted,
 * and said once per worker: it takes a bug to come here.
 */
static __rte_cold void
early_lost(struct rn_lcore *lc, const struct rn_lcore_ep *ep, uint32_t n)
{
	rn_lcore_count(&lc->stats.notify_early_lost, n);
	if (lc->early_lost_said)
		return;
	lc->early_lost_said = true;
	RN_LCORE_LOG(WARNING, "lcore %u: %u notifications from %s lost: "
		     "received before endpoint %u was connected, and its "
		     "native channel (%s) no longer has their slots (said once "
		     "per worker; notify_early_lost counts them all)",
		     lc->lcore_id, n, ep->req->remote.name, ep->req->ep_index,
		     rn_channel_state_name(ep->n.state));
}

void
rn_lcore_notify_deliver(struct rn_lcore *lc, struct rn_lcore_ep *ep)
{
	uint32_t n = ep->n_early;

	ep->delivering = true;
	ep->n_early = 0;
	/* Their slots stay the channel's: it retires only once they are
	 * delivered (rn_lcore_channel_reap()), and goes otherwise with the
	 * endpoint, after this (close_ep()); and it cannot have been
	 * replaced, as channels are added to connected endpoints only. */
	if (unlikely(n != 0 && ep->n.state != RN_CHANNEL_NATIVE &&
		     ep->n.state != RN_CHANNEL_DRAINING)) {
		early_lost(lc, ep, n);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		rn_lcore_notify_completion(lc, ep, &ep->early[i]);
}

void
rn_lcore_notify_completion(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			   const struct rn_wc *wc)
{
	struct ep_notify *n = &ep->n;
	uint8_t kind = RN_EP_WR_KIND(wc->wr_id);

	if (RN_EP_WR_GENERATION(wc->wr_id) != generation(ep)) {
		rn_lcore_count(&lc->stats.notify_stale, 1);
		return;
	}
	if (kind == RN_EP_WR_RECV) {
		if (unlikely(!ep->delivering))
			keep_early(lc, ep, wc);
		else if (likely(wc->opcode == RN_WC_RECV_IMM))
			received(lc, ep, wc);
		else
			received_send(lc, ep, wc);
	} else if (kind == RN_EP_WR_SEND) {
		/* It and every unsignalled SEND before it completed. */
		uint32_t entry = RN_EP_WR_INDEX(wc->wr_id);
		uint64_t cookie;
		uint8_t to = rn_send_window_complete(&n->sends, entry, &cookie);

		if (unlikely(to != 0)) {
			report_sent(lc, ep, entry, to, cookie);
			return;
		}
		retry_credits(lc, ep);
	}
}

/*
 * A diagnostic request (count 0): lcore_diag.c makes its fault; a bad
 * frame comes back to go out natively as a send's would.
 */
static __rte_noinline __rte_cold void
diagnose(struct rn_lcore *lc, struct rn_notify_request *req)
{
	struct rn_lcore_ep *ep = usable_endpoint(lc, req);
	uint64_t len;

	if (ep == NULL) {
		rn_notify_answer(req, -ENOTCONN);
		return;
	}
	len = rn_lcore_diag_fault(lc, ep, req);
	if (len != 0)
		rn_notify_answer(req, post_one(lc, ep, &req->out[0], 0, len));
}

unsigned int
rn_lcore_notify_poll(struct rn_lcore *lc)
{
	struct rn_notify_request *reqs[RN_LCORE_BURST];
	struct rn_notify_delivery d[RN_LCORE_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(lc->notify_requests,
						   (void **)reqs,
						   RN_LCORE_BURST, NULL);
	unsigned int work = n;

	for (unsigned int i = 0; i < n; i++) {
		if (reqs[i]->count == 1)
			send_one(lc, reqs[i]);
		else if (likely(reqs[i]->count != 0))
			send_burst(lc, reqs[i]);
		else
			diagnose(lc, reqs[i]);
	}
	do {
		n = rte_ring_sc_dequeue_burst_elem(lc->notify_releases, d,
						   sizeof(d[0]), RN_LCORE_BURST,
						   NULL);
		for (unsigned int i = 0; i < n; i++)
			rn_lcore_notify_repost(lc, d[i].owner, d[i].index,
					       true);
		work += n;
	} while (n == RN_LCORE_BURST);
	return work;
}
