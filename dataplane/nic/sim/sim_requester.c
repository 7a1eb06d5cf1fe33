/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The requester: executes send WQEs once the doorbell record passes them,
 * each a request frame with the next PSN, and keeps them in flight for the
 * completer. Told by the completer (enum sim_req_state), it waits out an
 * RNR NAK and goes back N: every WQE in flight is executed again, with the
 * same PSNs. It starts no READ past max_rd_atomic and no fenced WQE behind
 * READs: it waits (WAIT_READS), as hardware does. A WQE it cannot execute
 * the first time completes in error here. Under the hold-back fault its
 * frames wait on the QP (enum sim_hold).
 */
#include <rte_byteorder.h>
#include <stdlib.h>
#include <string.h>

#include "sim_wqe_pvt.h"

static const char *const req_state_names[] = {
	[SIM_REQ_SEND] = "SEND", [SIM_REQ_RNR_WAIT] = "RNR_WAIT",
	[SIM_REQ_RESEND] = "RESEND", [SIM_REQ_WAIT_READS] = "WAIT_READS",
};

const char *
rn_sim_req_state_name(enum sim_req_state state)
{
	return req_state_names[state];
}

static const char *const hold_names[] = {
	[SIM_HOLD_OFF] = "OFF", [SIM_HOLD_DELAY] = "DELAY",
	[SIM_HOLD_ALL] = "ALL",
};

const char *
rn_sim_hold_name(enum sim_hold hold)
{
	return hold_names[hold];
}

/* Queue a request frame on the QP under the hold-back fault. */
static void
hold_frame(struct sim_qp *sqp, const struct sim_frame_hdr *h,
	   const void *payload)
{
	size_t plen = payload != NULL ? h->length : 0;
	struct sim_held_frame *f = malloc(sizeof(*f) + plen);

	if (f == NULL)
		return;   /* lost, as on a wire: the retries recover */
	f->due_ns = sqp->hold == SIM_HOLD_DELAY ?
		    sqp->ctx->now_ns + sqp->hold_delay_ns : UINT64_MAX;
	f->next = NULL;
	f->h = *h;
	if (plen > 0)
		memcpy(f->payload, payload, plen);
	if (sqp->held_tail != NULL)
		sqp->held_tail->next = f;
	else
		sqp->held = f;
	sqp->held_tail = f;
	sqp->stats.frames_held++;
	sqp->stats.frames_held_now++;
}

/* Send a request frame: to the wire, or behind those held back (a
 * copy). lent: the payload is registered memory (rn_sim_wire_send_lent()),
 * not the scratch buffer the next WQE reuses. */
static void
transmit(struct sim_qp *sqp, const struct sim_frame_hdr *h,
	 const void *payload, bool lent)
{
	if (likely(sqp->hold == SIM_HOLD_OFF && sqp->held == NULL && lent))
		rn_sim_wire_send_lent(sqp->ctx, &sqp->remote, h, payload);
	else if (likely(sqp->hold == SIM_HOLD_OFF && sqp->held == NULL))
		rn_sim_wire_send(sqp->ctx, &sqp->remote, h, payload);
	else
		hold_frame(sqp, h, payload);
}

/* Let the held frames that are due go, oldest first. */
static void
release_due(struct sim_qp *sqp)
{
	while (sqp->held != NULL && sqp->held->due_ns <= sqp->ctx->now_ns) {
		struct sim_held_frame *f = sqp->held;

		rn_sim_wire_send(sqp->ctx, &sqp->remote, &f->h,
				 f->h.length != 0 ? f->payload : NULL);
		sqp->held = f->next;
		if (sqp->held == NULL)
			sqp->held_tail = NULL;
		sqp->stats.frames_held_now--;
		free(f);
	}
}

void
rn_sim_requester_hold(struct sim_qp *sqp, enum sim_hold hold,
		      uint64_t delay_ns)
{
	sqp->hold = hold;
	sqp->hold_delay_ns = delay_ns;
	if (hold == SIM_HOLD_OFF)
		for (struct sim_held_frame *f = sqp->held; f != NULL;
		     f = f->next)
			f->due_ns = 0;
}

/* Make room in ctx->scratch for len bytes. */
static uint8_t *
scratch(struct sim_ctx *ctx, size_t len)
{
	if (len > ctx->scratch_cap) {
		uint8_t *p = realloc(ctx->scratch, len);

		if (p == NULL)
			return NULL;
		ctx->scratch = p;
		ctx->scratch_cap = len;
	}
	return ctx->scratch;
}

/*
 * Send the request for w from psn on: one frame per packet of the path
 * MTU, each with the next PSN (a READ: one frame, its response's packets
 * taking the PSNs). *npsn: the PSNs it takes. Returns 0 or a local
 * syndrome.
 */
static int
execute(struct sim_qp *sqp, const struct sim_wqe *w, uint32_t psn,
	uint32_t *npsn)
{
	struct sim_ctx *ctx = sqp->ctx;
	struct sim_frame_hdr h = {
		.type = SIM_FRAME_REQUEST,
		.opcode = w->opcode,
		.dst_qpn = sqp->conn.remote_qpn,
		.src_qpn = sqp->qpn,
		.psn = psn,
		.imm = w->imm,
		.raddr = w->raddr,
		.rkey = w->rkey,
	};
	const uint8_t *payload = NULL;
	bool lent = false;
	uint32_t total = 0;
	int rc;

	if (w->opcode == MLX5_OPCODE_RDMA_READ) {
		rc = rn_sim_wqe_gather(sqp, w, NULL, &total,
				       RN_ACCESS_LOCAL_WRITE);
		h.dma_len = total;
	} else if (w->inl) {
		const struct mlx5_wqe_inl_data_seg *inl =
			(const void *)rn_sim_wqe_unit(sqp, w->bb, w->first_data);

		total = rte_be_to_cpu_32(inl->byte_count) & ~MLX5_INLINE_SEG;
		if (4 + total > (w->ds - w->first_data) * 16)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		uint8_t *inl_copy = scratch(ctx, RTE_MAX(total, 1u));

		if (inl_copy == NULL)
			return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
		rn_sim_wqe_copy(sqp, w->bb, w->first_data * 16 + 4, inl_copy,
				total);
		payload = inl_copy;
		h.dma_len = total;
		rc = 0;
	} else {
		uint8_t *gathered = NULL;

		rc = rn_sim_wqe_gather(sqp, w, NULL, &total, 0);
		/* One segment (a transfer chunk): frames are cut from the
		 * registered memory itself, which the wire copies as it
		 * queues them, now, as the gather would. */
		if (rc == 0 && total > 0)
			payload = rn_sim_wqe_contiguous(sqp, w);
		lent = payload != NULL;
		if (rc == 0 && payload == NULL) {
			gathered = scratch(ctx, RTE_MAX(total, 1u));
			if (gathered == NULL)
				return MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR;
			rc = rn_sim_wqe_gather(sqp, w, gathered, &total, 0);
			payload = gathered;
		}
		h.dma_len = total;
	}
	if (rc != 0)
		return rc;
	*npsn = rn_sim_packets(total, sqp->mtu);
	if (w->opcode == MLX5_OPCODE_RDMA_READ) {
		transmit(sqp, &h, NULL, false);
		return 0;
	}
	/* Every packet names the message (opcode, raddr, rkey, dma_len):
	 * the responder places each at the bytes its predecessors took. */
	for (uint32_t k = 0, off = 0; k < *npsn; k++, off += sqp->mtu) {
		h.psn = (psn + k) & 0xffffff;
		h.length = RTE_MIN(sqp->mtu, total - off);
		transmit(sqp, &h, payload + off, lent);
	}
	return 0;
}

/*
 * A WQE that was never sent failed locally. Completions stay in order:
 * what is in flight before it is flushed first, then its error, then the
 * WQEs after it.
 */
static void
fail_unsent(struct sim_qp *sqp, const struct sim_wqe *w, uint8_t syndrome)
{
	uint32_t posted = rn_sim_sq_posted(sqp);

	rn_sim_qp_flush_inflight(sqp);
	rn_sim_cq_push_error(sqp->scq, MLX5_CQE_REQ_ERR, syndrome, w->opcode,
			     sqp->qpn, (uint16_t)sqp->sq_next);
	/* A malformed WQE's size cannot be trusted past what was posted. */
	sqp->sq_next += RTE_MIN(w->nbb, RTE_MAX(posted, 1u));
	rn_sim_qp_enter_err(sqp);
}

/*
 * Go-back-N: execute every WQE in flight again, same PSNs, from the
 * oldest, while the wire holds less than SIM_WIRE_WINDOW unsent (the
 * rest on later runs; all at once would queue every WQE in flight behind
 * the first copies, megabytes the peer reads before any ACK can come).
 * The ACK timer starts over when some went: one that cannot go for a
 * whole timeout counts a retry. Returns the WQEs resent; sqp->resend_at
 * reaches inflight_count when all were (or the QP failed).
 */
static unsigned int
resend_all(struct sim_qp *sqp)
{
	unsigned int sent = 0;

	while (sqp->resend_at < sqp->inflight_count) {
		struct sim_inflight *f;
		struct sim_wqe w;
		uint32_t npsn;
		int rc;

		if (sqp->hold == SIM_HOLD_OFF &&
		    rn_sim_wire_backlog(sqp->ctx, &sqp->remote) >=
			    SIM_WIRE_WINDOW)
			break;
		f = rn_sim_inflight_at(sqp, sqp->resend_at);
		rc = rn_sim_wqe_parse(sqp, f->bb, &w);
		if (rc == 0)
			rc = execute(sqp, &w, f->psn, &npsn);
		if (rc != 0) {
			/* Its memory went away since the first try. */
			rn_sim_completer_fail(sqp, sqp->resend_at, (uint8_t)rc);
			return sent + 1;
		}
		sqp->ctx->stats.retransmits++;
		sqp->resend_at++;
		sent++;
	}
	if (sent > 0)
		rn_sim_ack_timer_start(sqp);
	return sent;
}

/*
 * May w start now? A READ waits while max_rd_atomic READs are out, a
 * fenced WQE while any is (the completer retires them). Else the
 * requester enters WAIT_READS, counted once per wait.
 */
static bool
may_start(struct sim_qp *sqp, const struct sim_wqe *w)
{
	uint32_t below;

	if (w->fence && sqp->reads_out > 0) {
		below = 1;
		sqp->stats.fence_waits++;
	} else if (w->opcode == MLX5_OPCODE_RDMA_READ &&
		   sqp->reads_out >= sqp->max_rd_atomic) {
		below = sqp->max_rd_atomic;
		sqp->stats.read_waits++;
	} else {
		return true;
	}
	sqp->wait_reads_below = below;
	sqp->req_state = SIM_REQ_WAIT_READS;
	return false;
}

/* Execute the WQEs the doorbell record passed, up to SIM_EXEC_BUDGET. */
static unsigned int
send_new(struct sim_qp *sqp)
{
	unsigned int done = 0;
	uint32_t head;

	/* Acquire, as rn_sim_sq_posted(): the WQEs before head are written. */
	head = rte_be_to_cpu_32(__atomic_load_n(&sqp->dbrec[MLX5_SND_DBR],
						__ATOMIC_ACQUIRE)) & 0xffff;
	while (((head - sqp->sq_next) & 0xffff) != 0 && done < SIM_EXEC_BUDGET) {
		struct sim_wqe w;
		uint32_t npsn = 1;
		int rc;

		/* The wire has a window's worth to send: later. */
		if (sqp->hold == SIM_HOLD_OFF &&
		    rn_sim_wire_backlog(sqp->ctx, &sqp->remote) >=
			    SIM_WIRE_WINDOW)
			return done;
		rc = rn_sim_wqe_parse(sqp, sqp->sq_next, &w);
		if (rc == 0 && !may_start(sqp, &w))
			return done;
		if (rc == 0)
			rc = execute(sqp, &w, sqp->next_psn, &npsn);
		if (rc != 0) {
			fail_unsent(sqp, &w, (uint8_t)rc);
			return done + 1;
		}
		if (sqp->inflight_count == 0)
			rn_sim_ack_timer_start(sqp);
		*rn_sim_inflight_at(sqp, sqp->inflight_count) =
			(struct sim_inflight){ .bb = sqp->sq_next,
					       .psn = sqp->next_psn,
					       .last_psn = (sqp->next_psn +
							    npsn - 1) &
							   0xffffff,
					       .opcode = w.opcode,
					       .signaled = w.signaled };
		sqp->inflight_count++;
		if (w.opcode == MLX5_OPCODE_RDMA_READ &&
		    ++sqp->reads_out > sqp->stats.reads_outstanding_max)
			sqp->stats.reads_outstanding_max = sqp->reads_out;
		sqp->next_psn = (sqp->next_psn + npsn) & 0xffffff;
		sqp->sq_next += w.nbb;
		done++;
	}
	return done;
}

unsigned int
rn_sim_requester_run(struct sim_qp *sqp)
{
	if (sqp->state == RN_QP_ERR)
		return rn_sim_qp_flush_new(sqp);
	if (sqp->state != RN_QP_RTS)
		return 0;
	if (unlikely(sqp->held != NULL))
		release_due(sqp);
	for (;;) {
		switch (sqp->req_state) {
		case SIM_REQ_WAIT_READS:
			if (sqp->reads_out >= sqp->wait_reads_below)
				return 0;
			sqp->req_state = SIM_REQ_SEND;
			break;
		case SIM_REQ_RNR_WAIT:
			if (sqp->ctx->now_ns < sqp->rnr_resume_ns)
				return 0;
			sqp->req_state = SIM_REQ_RESEND;
			sqp->resend_at = 0;
			rn_sim_ack_timer_start(sqp);
			break;
		case SIM_REQ_RESEND: {
			unsigned int sent = resend_all(sqp);

			if (sqp->state != RN_QP_RTS)
				return sent;   /* a WQE failed: in ERR */
			if (sqp->resend_at < sqp->inflight_count)
				return sent;   /* the window is full */
			sqp->resend_at = 0;
			sqp->req_state = SIM_REQ_SEND;
			break;
		}
		case SIM_REQ_SEND:
			return send_new(sqp);
		}
	}
}
