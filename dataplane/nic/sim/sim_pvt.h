/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_SIM_PVT_H
#define RN_SIM_PVT_H

/*
 * The software mlx5 device. One struct sim_ctx per device context, run by
 * the lcore that owns it, from rn_nic_progress(): no thread of its own.
 * One file per engine, as in Linux rxe:
 *   sim_device.c     context, provider operations, progress loop
 *   sim_mr.c         memory registrations, key and bounds checks
 *   sim_qp.c         QP lifecycle: rings, state machine, flushing in ERR
 *   sim_requester.c  executes send WQEs, and executes them again (go-back-N)
 *   sim_completer.c  what comes back for them (ACK, READ response, NAKs)
 *                    or does not (ACK timeout); requester CQEs
 *   sim_responder.c  executes incoming requests against the RQ and MRs
 *   sim_wqe.c        reads send WQEs: parse, gather, scatter
 *   sim_cq.c         CQE writer: owner bit, overrun detection
 *   sim_wire.c       TCP wires between contexts, framing, fault injection
 *   sim_event.c      asynchronous events for the control thread
 * Calls go one way: the device calls the engines; the requester calls the
 * completer to fail a WQE in flight; the engines call the QP, WQE reader,
 * MRs, CQ writer and wire. The wire hands the frames it reads to the
 * device's callback. One call goes back up: a CQ that overruns fails at
 * once the QPs completing to it (sim_cq.c -> sim_qp.c), as hardware does.
 */

#include <netinet/in.h>
#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_spinlock.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "rn_nic.h"
#include "rn_sim.h"
#include "sim_frame_pvt.h"

#define SIM_MAX_MRS 1024
#define SIM_MAX_QPS 4096
#define SIM_QPN_BASE 0x100        /* QPNs 0..0xff are reserved, as on IB */
#define SIM_BF_SIZE 256           /* doorbell register halves */
#define SIM_EXEC_BUDGET 64        /* WQEs one QP executes per progress */
/* Bytes a wire may hold that its socket has not taken: past them the
 * requester starts no further WQE and the responder makes no further READ
 * response packet, until the socket drains. A turn so leaves no backlog
 * of a whole batch on the stream (the frames behind it, ACKs and
 * notifications, would wait for all of it), and the payloads queued by
 * pointer stay few. */
#define SIM_WIRE_WINDOW (4u << 20)
#define SIM_RESP_MAX 64           /* replies a responder may owe at once */

/* A data segment's byte count: 0 stands for 2 GiB (mlx5 format). */
static inline uint64_t
rn_sim_seg_bytes(__be32 byte_count)
{
	uint32_t n = rte_be_to_cpu_32(byte_count);

	return n == 0 ? 1ull << 31 : n;
}

struct sim_ctx;
struct sim_wire;

/*
 * A remote device as a QP knows it: its IPv4 address (network order) and
 * TCP port, and the token of the endpoint whose QPs talk to it. Wires are
 * told apart by all three: each endpoint's QPs have connections of their
 * own, which only its token opens.
 */
struct sim_addr {
	uint32_t ip;
	uint16_t port;
	uint8_t token[RN_NIC_TOKEN_SIZE];
};

/*
 * Where the payload of a data frame (a WRITE packet, a READ response
 * packet) goes if it were delivered now: dst, in registered memory, and
 * the bytes of its message from there on (span: contiguous, checked),
 * whose packets are of mtu bytes but the last. Returns false when it is
 * not placed in one piece (or not at all): the wire reads it into its
 * buffer and delivery copies it.
 */
struct sim_place {
	uint8_t *dst;
	uint32_t span;
	uint32_t mtu;
};

/* A registration: the device and peers name its bytes by iova; they lie
 * at local in this process (iova == local unless rn_nic_mr_reg_iova()). */
struct sim_mr {
	uint64_t iova;
	uint8_t *local;
	uint64_t length;
	uint32_t access;          /* enum rn_access */
	uint32_t key;             /* lkey == rkey; 0: a free entry */
};

struct sim_cq {
	struct sim_ctx *ctx;
	uint8_t *buf;
	uint32_t cqe_cnt;
	uint32_t pi;              /* CQEs written; free running */
	__be32 dbrec[2];          /* [0]: consumer index, written by software */
	bool error;               /* overrun: no CQE is written any more */
};

/* A WQE sent and not yet acknowledged. */
struct sim_inflight {
	uint32_t bb;              /* its first BB, free running */
	uint32_t psn;             /* of its first packet */
	uint32_t last_psn;        /* of its last (a READ: last response) */
	uint8_t opcode;
	bool signaled;
};

/*
 * Packets of a message of len bytes at path MTU mtu: each a frame with
 * its own PSN, all full but the last; at least one (an empty message). A
 * READ request is one frame and its response these packets, each taking
 * one of the READ's PSNs, as on IB.
 */
static inline uint32_t
rn_sim_packets(uint32_t len, uint32_t mtu)
{
	return len == 0 ? 1 : (len + mtu - 1) / mtu;
}

/*
 * The responder's message in progress: the first packet of a request
 * longer than one was checked and executed; the rest must continue it,
 * PSN after PSN, each placed at offset.
 */
struct sim_rx_msg {
	bool active;
	uint8_t opcode;
	uint32_t offset;          /* bytes placed so far */
	uint32_t dma_len;         /* the message's */
	uint64_t raddr;
	uint32_t rkey;
};

/*
 * A reply the responder owes, made once the wire has room, in the order
 * owed: a READ's response, packet by packet from the registered memory
 * (checked again for each turn's packets), or an acknowledgement that
 * must not overtake the responses before it.
 */
struct sim_resp {
	uint8_t type;             /* SIM_FRAME_READ_RESP, _ACK or _RNR_NAK */
	bool duplicate;           /* a re-read: holds no READ resource */
	uint32_t psn;             /* of its next packet */
	uint32_t pkts;            /* READ: packets still to make */
	uint32_t left;            /* READ: bytes still to send */
	uint32_t rkey;
	uint64_t raddr;           /* READ: its next byte, by iova */
};

/*
 * What the requester does on its next run, beside the QP's own state (RTS).
 * The completer moves it out of SEND: an RNR NAK to RNR_WAIT, an ACK timeout
 * to RESEND; the requester moves it back once it has resent. The requester
 * itself enters WAIT_READS when the next WQE may not start yet (a READ
 * over max_rd_atomic, or a fenced WQE behind READs: hardware waits for
 * both, as qib's requester does), and leaves it once the completer
 * retired enough READs.
 */
enum sim_req_state {
	SIM_REQ_SEND,             /* execute WQEs as the doorbell passes them */
	SIM_REQ_RNR_WAIT,         /* wait until rnr_resume_ns, then RESEND */
	SIM_REQ_RESEND,           /* go-back-N: execute every WQE in flight again */
	SIM_REQ_WAIT_READS,       /* wait until reads_out < wait_reads_below */
};

const char *rn_sim_req_state_name(enum sim_req_state state);

/*
 * The fault mode that holds one QP's request frames back (rn_sim_qp_hold(),
 * rn_sim_qp_delay()): the requester queues them on the QP instead of the
 * wire, in order, until released (HOLD) or due (DELAY). Other QPs' frames
 * go on, so a later message on another QP overtakes them.
 */
enum sim_hold {
	SIM_HOLD_OFF,             /* frames go to the wire at once */
	SIM_HOLD_DELAY,           /* each frame waits hold_delay_ns */
	SIM_HOLD_ALL,             /* every frame waits until released */
};

const char *rn_sim_hold_name(enum sim_hold hold);

/* A request frame held back, in the order the requester made it. */
struct sim_held_frame {
	uint64_t due_ns;          /* UINT64_MAX: until released */
	struct sim_held_frame *next;
	struct sim_frame_hdr h;
	uint8_t payload[];
};

struct sim_qp {
	struct rn_qp *qp;
	struct sim_ctx *ctx;
	uint32_t qpn;
	enum rn_qp_state state;
	struct sim_cq *scq, *rcq;
	struct sim_qp *next;      /* ctx->live list */

	__be32 *dbrec;            /* [MLX5_RCV_DBR], [MLX5_SND_DBR] */
	uint8_t *sq_buf;
	uint32_t sq_wqe_cnt;      /* BBs */
	uint32_t sq_next;         /* next BB to execute; free running */
	uint8_t *rq_buf;
	uint32_t rq_wqe_cnt;
	uint32_t rq_stride_shift;
	uint32_t rq_max_sge;
	uint32_t rq_next;         /* next receive WQE to consume */

	struct rn_qp_connect conn;
	struct sim_addr remote;
	uint32_t mtu;             /* path MTU in bytes (RTR): packet payload */

	/* Requester and completer: WQEs in flight, oldest first. */
	struct sim_inflight *inflight;
	uint32_t inflight_head, inflight_count, inflight_cap;
	uint32_t next_psn;
	enum sim_req_state req_state;
	uint32_t resend_at;       /* RESEND: WQEs in flight resent so far,
				   * oldest first (a resend keeps to the
				   * wire's window, as new WQEs do) */
	uint64_t deadline_ns;     /* ACK timeout of the oldest in flight */
	uint8_t retries_left;
	uint8_t rnr_left;
	uint64_t rnr_resume_ns;
	uint32_t rd_resp_pkts;    /* of the oldest READ: response packets */
	uint32_t rd_resp_bytes;   /* and bytes scattered so far */
	uint8_t max_rd_atomic;    /* READs out at most (RTS) */
	uint32_t reads_out;       /* READs in flight, response not yet in */
	uint32_t wait_reads_below;/* WAIT_READS: until reads_out is below */
	enum sim_hold hold;
	uint64_t hold_delay_ns;
	struct sim_held_frame *held, *held_tail;

	/* Responder. */
	uint32_t expected_psn;
	struct sim_rx_msg rx;
	uint8_t max_dest_rd_atomic;  /* READs it takes at once (RTR) */
	uint32_t resp_reads;      /* READ responses not yet all on the wire */
	uint32_t resp_made;       /* of which made this turn */
	struct sim_resp resp[SIM_RESP_MAX];   /* owed, oldest at resp_head */
	uint32_t resp_head, resp_count;
	struct sim_wire *resp_wire;   /* where they go: the requests' wire */

	struct rn_sim_qp_stats stats;
};

/* Fault injection toward one remote device (rn_sim_wire_cut(), _delay()). */
struct sim_fault {
	struct sim_addr addr;
	uint64_t delay_ns;        /* >0: delayed, not cut */
	bool cut;
	struct sim_fault *next;
};

enum sim_event {
	SIM_EVENT_CQ_ERR,         /* fatal: the CQ stopped */
	SIM_EVENT_PORT_ERR,       /* tests: rn_sim_raise_event() */
};

struct sim_ctx {
	struct rn_nic nic;
	struct sim_addr self;
	int listen_fd;
	int epoll_fd;             /* listener and wires: the lcore sleeps on it */
	uint64_t now_ns;          /* CLOCK_MONOTONIC, once per progress */
	struct sim_mr mrs[SIM_MAX_MRS];
	uint32_t mr_generation;
	struct sim_qp *qps[SIM_MAX_QPS];   /* by qpn - SIM_QPN_BASE */
	struct sim_qp *live;
	struct sim_wire *wires;
	uint64_t wire_sweep_ns;   /* next check of the wires' HELLO deadlines
				   * and of the tokens they were opened with */
	uint64_t refusal_log_ns;  /* refused wires: next line logged then */
	uint64_t refusals_unlogged;
	struct sim_fault *faults;
	struct rn_sim_stats stats;
	uint8_t *scratch;         /* gathered payloads */
	size_t scratch_cap;
	/* Asynchronous events, raised here, taken by another thread
	 * (sim_event.c): a CQ error (sticky: told once), port events. */
	rte_spinlock_t events_lock;
	bool cq_error_raised, cq_error_told;
	uint32_t port_events;
	int event_fd;
	uint8_t doorbell[2 * SIM_BF_SIZE] __rte_cache_aligned;
};

static inline struct sim_ctx *
rn_sim_ctx_of(struct rn_nic *nic)
{
	return container_of(nic, struct sim_ctx, nic);
}

/* 24-bit PSN arithmetic: a - b as a signed distance. */
static inline int32_t
rn_sim_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* Same device and same token. */
static inline bool
rn_sim_addr_equal(const struct sim_addr *a, const struct sim_addr *b)
{
	return a->ip == b->ip && a->port == b->port &&
	       memcmp(a->token, b->token, sizeof(a->token)) == 0;
}

/* The i-th WQE in flight, 0 the oldest. */
static inline struct sim_inflight *
rn_sim_inflight_at(struct sim_qp *sqp, uint32_t i)
{
	return &sqp->inflight[(sqp->inflight_head + i) % sqp->inflight_cap];
}

/*
 * The oldest WQE in flight is done with: it leaves the list, and a copy
 * comes back for its CQE. Retire first, then write the CQE: a CQE that
 * overruns its CQ puts the QP in ERR, whose flush empties the list, so a
 * count taken down after the write would wrap.
 */
static inline struct sim_inflight
rn_sim_inflight_retire(struct sim_qp *sqp)
{
	struct sim_inflight f = sqp->inflight[sqp->inflight_head];

	sqp->inflight_head = (sqp->inflight_head + 1) % sqp->inflight_cap;
	sqp->inflight_count--;
	if (sqp->resend_at > 0)
		sqp->resend_at--;
	if (f.opcode == MLX5_OPCODE_RDMA_READ)
		sqp->reads_out--;
	return f;
}

/* (Re)start the ACK timer of the oldest WQE in flight: local ACK timeout
 * 4.096 us * 2^timeout (timeout 0: none, never checked). */
static inline void
rn_sim_ack_timer_start(struct sim_qp *sqp)
{
	uint8_t t = sqp->conn.timeout;

	sqp->deadline_ns = sqp->ctx->now_ns + (t == 0 ? 0 : 4096ull << t);
}

/* sim_mr.c: the provider's mr_reg, mr_reg_dmabuf, mr_dereg. */
int rn_sim_mr_reg(struct rn_nic *nic, void *addr, size_t length,
		  uint64_t iova, uint32_t access, struct rn_mr *mr);
int rn_sim_mr_reg_dmabuf(struct rn_nic *nic, uint64_t offset, size_t length,
			 uint64_t iova, int fd, uint32_t access,
			 struct rn_mr *mr);
int rn_sim_mr_dereg(struct rn_nic *nic, struct rn_mr *mr);
/* The MR of key if [iova, iova+len) lies in it and it grants access;
 * else NULL. Every address a WQE or a peer names is an iova: the bytes
 * are at rn_sim_mr_ptr() of what this returned. */
const struct sim_mr *rn_sim_mr_check(struct sim_ctx *ctx, uint32_t key,
				     uint64_t iova, uint64_t len, uint32_t access);

/* Where the byte iova (checked with rn_sim_mr_check()) of m lies here. */
static inline uint8_t *
rn_sim_mr_ptr(const struct sim_mr *m, uint64_t iova)
{
	return m->local + (iova - m->iova);
}

/* sim_cq.c */
int rn_sim_cq_create(struct sim_ctx *ctx, uint32_t cqe_cnt, struct rn_cq *cq);
void rn_sim_cq_destroy(struct rn_cq *cq);
/* Write cqe (op_own's opcode set, owner bit added here). */
void rn_sim_cq_push(struct sim_cq *cq, struct mlx5_cqe64 *cqe);
void rn_sim_cq_push_error(struct sim_cq *cq, uint8_t cqe_opcode, uint8_t syndrome,
			  uint8_t wqe_opcode, uint32_t qpn, uint16_t wqe_counter);

/* sim_qp.c */
int rn_sim_qp_create(struct sim_ctx *ctx, struct rn_cq *scq, struct rn_cq *rcq,
		     const struct rn_qp_caps *caps, struct rn_qp *qp);
int rn_sim_qp_modify(struct sim_ctx *ctx, struct sim_qp *sqp,
		     enum rn_qp_state state, const struct rn_qp_connect *conn);
void rn_sim_qp_destroy(struct sim_ctx *ctx, struct sim_qp *sqp);
/* Enter ERR: flush every WQE outstanding on both queues. */
void rn_sim_qp_enter_err(struct sim_qp *sqp);
/* Flush the WQEs in flight (sent, not acknowledged), oldest first. */
void rn_sim_qp_flush_inflight(struct sim_qp *sqp);
/* In ERR: flush WQEs posted since (software keeps posting). */
unsigned int rn_sim_qp_flush_new(struct sim_qp *sqp);
/* Send BBs and receive WQEs posted past the next one the device takes.
 * The doorbell record is loaded with acquire: it pairs with the write
 * barrier the data path puts between the WQEs and its store
 * (rn_sq_ring_doorbell_posted(), rn_rq_ring_doorbell()). */
uint32_t rn_sim_sq_posted(const struct sim_qp *sqp);
uint32_t rn_sim_rq_posted(const struct sim_qp *sqp);
/* The QP numbered qpn, or NULL. */
struct sim_qp *rn_sim_qp_lookup(struct sim_ctx *ctx, uint32_t qpn);
/* Free the request frames sqp holds back (RESET, ERR, destroy: a QP
 * that is not in RTS sends nothing). */
void rn_sim_qp_drop_held(struct sim_qp *sqp);
/* Does a frame from src_qpn over wire come from the QP sqp connects to? */
bool rn_sim_qp_from_peer(const struct sim_qp *sqp,
			 const struct sim_wire *wire, uint32_t src_qpn);

/* sim_requester.c: resend, or execute what the doorbell passed; in ERR,
 * flush what was posted since. Returns the WQEs it executed or flushed. */
unsigned int rn_sim_requester_run(struct sim_qp *sqp);
/* Hold sqp's request frames back (enum sim_hold; delay_ns for DELAY), or
 * let them go (OFF: what is held leaves on the next run, in order). */
void rn_sim_requester_hold(struct sim_qp *sqp, enum sim_hold hold,
			   uint64_t delay_ns);

/* sim_completer.c */
/* A reply (ACK, READ_RESP, RNR_NAK, NAK) arrived on wire. Returns whether
 * a QP took it as its peer's (else it was dropped, and counted). */
bool rn_sim_completer_receive(struct sim_ctx *ctx, struct sim_wire *wire,
			      const struct sim_frame_hdr *h,
			      const uint8_t *payload);
/* Where the READ response packet h would be scattered, if in one piece
 * (rn_sim_place_fn). */
bool rn_sim_completer_place(struct sim_ctx *ctx, struct sim_wire *wire,
			    const struct sim_frame_hdr *h,
			    struct sim_place *out);
/* Before the requester runs: has the oldest WQE in flight waited past its
 * ACK timeout? Then resend, or fail once retry_cnt retries ran out. */
void rn_sim_completer_timeout(struct sim_qp *sqp);
/*
 * The WQE in flight at position pos (0: the oldest) failed with syndrome:
 * those before it complete with WR_FLUSH, it with syndrome, and the QP
 * enters ERR, which flushes the rest.
 */
void rn_sim_completer_fail(struct sim_qp *sqp, uint32_t pos, uint8_t syndrome);

/* sim_responder.c: a request arrived on wire. Returns whether a QP took
 * it as its peer's (else it was dropped, and counted). */
bool rn_sim_responder_request(struct sim_ctx *ctx, struct sim_wire *wire,
			      const struct sim_frame_hdr *h,
			      const uint8_t *payload);
/* Where the WRITE packet h would be placed, if in one piece
 * (rn_sim_place_fn). */
bool rn_sim_responder_place(struct sim_ctx *ctx, struct sim_wire *wire,
			    const struct sim_frame_hdr *h,
			    struct sim_place *out);
/* Make the replies sqp owes (READ responses, the ACKs behind them) while
 * the wire holds less than SIM_WIRE_WINDOW unsent; a READ's resource is
 * free again once its last packet is made. Returns the packets made. */
unsigned int rn_sim_responder_pump(struct sim_qp *sqp);
/* The READ responses made this turn are handed to the wire (the progress
 * loop transmits right after): their resources are free again. */
void rn_sim_responder_sent(struct sim_qp *sqp);

/* sim_wire.c */
int rn_sim_wire_listen(struct sim_ctx *ctx, const char *listen);
void rn_sim_wire_close_all(struct sim_ctx *ctx);
/* Queue a frame to remote; the payload may be split in two (gathers). */
void rn_sim_wire_send(struct sim_ctx *ctx, const struct sim_addr *remote,
		      const struct sim_frame_hdr *h, const void *payload);
/* The same, for a payload in registered memory, which stays where it is
 * until this progress turn ends: the wire may send it from there at the
 * end of the turn (rn_sim_wire_transmit()) rather than copy it now. */
void rn_sim_wire_send_lent(struct sim_ctx *ctx, const struct sim_addr *remote,
			   const struct sim_frame_hdr *h, const void *payload);
/* Reply on the wire a request came in on (or the wire to its sender).
 * A payload (a READ response) is registered memory, lent for the turn as
 * to rn_sim_wire_send_lent(). */
void rn_sim_wire_reply(struct sim_ctx *ctx, struct sim_wire *wire,
		       const struct sim_frame_hdr *h, const void *payload);
/* Where the wire hands every frame but its own HELLO, from a remote it
 * knows. Returns whether a QP took the frame as its peer's: that matches
 * the connection (RN_SIM_WIRE_MAX_UNMATCHED no longer counts it). */
typedef bool rn_sim_deliver_fn(struct sim_ctx *ctx, struct sim_wire *wire,
			       const struct sim_frame_hdr *h,
			       const uint8_t *payload);
typedef bool rn_sim_place_fn(struct sim_ctx *ctx, struct sim_wire *wire,
			     const struct sim_frame_hdr *h,
			     struct sim_place *out);
struct sim_rx_ops {
	rn_sim_deliver_fn *deliver;
	rn_sim_place_fn *place;
};
/*
 * Accept connections, read frames and hand them to rx->deliver. A data
 * frame's payload that rx->place places is read straight there, and so
 * are the packets after it of the same message, as predicted (a
 * delivery then finds its payload in place, and copies nothing).
 * Returns the frames read.
 */
unsigned int rn_sim_wire_receive(struct sim_ctx *ctx,
				 const struct sim_rx_ops *rx);
/* Write out what was queued; free the wires that closed. */
void rn_sim_wire_transmit(struct sim_ctx *ctx);
const struct sim_addr *rn_sim_wire_remote(const struct sim_wire *wire);
/* Bytes queued toward remote (on the wire rn_sim_wire_send() picks) that
 * its socket has not taken yet; 0 without a wire. */
size_t rn_sim_wire_backlog(struct sim_ctx *ctx, const struct sim_addr *remote);
/* Is wire still open (a wire is freed once closed)? */
bool rn_sim_wire_live(struct sim_ctx *ctx, const struct sim_wire *wire);
/* Bytes queued on a live wire that its socket has not taken yet. */
size_t rn_sim_wire_queued(const struct sim_wire *wire);
/* [base, base + len) is about to be deregistered: copy what is queued by
 * pointer from it (payloads lent to the wire), which is sent later. */
void rn_sim_wire_unlend(struct sim_ctx *ctx, const void *base, size_t len);

void rn_sim_addr_from_nic(const struct rn_nic_addr *in, struct sim_addr *out);

/* Asynchronous events (sim_event.c). */
int rn_sim_events_open(struct sim_ctx *ctx);
void rn_sim_events_close(struct sim_ctx *ctx);
void rn_sim_event_raise(struct sim_ctx *ctx, enum sim_event kind);
int rn_sim_event_fd(struct rn_nic *nic);
int rn_sim_event_take(struct rn_nic *nic, char *text, size_t len, bool *fatal);

#endif /* RN_SIM_PVT_H */
