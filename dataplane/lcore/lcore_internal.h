/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_INTERNAL_H
#define RN_LCORE_INTERNAL_H

#include <rte_log.h>

#include "rn_lcore.h"
#include "rn_lcore_ep.h"
#include "rn_notify_credit.h"
#include "rn_notify_window.h"
#include "rn_wr.h"

extern int rn_lcore_logtype;
#define RN_LCORE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_lcore_logtype, "rnotify.lcore: " fmt "\n", \
		##__VA_ARGS__)

/* What an endpoint publishes for its peer to READ: who it is, now. */
struct ep_probe {
	uint32_t magic;
	uint32_t generation;
	uint64_t session_id;
	char name[32];
	uint8_t pad[16];
};
_Static_assert(sizeof(struct ep_probe) == RN_EP_PROBE_SIZE, "probe size");

/* The probe region: 64-byte parts, registered once per endpoint. */
enum ep_probe_part {
	EP_PROBE_OURS,           /* our identity, for the peer to READ */
	EP_PROBE_LANDING,        /* where our READ of the peer's lands */
	EP_PROBE_CREDITS,        /* the peer RDMA WRITEs its credit count here */
};

/* One incarnation's native notification channel (owning lcore only). */
struct ep_notify {
	struct rn_qp *qp;        /* NULL: no channel on our side */
	bool peer_native;        /* the peer has one too */
	bool failed;             /* a local fault: sticky, data QPs untouched */
	uint32_t max_frame;      /* the largest frame it takes now: both slot
				  * sizes; 0 without a channel, or failed */
	uint32_t max_inline;     /* the largest that goes inline: also within
				  * lc->max_inline, the SQ's and what its
				  * paced SENDs may take (rn_sq.h); 0 like
				  * max_frame */
	uint32_t peer_slot_size; /* from its QP record; 0: not connected */
	uint64_t send_wr_id;     /* RN_EP_WR_ID(generation, SEND, 0) */
	uint64_t credit_raddr;   /* the peer's EP_PROBE_CREDITS word */
	uint32_t credit_rkey;
	struct rn_credit_tx tx;
	struct rn_credit_rx rx;
	struct rn_send_window sends; /* taken and freed in order */
	uint8_t *recv_slots;     /* its bay's receive slot 0 */
	uint64_t recv_wr_id;     /* RN_EP_WR_ID(generation, RECV, 0) */
	uint32_t held;           /* delivered, not released by the app yet */
	uint32_t native_received; /* SENDs received, rejected ones too */
};

struct rn_lcore_ep {
	struct rn_ep_request *req;
	uint32_t n_qps;
	struct rn_qp qps[RN_EP_MAX_QPS];
	struct rn_mr probe_mr;
	struct ep_probe *probe;     /* see enum ep_probe_part */
	int bay;                    /* notification buffers, or -1 */
	uint32_t cq;                /* index into lc->cqs */
	uint32_t cq_reserved;       /* CQEs it holds there */
	struct ep_notify n;         /* the native notification channel */
	struct rn_lcore *lc;
	bool failed;                /* EP_FAILED sent: once per incarnation */
	bool closing;
	bool probing;
	uint64_t drain_deadline;    /* TSC: closing, or its channel failed */
	/* What the native channels it had before this one did, as the
	 * receiver orders notifications per incarnation (notify_order.h). */
	uint32_t natives_posted;    /* SENDs posted */
	uint32_t natives_received;  /* SENDs received */
	struct rn_lcore_ep *next;   /* lc->closing */
	struct rn_lcore_ep *prev_all, *next_all;   /* lc->eps */
};

/* A single-writer counter that other threads read with relaxed loads. */
static inline void
rn_lcore_count(uint64_t *counter, uint64_t n)
{
	__atomic_store_n(counter, *counter + n, __ATOMIC_RELAXED);
}

/*
 * Add a CQ (owning lcore, or before launch). Returns 0, -ENOSPC past
 * [nic] cqs_per_lcore, or the device's error. Growing adds a CQ rather
 * than resizing one: ibv_resize_cq would move the ring under the poller.
 */
int rn_lcore_cq_grow(struct rn_lcore *lc);

/* Post ev to the control thread; waits for room rather than drop it. */
void rn_lcore_post_event_wait(struct rn_lcore *lc, struct rn_lcore_event ev);

/* Endpoint commands, completions and teardown (lcore_endpoint.c). */
void rn_lcore_ep_command(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd);
void rn_lcore_ep_completion(struct rn_lcore *lc, const struct rn_wc *wc);
void rn_lcore_ep_reap(struct rn_lcore *lc);
/* At exit: destroy every endpoint still open, without events. */
void rn_lcore_ep_free_all(struct rn_lcore *lc);

/* A QP in ERR flushes every WQE; one that never drains goes after this. */
#define RN_LCORE_DRAIN_MAX_S 1

/* Whether every WQE posted on qp has completed (its CQE polled). */
static inline bool
rn_lcore_qp_drained(const struct rn_qp *qp)
{
	return qp->sq.ci == qp->sq.pi && qp->rq.tail == qp->rq.head;
}

/* req's endpoint while it is live (neither failed nor closing), or NULL. */
static inline struct rn_lcore_ep *
rn_lcore_ep_live(const struct rn_ep_request *req)
{
	struct rn_lcore_ep *ep = req->ep;

	return ep != NULL && !ep->closing && !ep->failed ? ep : NULL;
}

/* Helpers of lcore_endpoint.c that lcore_channel.c shares. */
void rn_lcore_ep_post(struct rn_lcore *lc, uint16_t type, int32_t arg,
		      struct rn_ep_request *req);
struct rn_qp_caps rn_lcore_ep_qp_caps(const struct rn_lcore *lc,
				      const struct rn_ep_request *req,
				      uint8_t kind);
int rn_lcore_ep_create_qp(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			  uint8_t kind);
/* The peer's QP that pairs with our QP i: same kind, same rank. */
const struct rn_ep_qp_info *rn_lcore_ep_peer_qp(const struct rn_ep_request *req,
						uint32_t i);
int rn_lcore_ep_connect_qp(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			   uint32_t i, const struct rn_ep_qp_info *peer);

/* The endpoint's native notification channel (lcore_channel.c). */
int rn_lcore_channel_post_receives(struct rn_lcore *lc, struct rn_lcore_ep *ep,
				   struct rn_qp *qp);
void rn_lcore_channel_open(struct rn_lcore *lc, struct rn_lcore_ep *ep);
void rn_lcore_channel_drop(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* ep's native channel stops for good: no SEND or credit WRITE more; it
 * retires once drained (rn_lcore_channel_reap()). */
void rn_lcore_channel_stop(struct rn_lcore *lc, struct rn_lcore_ep *ep);
void rn_lcore_channel_peer_closed(struct rn_lcore *lc,
				  struct rn_lcore_ep *ep);
void rn_lcore_channel_reap(struct rn_lcore *lc);
void rn_lcore_bay_returned(struct rn_lcore *lc, bool after_drop);
int rn_lcore_channel_add(struct rn_lcore *lc, struct rn_ep_request *req);
int rn_lcore_channel_connect(struct rn_lcore *lc, struct rn_ep_request *req);

/* Notifications on the owning lcore (lcore_notify.c). */
int rn_lcore_notify_open(struct rn_lcore *lc, struct rn_lcore_ep *ep);
void rn_lcore_notify_connected(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			       const struct rn_ep_qp_info *peer);
/* A notify QP added to a connected endpoint, now connected to the peer's:
 * its credits and credit word; it sends once enabled. */
void rn_lcore_notify_attach(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			    const struct rn_ep_qp_info *peer);
void rn_lcore_notify_enable(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* Whether ep's notify QP was connected to the peer's (attached). */
bool rn_lcore_notify_attached(const struct rn_lcore_ep *ep);
void rn_lcore_notify_close(struct rn_lcore *lc, struct rn_lcore_ep *ep);
void rn_lcore_notify_free(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* A QP of ep completed in error: tell the control thread, once. */
void rn_lcore_ep_failed(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			uint8_t syndrome);
/* A completion of ep's notify QP. */
void rn_lcore_notify_completion(struct rn_lcore *lc, struct rn_lcore_ep *ep,
				const struct rn_wc *wc);
/* Drain the app's send requests and buffer releases. */
unsigned int rn_lcore_notify_poll(struct rn_lcore *lc);

/*
 * Adaptive idle (owning lcore only): block on the lcore's epoll set until
 * the control thread or a wire wakes it, or idle_sleep_us pass.
 */
void rn_lcore_sleep(struct rn_lcore *lc);

#endif /* RN_LCORE_INTERNAL_H */
