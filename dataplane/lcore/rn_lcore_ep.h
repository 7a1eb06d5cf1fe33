/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_EP_H
#define RN_LCORE_EP_H

/*
 * The lcore's half of an endpoint: its QPs (data QPs, then the notify QP),
 * created, connected, probed and closed by the lcore that owns them, on the
 * control thread's command. One struct rn_ep_request per incarnation
 * (generation) travels control -> lcore -> control by pointer in the rings;
 * whoever holds it may write it, nobody else touches it.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_nic.h"

#define RN_EP_MAX_QPS 17          /* 16 data QPs + the notify QP */
#define RN_EP_PROBE_SIZE 64       /* bytes a peer may RDMA READ */
#define RN_EP_PROBE_PARTS 3       /* identity, READ landing, credit word */
#define RN_EP_PROBE_MAGIC 0x524e5052u   /* "RNPR" */

/*
 * What a work request is, in its wr_id: the generation of the incarnation
 * that posted it (completions are dispatched by QPN *and* generation), its
 * kind, and an index: the receive slot of a RECV, the send window entry of
 * a SEND (rn_notify_window.h), 0 otherwise.
 */
enum rn_ep_wr_kind {
	RN_EP_WR_PROBE = 1,
	RN_EP_WR_RECV = 2,        /* a notification receive slot */
	RN_EP_WR_SEND = 3,        /* a notification SEND: its window entry */
	RN_EP_WR_CREDIT = 4,      /* a credit-only RDMA WRITE */
	RN_EP_WR_XFER = 5,        /* a transfer chunk: its place in its data
				   * QP's FIFO (lcore_transfer.c) */
};
#define RN_EP_WR_ID(generation, kind, index) \
	((uint64_t)(generation) << 32 | (uint64_t)(kind) << 24 | (index))
#define RN_EP_WR_GENERATION(wr_id) ((uint32_t)((wr_id) >> 32))
#define RN_EP_WR_KIND(wr_id) ((uint8_t)((wr_id) >> 24))
#define RN_EP_WR_INDEX(wr_id) ((uint32_t)(wr_id) & 0xffffff)

enum rn_ep_qp_kind {
	RN_EP_QP_DATA = 1,
	RN_EP_QP_NOTIFY = 2,
};

struct rn_ep_qp_info {
	uint8_t kind;             /* enum rn_ep_qp_kind */
	uint32_t qpn;
	uint32_t psn;
	uint32_t recv_depth;      /* notify QP */
	uint32_t slot_size;
	uint32_t credits;
};

/* One side of an endpoint incarnation, as the handshake describes it. */
struct rn_ep_side {
	char name[32];
	uint64_t session_id;
	uint32_t generation;
	struct rn_nic_addr addr;
	uint32_t n_qps;
	struct rn_ep_qp_info qps[RN_EP_MAX_QPS];
	uint64_t probe_addr;
	uint32_t probe_rkey;
};

struct rn_lcore_ep;

struct rn_ep_request {
	/* Set by the control thread before RN_LCORE_CMD_EP_OPEN. */
	uint32_t ep_index;        /* the endpoint's index in the plane's table,
				   * and in its lcore's (by_index) */
	uint32_t peer_tag;        /* the peer bound to ep_index (a client's
				   * send names it: rn_client_shm.h) */
	uint32_t n_data_qps;
	bool notify;              /* create a notify QP */
	uint32_t notify_depth;
	uint32_t notify_slot_size;
	uint8_t qp_timeout;
	uint8_t qp_retry_cnt;
	uint32_t bay_wait_ms;     /* how long OPEN may wait for a bay that a
				   * closing endpoint still holds */
	bool defer_deliveries;    /* keep what the native channel receives
				   * (early receives) until
				   * RN_LCORE_CMD_EP_DELIVER */
	struct rn_ep_side local;  /* name, session_id, generation set; the
				   * lcore fills the rest on OPEN */
	/* Set by the control thread before RN_LCORE_CMD_EP_CONNECT. */
	struct rn_ep_side remote;
	/* Owned by the lcore between OPEN and CLOSED. */
	struct rn_lcore_ep *ep;
	/* NOTIFY frames of this incarnation queued on the control connection:
	 * the control thread adds (release), the lcore reads it into each
	 * SEND's immediate (relaxed: tcp_before() says why that is enough;
	 * dataplane/api/notify_order_pvt.h). */
	uint32_t tcp_queued;
};

#endif /* RN_LCORE_EP_H */
