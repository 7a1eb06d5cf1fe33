/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef LCORE_POST_PVT_H
#define LCORE_POST_PVT_H

/*
 * Posting a SEND on an endpoint's native channel, inline, with its window
 * entry and credit: the steps that lcore_notify.c's node-level frames and
 * lcore_client.c's agent frames both take, inlined into each so that the
 * common send is one run of code without calls.
 */
#include "lcore_pvt.h"
#include "rn_sq.h"

/* The peer's count of reposted slots, as it RDMA WROTE it to us, into
 * the send window. */
static inline void
hear_credits(struct rn_lcore_ep *ep)
{
	rn_credit_returned(&ep->n.tx, __atomic_load_n(
		(const uint32_t *)&ep->probe[EP_PROBE_CREDITS], __ATOMIC_ACQUIRE));
	rn_send_window_allow(&ep->n.sends, rn_credit_allowed(&ep->n.tx));
}

/*
 * Whether a window entry and a credit for one SEND are at hand. The peer's
 * credit word is read only when the counts heard so far leave none.
 */
static inline bool
entry_and_credit(struct rn_lcore_ep *ep)
{
	if (likely(rn_send_window_open(&ep->n.sends)))
		return true;
	hear_credits(ep);
	return rn_send_window_open(&ep->n.sends);
}

/*
 * What the next SEND_IMM carries besides its immediate, the same whichever
 * way it is posted: its entry's wr_id, and whether it asks for a CQE.
 */
struct send_head {
	uint64_t wr_id;
	uint8_t flags;
	bool want;
};

static inline struct send_head
next_send(const struct ep_notify *n, bool want)
{
	return (struct send_head){
		.wr_id = n->send_wr_id | rn_send_window_next(&n->sends),
		.flags = rn_send_window_signal(&n->sends, want) ?
			 RN_WR_SIGNALED : 0,
		.want = want,
	};
}

/*
 * Write a SEND's frame: o's node-level frame, or a's agent frame (or
 * refusal). Inlined with a constant NULL a, the node-level frame pays
 * nothing for the other kinds.
 */
static __rte_always_inline void
frame_write(uint8_t *dst, const struct rn_notify_out *o,
	    const struct rn_lcore_agent_out *a)
{
	if (a == NULL)
		rn_notify_frame_write(dst, o->name, o->name_len, o->msg,
				      o->msg_len);
	else
		rn_notify_agent_frame_write(dst, a->kind, a->reason, a->cookie,
					    a->dst,
					    a->dst_len, a->src, a->src_len,
					    a->name_len, a->msg_len, a->body);
}

/*
 * A node-level frame goes as a SEND_IMM, whose immediate orders it against
 * TCP; an agent frame (or refusal) as a plain SEND, so that the receiver
 * tells the kinds apart by the completion's opcode before it reads a byte.
 */
static __rte_always_inline enum rn_wr_opcode
frame_opcode(const struct rn_lcore_agent_out *a)
{
	return a == NULL ? RN_WR_SEND_IMM : RN_WR_SEND;
}

/*
 * The window entry of a client's SEND just posted, its report to the
 * client attached as id: its success (want), and its failure in any case.
 */
static __rte_always_inline void
push_client(struct ep_notify *n, uint64_t cookie, uint32_t id, bool want)
{
	n->client_sent[rn_send_window_next(&n->sends)] =
		(struct rn_client_sent){
			.cookie = cookie, .seq = n->sends.posted, .id = id,
		};
	n->agent_posted++;
	rn_send_window_push(&n->sends, cookie,
			    want ? RN_SEND_REPORT_CLIENT : 0);
}

/*
 * The window entry of the SEND just posted: o's report (want), or the
 * client a's SEND is for, whose fate is reported to it in any case.
 */
static __rte_always_inline void
push(struct ep_notify *n, const struct rn_notify_out *o,
     const struct rn_lcore_agent_out *a, bool want)
{
	if (a == NULL) {
		rn_send_window_push(&n->sends, o->cookie, want);
	} else if (a->client_id != 0) {
		push_client(n, a->cookie, a->client_id, a->want);
	} else {
		n->agent_posted++;     /* a refusal: nobody to tell */
		rn_send_window_push(&n->sends, a->cookie, 0);
	}
}

/*
 * Post the SEND whose len bytes of frame are written at at: its WQE, with
 * its window entry's wr_id, signalled when want or the window says so.
 * Returns what the entry is to hold.
 */
static __rte_always_inline struct send_head
post_placed(struct ep_notify *n, const struct rn_sq_place *at, uint32_t len,
	    enum rn_wr_opcode opcode, __be32 imm, bool want)
{
	struct send_head h = next_send(n, want);

	rn_sq_post_send_inline_placed(&n->qp->sq, at, len, opcode, imm,
				      h.flags | RN_WR_PACED, h.wr_id);
	return h;
}

/*
 * The common send straight through, with a credit and a window entry known to
 * be at hand: the frame of len bytes (at most max_inline) inline in a WQE
 * that fits the SQ as it is. Nothing changes before all of that is known.
 * The doorbell is the caller's. Inlined in its callers: a call here saves
 * and restores registers for every notification.
 */
static __rte_always_inline bool
post_inline(struct rn_lcore_ep *ep, const struct rn_notify_out *o,
	    const struct rn_lcore_agent_out *a, bool want, __be32 imm,
	    uint64_t len)
{
	struct ep_notify *n = &ep->n;
	struct rn_sq_place at;
	struct send_head h;

	if (unlikely(len > (a == NULL ? n->max_inline : a->inline_max) ||
		     !rn_sq_send_inline_place(&n->qp->sq, (uint32_t)len, &at)))
		return false;
	frame_write(at.data, o, a);
	h = post_placed(n, &at, (uint32_t)len, frame_opcode(a), imm, want);
	push(n, o, a, h.want);
	return true;
}

#endif /* LCORE_POST_PVT_H */
