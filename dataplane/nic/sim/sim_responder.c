/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The responder: executes requests in PSN order. A request for a QP that
 * does not exist, is not ready, or is connected to someone else is dropped,
 * as the wire would drop it: the requester's retries then run out. Behind
 * the expected PSN it is a duplicate (acknowledged again, READs re-read);
 * ahead of it, dropped until the requester goes back.
 *
 * Checks, in the order of rxe's responder (rxe_resp.c), each failure a
 * class C error there: the NAK goes back, the QP enters ERR:
 *   1. the QP grants the operation (RTR access): else NAK invalid request
 *      (REMOTE_INVAL_REQ at the requester);
 *   2. resources: a receive WQE for SEND and WRITE_IMM (else RNR NAK,
 *      nothing done), a READ resource, max_dest_rd_atomic of them (else
 *      NAK invalid request);
 *   3. the rkey names a live registration that grants the access and
 *      holds [raddr, raddr + length): else NAK remote access error
 *      (REMOTE_ACCESS); a WRITE_IMM's receive WQE then completes with
 *      LOCAL_ACCESS, as a ConnectX reports it.
 */
#include <rte_byteorder.h>
#include <string.h>

#include "sim_pvt.h"

/* Send a reply now, on wire (NULL: the one the QP's frames go on). */
static void
send_reply(struct sim_ctx *ctx, struct sim_wire *wire,
	   const struct sim_qp *sqp, uint8_t type, uint32_t psn,
	   uint8_t syndrome, const void *data, uint32_t len)
{
	struct sim_frame_hdr h = {
		.length = len,
		.type = type,
		.syndrome = syndrome,
		.rnr_timer = sqp->conn.min_rnr_timer,
		.dst_qpn = sqp->conn.remote_qpn,
		.src_qpn = sqp->qpn,
		.psn = psn,
	};

	if (wire != NULL)
		rn_sim_wire_reply(ctx, wire, &h, data);
	else
		rn_sim_wire_send_lent(ctx, &sqp->remote, &h, data);
}

/*
 * Make the replies owed, oldest first, until the wire holds limit bytes
 * unsent. A READ's bytes are read from its region as its packets are
 * made: a region gone since the READ was accepted fails it (NAK remote
 * access error, the QP in ERR, which drops the rest).
 */
static unsigned int
pump(struct sim_qp *sqp, size_t limit)
{
	struct sim_ctx *ctx = sqp->ctx;
	unsigned int made = 0;

	while (sqp->resp_count > 0) {
		struct sim_resp *r = &sqp->resp[sqp->resp_head];
		struct sim_wire *wire = sqp->resp_wire;
		const struct sim_mr *m;
		size_t queued;

		if (wire != NULL && !rn_sim_wire_live(ctx, wire))
			sqp->resp_wire = wire = NULL;
		queued = wire != NULL ? rn_sim_wire_queued(wire) :
			 rn_sim_wire_backlog(ctx, &sqp->remote);
		if (queued >= limit)
			break;
		if (r->type != SIM_FRAME_READ_RESP) {
			send_reply(ctx, wire, sqp, r->type, r->psn, 0, NULL, 0);
			made++;
			r->pkts = 0;
		}
		m = r->pkts > 0 ? rn_sim_mr_check(ctx, r->rkey, r->raddr, r->left,
						  RN_ACCESS_REMOTE_READ) : NULL;
		if (r->pkts > 0 && m == NULL) {
			sqp->stats.reads_region_gone++;
			send_reply(ctx, wire, sqp, SIM_FRAME_NAK, r->psn,
				   MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR, NULL, 0);
			rn_sim_qp_enter_err(sqp);
			return made + 1;
		}
		/* Packets of the path MTU, the READ's PSNs, from the region
		 * where it lies (lent to the wire, rn_sim_wire_unlend()). */
		while (r->pkts > 0 && queued < limit) {
			uint32_t n = RTE_MIN(sqp->mtu, r->left);

			send_reply(ctx, wire, sqp, SIM_FRAME_READ_RESP, r->psn, 0,
				   rn_sim_mr_ptr(m, r->raddr), n);
			r->psn = (r->psn + 1) & 0xffffff;
			r->raddr += n;
			r->left -= n;
			r->pkts--;
			queued += sizeof(struct sim_frame_hdr) + n;
			made++;
		}
		if (r->pkts > 0)
			break;
		if (r->type == SIM_FRAME_READ_RESP && !r->duplicate)
			sqp->resp_made++;
		sqp->resp_head = (sqp->resp_head + 1) % SIM_RESP_MAX;
		sqp->resp_count--;
	}
	return made;
}

unsigned int
rn_sim_responder_pump(struct sim_qp *sqp)
{
	if (sqp->state != RN_QP_RTR && sqp->state != RN_QP_RTS)
		return 0;
	return pump(sqp, SIM_WIRE_WINDOW);
}

void
rn_sim_responder_sent(struct sim_qp *sqp)
{
	sqp->resp_reads -= sqp->resp_made;
	sqp->resp_made = 0;
}

/* A place at the tail of the replies owed (made at once when they are
 * all taken: a flood of duplicates). The ones after go on wire. */
static struct sim_resp *
owe(struct sim_qp *sqp, struct sim_wire *wire)
{
	if (sqp->resp_count == SIM_RESP_MAX)
		pump(sqp, SIZE_MAX);
	sqp->resp_wire = wire;
	return &sqp->resp[(sqp->resp_head + sqp->resp_count++) % SIM_RESP_MAX];
}

/*
 * An acknowledgement (ACK, RNR NAK, NAK): sent at once when nothing is
 * owed, else behind what is, never overtaking a READ's response (the
 * requester takes an ACK as the end of everything before it). An ACK
 * behind an ACK replaces it: both say "everything up to psn". A NAK ends
 * the QP: what is owed before it is made now.
 */
static void
reply(struct sim_ctx *ctx, struct sim_wire *wire, struct sim_qp *sqp,
      uint8_t type, uint32_t psn, uint8_t syndrome)
{
	struct sim_resp *tail;

	if (sqp->resp_count == 0 || type == SIM_FRAME_NAK) {
		if (sqp->resp_count > 0)
			pump(sqp, SIZE_MAX);
		send_reply(ctx, wire, sqp, type, psn, syndrome, NULL, 0);
		return;
	}
	tail = &sqp->resp[(sqp->resp_head + sqp->resp_count - 1) % SIM_RESP_MAX];
	if (type == SIM_FRAME_ACK && tail->type == SIM_FRAME_ACK) {
		tail->psn = psn;
		return;
	}
	*owe(sqp, wire) = (struct sim_resp){ .type = type, .psn = psn,
					     .pkts = 1 };
}

static uint8_t *
rq_wqe(const struct sim_qp *sqp, uint32_t index)
{
	return sqp->rq_buf + ((size_t)(index & (sqp->rq_wqe_cnt - 1)) <<
			      sqp->rq_stride_shift);
}

/*
 * Can the next receive WQE take a message of len bytes? Returns 0, or the
 * responder syndrome: LOCAL_PROT for a bad lkey, LOCAL_LENGTH when it is
 * too small. Checked on a message's first packet, for all of it.
 */
static int
recv_check(const struct sim_qp *sqp, uint32_t len)
{
	const struct mlx5_wqe_data_seg *seg = (const void *)rq_wqe(sqp, sqp->rq_next);
	uint64_t capacity = 0;

	for (uint32_t i = 0; i < sqp->rq_max_sge; i++) {
		uint32_t lkey = rte_be_to_cpu_32(seg[i].lkey);
		uint64_t n = rn_sim_seg_bytes(seg[i].byte_count);

		if (lkey == MLX5_INVALID_LKEY)
			break;
		if (rn_sim_mr_check(sqp->ctx, lkey, rte_be_to_cpu_64(seg[i].addr), n,
				    RN_ACCESS_LOCAL_WRITE) == NULL)
			return MLX5_CQE_SYNDROME_LOCAL_PROT_ERR;
		capacity += n;
	}
	return capacity < len ? MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR : 0;
}

/* Place len bytes at byte offset of the next receive WQE (checked). */
static void
recv_place(const struct sim_qp *sqp, uint32_t offset, const uint8_t *data,
	   uint32_t len)
{
	const struct mlx5_wqe_data_seg *seg =
		(const void *)rq_wqe(sqp, sqp->rq_next);
	uint32_t done = 0;

	for (uint32_t i = 0; done < len; i++) {
		uint64_t n = rn_sim_seg_bytes(seg[i].byte_count);
		const struct sim_mr *m;
		uint64_t iova;
		uint32_t take;

		if (offset >= n) {   /* placed by earlier packets */
			offset -= (uint32_t)n;
			continue;
		}
		take = (uint32_t)RTE_MIN(n - offset, (uint64_t)(len - done));
		iova = rte_be_to_cpu_64(seg[i].addr) + offset;
		m = rn_sim_mr_check(sqp->ctx, rte_be_to_cpu_32(seg[i].lkey), iova,
				    take, RN_ACCESS_LOCAL_WRITE);
		if (m == NULL)
			return;   /* recv_check() passed it: not reached */
		memcpy(rn_sim_mr_ptr(m, iova), data + done, take);
		offset = 0;
		done += take;
	}
}

static void
push_recv_cqe(struct sim_qp *sqp, uint8_t cqe_opcode, uint32_t len,
	      uint32_t imm)
{
	struct mlx5_cqe64 cqe;

	memset(&cqe, 0, sizeof(cqe));
	cqe.byte_cnt = rte_cpu_to_be_32(len);
	cqe.imm_inval_pkey = imm;
	cqe.sop_drop_qpn = rte_cpu_to_be_32(sqp->qpn);
	cqe.wqe_counter = rte_cpu_to_be_16((uint16_t)sqp->rq_next);
	cqe.op_own = (uint8_t)(cqe_opcode << 4);
	rn_sim_cq_push(sqp->rcq, &cqe);
	sqp->rq_next++;
}

/* A responder error: its receive WQE (if any) completes in error, the QP
 * enters ERR, and the requester is told with syndrome. */
static void
fail(struct sim_ctx *ctx, struct sim_wire *wire, struct sim_qp *sqp,
     uint32_t psn, uint8_t local_syndrome, bool consumed_recv,
     uint8_t requester_syndrome)
{
	if (consumed_recv) {
		rn_sim_cq_push_error(sqp->rcq, MLX5_CQE_RESP_ERR, local_syndrome, 0,
				     sqp->qpn, (uint16_t)sqp->rq_next);
		sqp->rq_next++;
	}
	reply(ctx, wire, sqp, SIM_FRAME_NAK, psn, requester_syndrome);
	rn_sim_qp_enter_err(sqp);
}

/* Check 3: the rkey grants access to len bytes at raddr. */
static bool
rkey_grants(struct sim_ctx *ctx, uint32_t rkey, uint64_t raddr, uint32_t len,
	    uint32_t access)
{
	return rn_sim_mr_check(ctx, rkey, raddr, len, access) != NULL;
}

/*
 * Place one packet of the message in progress (sqp->rx) at its offset:
 * into the receive WQE (SEND), or at raddr + offset (WRITE), checked again
 * there: the region may have gone since the first packet. The last packet
 * completes the message: the receive CQE (SEND, WRITE_IMM), the ACK.
 */
static void
place_packet(struct sim_ctx *ctx, struct sim_wire *wire, struct sim_qp *sqp,
	     const struct sim_frame_hdr *h, const uint8_t *payload)
{
	struct sim_rx_msg *rx = &sqp->rx;
	bool imm = h->opcode == MLX5_OPCODE_RDMA_WRITE_IMM ||
		   h->opcode == MLX5_OPCODE_SEND_IMM;
	const struct sim_mr *m;

	if (h->opcode == MLX5_OPCODE_SEND ||
	    h->opcode == MLX5_OPCODE_SEND_IMM) {
		recv_place(sqp, rx->offset, payload, h->length);
	} else if ((m = rn_sim_mr_check(ctx, rx->rkey, rx->raddr + rx->offset,
					h->length,
					RN_ACCESS_REMOTE_WRITE)) == NULL) {
		rx->active = false;
		fail(ctx, wire, sqp, h->psn, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR,
		     imm, MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	} else if (rn_sim_mr_ptr(m, rx->raddr + rx->offset) != payload) {
		/* (A payload the wire read to its place is there.) */
		memcpy(rn_sim_mr_ptr(m, rx->raddr + rx->offset), payload,
		       h->length);
	}
	sqp->expected_psn = (sqp->expected_psn + 1) & 0xffffff;
	rx->offset += h->length;
	rx->active = rx->offset < rx->dma_len;
	if (rx->active)
		return;   /* acknowledged with its last packet */
	switch (h->opcode) {
	case MLX5_OPCODE_SEND:
		push_recv_cqe(sqp, MLX5_CQE_RESP_SEND, rx->dma_len, 0);
		break;
	case MLX5_OPCODE_SEND_IMM:
		push_recv_cqe(sqp, MLX5_CQE_RESP_SEND_IMM, rx->dma_len, h->imm);
		break;
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		push_recv_cqe(sqp, MLX5_CQE_RESP_WR_IMM, rx->dma_len, h->imm);
		break;
	}
	reply(ctx, wire, sqp, SIM_FRAME_ACK, h->psn, 0);
}

/* A SEND or WRITE's first packet passed checks 1 and 2: check 3. */
static bool
first_checks(struct sim_ctx *ctx, struct sim_wire *wire, struct sim_qp *sqp,
	     const struct sim_frame_hdr *h)
{
	int rc;

	switch (h->opcode) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		rc = recv_check(sqp, h->dma_len);
		if (rc == 0)
			return true;
		fail(ctx, wire, sqp, h->psn, (uint8_t)rc, true,
		     rc == MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR ?
			     MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR :
			     MLX5_CQE_SYNDROME_REMOTE_OP_ERR);
		return false;
	default:   /* RDMA_WRITE(_IMM) */
		if (rkey_grants(ctx, h->rkey, h->raddr, h->dma_len,
				RN_ACCESS_REMOTE_WRITE))
			return true;
		fail(ctx, wire, sqp, h->psn, MLX5_CQE_SYNDROME_LOCAL_ACCESS_ERR,
		     h->opcode == MLX5_OPCODE_RDMA_WRITE_IMM,
		     MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return false;
	}
}

/*
 * A READ: checked now, its response owed, made as the wire drains
 * (pump()); it holds one of the QP's max_dest_rd_atomic READ resources
 * until the end of the progress turn in which its last packet is made
 * (rn_sim_responder_sent()). A requester that keeps within its
 * max_rd_atomic, no more than this, never finds them taken: it starts a
 * READ only once an earlier response reached it. A duplicate (a resent
 * READ) re-reads in the resource it had.
 */
static void
execute_read(struct sim_ctx *ctx, struct sim_wire *wire, struct sim_qp *sqp,
	     const struct sim_frame_hdr *h, bool duplicate)
{
	if (!duplicate && sqp->resp_reads >= sqp->max_dest_rd_atomic) {
		sqp->stats.reads_refused++;
		fail(ctx, wire, sqp, h->psn, 0, false,
		     MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		return;
	}
	uint32_t n = rn_sim_packets(h->dma_len, sqp->mtu);

	if (!rkey_grants(ctx, h->rkey, h->raddr, h->dma_len,
			 RN_ACCESS_REMOTE_READ)) {
		if (!duplicate)
			fail(ctx, wire, sqp, h->psn, 0, false,
			     MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR);
		return;
	}
	if (!duplicate) {
		sqp->expected_psn = (sqp->expected_psn + n) & 0xffffff;
		sqp->resp_reads++;
	}
	/* n packets of the path MTU, the READ's PSNs. */
	*owe(sqp, wire) = (struct sim_resp){ .type = SIM_FRAME_READ_RESP,
					     .duplicate = duplicate,
					     .psn = h->psn, .pkts = n,
					     .left = h->dma_len,
					     .rkey = h->rkey,
					     .raddr = h->raddr };
	pump(sqp, SIM_WIRE_WINDOW);
}

/* Check 1: may the peer ask this QP for opcode at all (RTR access)? */
static bool
qp_grants(const struct sim_qp *sqp, uint8_t opcode)
{
	switch (opcode) {
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		return (sqp->conn.access & RN_ACCESS_REMOTE_WRITE) != 0;
	case MLX5_OPCODE_RDMA_READ:
		return (sqp->conn.access & RN_ACCESS_REMOTE_READ) != 0;
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		return true;
	default:
		return false;   /* not an opcode this device executes */
	}
}

/* Does a packet continue the message in progress? */
static bool
continues(const struct sim_rx_msg *rx, const struct sim_frame_hdr *h)
{
	return h->opcode == rx->opcode && h->dma_len == rx->dma_len &&
	       h->raddr == rx->raddr && h->rkey == rx->rkey &&
	       h->length != 0 && h->length <= rx->dma_len - rx->offset;
}

/*
 * A request packet from sqp's peer: execute it in PSN order. The first
 * packet of a message is checked for all of it (dma_len); the packets
 * after it continue it.
 */
static void
execute_request(struct sim_ctx *ctx, struct sim_wire *wire,
		struct sim_qp *sqp, const struct sim_frame_hdr *h,
		const uint8_t *payload)
{
	int32_t d;

	d = rn_sim_psn_diff(h->psn, sqp->expected_psn);
	if (d > 0) {
		ctx->stats.dropped_out_of_order++;
		return;
	}
	if (d < 0) {
		ctx->stats.duplicates++;
		if (h->opcode == MLX5_OPCODE_RDMA_READ)
			execute_read(ctx, wire, sqp, h, true);
		else
			reply(ctx, wire, sqp, SIM_FRAME_ACK,
			      (sqp->expected_psn - 1) & 0xffffff, 0);
		return;
	}
	if (sqp->rx.active) {
		if (!continues(&sqp->rx, h)) {
			ctx->stats.dropped_malformed++;
			return;
		}
		place_packet(ctx, wire, sqp, h, payload);
		return;
	}
	if (!qp_grants(sqp, h->opcode)) {
		fail(ctx, wire, sqp, h->psn, 0, false,
		     MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR);
		return;
	}
	if (h->opcode == MLX5_OPCODE_RDMA_READ) {
		execute_read(ctx, wire, sqp, h, false);
		return;
	}
	/* SEND, SEND_IMM and WRITE_IMM need a receive WQE: without one,
	 * RNR NAK, nothing done. */
	if (h->opcode != MLX5_OPCODE_RDMA_WRITE && rn_sim_rq_posted(sqp) == 0) {
		ctx->stats.rnr_naks_sent++;
		reply(ctx, wire, sqp, SIM_FRAME_RNR_NAK, h->psn, 0);
		return;
	}
	if (!first_checks(ctx, wire, sqp, h))
		return;
	sqp->rx = (struct sim_rx_msg){ .opcode = h->opcode,
				       .dma_len = h->dma_len,
				       .raddr = h->raddr, .rkey = h->rkey };
	place_packet(ctx, wire, sqp, h, payload);
}

/* Would the frame h be taken now? What rn_sim_responder_request()
 * checks first. */
static bool
taken(struct sim_qp *sqp, const struct sim_wire *wire,
      const struct sim_frame_hdr *h)
{
	return sqp != NULL &&
	       (sqp->state == RN_QP_RTR || sqp->state == RN_QP_RTS) &&
	       rn_sim_qp_from_peer(sqp, wire, h->src_qpn);
}

bool
rn_sim_responder_place(struct sim_ctx *ctx, struct sim_wire *wire,
		       const struct sim_frame_hdr *h, struct sim_place *out)
{
	struct sim_qp *sqp = rn_sim_qp_lookup(ctx, h->dst_qpn);
	const struct sim_mr *m;
	uint32_t off;

	if ((h->opcode != MLX5_OPCODE_RDMA_WRITE &&
	     h->opcode != MLX5_OPCODE_RDMA_WRITE_IMM) ||
	    !taken(sqp, wire, h) || h->dma_len > RN_SIM_MAX_MSG ||
	    h->length > h->dma_len || h->length == 0 ||
	    h->psn != sqp->expected_psn)
		return false;
	if (sqp->rx.active) {
		if (!continues(&sqp->rx, h))
			return false;
		off = sqp->rx.offset;
	} else {
		/* A first packet: execute_request()'s checks. */
		if (!qp_grants(sqp, h->opcode) ||
		    (h->opcode == MLX5_OPCODE_RDMA_WRITE_IMM &&
		     rn_sim_rq_posted(sqp) == 0))
			return false;
		off = 0;
	}
	m = rn_sim_mr_check(ctx, h->rkey, h->raddr + off, h->dma_len - off,
			    RN_ACCESS_REMOTE_WRITE);
	if (m == NULL)
		return false;
	*out = (struct sim_place){ .dst = rn_sim_mr_ptr(m, h->raddr + off),
				   .span = h->dma_len - off,
				   .mtu = sqp->mtu };
	return true;
}

bool
rn_sim_responder_request(struct sim_ctx *ctx, struct sim_wire *wire,
			 const struct sim_frame_hdr *h, const uint8_t *payload)
{
	struct sim_qp *sqp = rn_sim_qp_lookup(ctx, h->dst_qpn);

	if (!taken(sqp, wire, h)) {
		ctx->stats.dropped_no_qp++;
		return false;
	}
	/* A packet carries no more than its message, which is no larger
	 * than the device's max_msg_sz; a READ request carries nothing; only
	 * an empty message has an empty packet (checked as it continues). */
	if (h->dma_len > RN_SIM_MAX_MSG ||
	    (h->opcode == MLX5_OPCODE_RDMA_READ ? h->length != 0 :
	     h->length > h->dma_len || (h->length == 0 && h->dma_len != 0))) {
		ctx->stats.dropped_malformed++;
		return true;
	}
	execute_request(ctx, wire, sqp, h, payload);
	return true;
}
