/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_PVT_H
#define RN_LCORE_PVT_H

#include <rte_log.h>

#include "rn_lcore.h"
#include "rn_client_shm.h"
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
	uint32_t lcore_id;       /* the lcore that owns it: which of a
				  * transfer descriptor's rkeys is its */
	uint8_t pad[12];
};
_Static_assert(sizeof(struct ep_probe) == RN_EP_PROBE_SIZE, "probe size");

/* The probe region: 64-byte parts, registered once per endpoint. */
enum ep_probe_part {
	EP_PROBE_OURS,           /* our identity, for the peer to READ */
	EP_PROBE_LANDING,        /* where our READ of the peer's lands */
	EP_PROBE_CREDITS,        /* the peer RDMA WRITEs its credit count here */
};

/*
 * The life of an endpoint's native notification channel on its lcore.
 * Every change goes through set_state() in lcore_channel.c, which checks
 * it against the table there (rn_channel_can_enter()) and logs it by name
 * at debug level:
 *
 *           open            connect               enable
 *   NONE --------> OPEN -----------> CONNECTED ----------> NATIVE
 *    ^ ^            |  \                |                    |
 *    | |    drop    |   \ stop          | stop               | stop
 *    | +------------+    v               v                    v
 *    |                 DRAINING <--------+--------------------+
 *    |      retire        |
 *    +--------------------+
 *
 * open: made with the endpoint (EP_OPEN) or added to a connected one
 * (NOTIFY_OPEN); a failed open stays NONE. connect: at EP_CONNECT, or
 * NOTIFY_CONNECT. enable: at EP_CONNECT when both ends have a channel,
 * or NOTIFY_ENABLE. drop: the peer has no notify QP, refused or did not
 * answer the offer. stop: a local fault of its QP (NOTIFY_FAILED to the
 * control thread), or the peer's failed (NOTIFY_CLOSE). retire: drained,
 * every early receive delivered and every delivery released; the bay
 * coming back is announced. A channel of an endpoint that fails or closes
 * is not moved: it goes with the endpoint, whatever its state.
 */
enum rn_channel_state {
	RN_CHANNEL_NONE = 0,     /* no notify QP: the TCP rules apply */
	RN_CHANNEL_OPEN,         /* notify QP in INIT on a bay, nothing
				  * posted on it: may still be dropped */
	RN_CHANNEL_CONNECTED,    /* its receives posted, RTR and RTS toward
				  * the peer's, the peer's credits known; no
				  * SEND until enabled */
	RN_CHANNEL_NATIVE,       /* sends and receives notifications */
	RN_CHANNEL_DRAINING,     /* stopped: no SEND or credit WRITE more;
				  * retires once drained and released */
	RN_CHANNEL_STATES
};

/* The state's name, for logs and test failures ("?" when out of range). */
const char *rn_channel_state_name(unsigned int state);
/* Whether the table allows a channel in state from to enter state to. */
bool rn_channel_can_enter(unsigned int from, unsigned int to);

/*
 * What a window entry remembers of a client process's SEND: whom to tell
 * its fate (lcore_client.c). Written only for clients' SENDs; an entry
 * reused by another SEND leaves it stale, which seq tells: it is the
 * entry's SEND only while seq is the window's count of that SEND.
 */
struct rn_client_sent {
	uint64_t cookie;
	uint32_t seq;             /* sends.posted when it went */
	uint32_t id;              /* the client's attachment here (0: none),
				   * its slot in the low bits (below) */
};

/* A client's attachment id on an lcore holds its slot in lc->clients in
 * these low bits: a record then names both in one word. */
#define RN_CLIENT_SLOT_BITS 6

/* What a client's receive buffer header takes over an agent frame's. */
#define RN_CLIENT_RECV_EXTRA \
	((uint32_t)(sizeof(struct rn_client_recv_hdr) - \
		    sizeof(struct rn_notify_agent_hdr)))

/* One incarnation's native notification channel (owning lcore only). */
struct ep_notify {
	struct rn_qp *qp;        /* NULL: RN_CHANNEL_NONE */
	uint8_t state;           /* enum rn_channel_state */
	uint32_t max_frame;      /* the largest frame it takes now: both slot
				  * sizes; 0 unless RN_CHANNEL_NATIVE */
	uint32_t max_inline;     /* the largest that goes inline: also within
				  * lc->max_inline, the SQ's and what its
				  * paced SENDs may take (rn_sq.h); 0 like
				  * max_frame */
	uint32_t agent_inline;   /* the largest agent frame inline, of those
				  * whose name + msg go inline: what the SQ
				  * takes (as max_inline, less the [notify]
				  * max_inline bound); 0 like max_frame */
	uint32_t client_inline;  /* agent_inline, less what a client's
				  * receive buffer header takes over the
				  * frame's (RN_CLIENT_RECV_EXTRA): a
				  * client's SEND within it fits the peer's
				  * receive buffers too (lcore_client.c); 0
				  * like max_frame */
	uint32_t client_frame;   /* the same for a client's SEND from a send
				  * buffer: max_frame, less
				  * RN_CLIENT_RECV_EXTRA; 0 like max_frame */
	uint32_t peer_slot_size; /* from its QP record; 0 before CONNECTED */
	uint64_t send_wr_id;     /* RN_EP_WR_ID(generation, SEND, 0) */
	uint64_t credit_raddr;   /* the peer's EP_PROBE_CREDITS word */
	uint32_t credit_rkey;
	struct rn_credit_tx tx;
	struct rn_credit_rx rx;
	struct rn_send_window sends; /* taken and freed in order */
	uint8_t *recv_slots;     /* its bay's receive slot 0 */
	uint64_t recv_wr_id;     /* RN_EP_WR_ID(generation, RECV, 0) */
	uint32_t held;           /* delivered, not released by the app yet,
				  * or held for a client (lcore_client.c) */
	uint32_t native_received; /* SENDs received, rejected ones too; not
				   * agent frames, which the send order
				   * does not count */
	uint32_t agent_posted;   /* SENDs of agent frames and refusals posted:
				  * sends.posted less these is what the send
				  * order counts */
	struct rn_client_sent *client_sent;  /* per window entry */
};

struct rn_lcore_ep {
	struct rn_ep_request *req;
	uint32_t n_qps;
	/* Receives are delivered: the control thread said the endpoint is
	 * connected (RN_LCORE_CMD_EP_DELIVER), or its request did not defer
	 * them, or it failed or is closing. Until then they are early
	 * receives, kept in early[] (room for every slot: each took one
	 * posted receive, none is reposted before it is delivered), so that
	 * nothing of the peer's reaches the application before a send back
	 * is taken (lcore_notify.c); their slots keep the channel from
	 * retiring. */
	bool delivering;
	struct rn_qp qps[RN_EP_MAX_QPS];
	struct rn_mr probe_mr;
	struct ep_probe *probe;     /* see enum ep_probe_part */
	int bay;                    /* notification buffers, or -1 */
	uint32_t cq;                /* index into lc->cqs */
	uint32_t cq_reserved;       /* CQEs it holds there */
	struct ep_notify n;         /* the native notification channel */
	struct rn_lcore *lc;
	bool failed;                /* a QP failed: it takes nothing more;
				     * EP_FAILED sent once per incarnation,
				     * when failing ends */
	bool closing;
	bool probing;
	uint64_t drain_deadline;    /* TSC: closing, or its channel failed */
	/* Failing (on lc->failing): failed, EP_FAILED held back until every
	 * SEND of its channel completed, so that its batches' failure
	 * notices reach the peer before the plane closes it; at most until
	 * fail_deadline (TSC). lcore_endpoint.c. */
	uint8_t fail_syndrome;      /* the first error's, for EP_FAILED */
	bool fence_posted;          /* rn_lcore_notify_fence() went */
	uint32_t fence_end;         /* the notify SQ's pi after the fence */
	uint64_t fail_deadline;
	struct rn_lcore_ep *next_failing;
	/* What the native channels it had before this one did, as the
	 * receiver orders notifications per incarnation
	 * (dataplane/api/notify_order_pvt.h). */
	uint32_t natives_posted;    /* SENDs posted */
	uint32_t natives_received;  /* SENDs received */
	struct rn_xfer_ep *xfer;    /* transfers (lcore_transfer.c), or NULL */
	uint32_t peer_lcore;        /* the peer's owning lcore, probed; or
				     * UINT32_MAX */
	struct rn_lcore_ep *next;   /* lc->closing */
	struct rn_lcore_ep *prev_all, *next_all;   /* lc->eps */
	struct rn_wc *early;        /* early receives, in arrival order; NULL
				     * when delivering from the start */
	uint32_t n_early;
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

/* Events to the control thread (lcore_events.c): dropped (and counted)
 * when the ring is full, or waiting for room. */
void rn_lcore_post_event(struct rn_lcore *lc, struct rn_lcore_event ev);
void rn_lcore_post_event_wait(struct rn_lcore *lc, struct rn_lcore_event ev);

/* An event of type about cookie that must arrive: it waits for room. */
static inline void
rn_lcore_post_wait(struct rn_lcore *lc, uint16_t type, int32_t arg,
		   const void *cookie)
{
	struct rn_lcore_event ev = { .type = type,
				     .lcore_id = (uint16_t)lc->lcore_id,
				     .arg = arg, .cookie = (uintptr_t)cookie };

	rn_lcore_post_event_wait(lc, ev);
}

/* An endpoint event about req: it must arrive, so it waits for room. */
static inline void
rn_lcore_ep_post(struct rn_lcore *lc, uint16_t type, int32_t arg,
		 struct rn_ep_request *req)
{
	rn_lcore_post_wait(lc, type, arg, req);
}

/*
 * The layers of the lcore engine, each calling only those below it:
 *   lcore_loop.c      the loop: commands, completions, reapers
 *   lcore_endpoint.c  an endpoint's QPs: open, connect, probe, close
 *   lcore_channel.c   its native channel: enum rn_channel_state
 *   lcore_notify.c    notifications on a channel: send, receive, credits
 *   lcore_diag.c      the faults of diagnostic requests (sim only)
 *   lcore_qp.c, lcore_events.c  QPs of any kind; events to the control
 */

/* Endpoint commands, completions and teardown (lcore_endpoint.c). */
void rn_lcore_ep_command(struct rn_lcore *lc, const struct rn_lcore_cmd *cmd);
void rn_lcore_ep_completion(struct rn_lcore *lc, const struct rn_wc *wc);
/* Free the closing endpoints that drained, and tell the control thread
 * of the failing ones whose notices went (or whose grace is over). */
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

/* An endpoint's QPs, of either kind (lcore_qp.c). */
struct rn_qp_caps rn_lcore_qp_caps(const struct rn_lcore *lc,
				   const struct rn_ep_request *req,
				   uint8_t kind);
/* The next QP of ep, of kind, in INIT, its record in req->local. Returns 0
 * or the device's error (counted in ep->n_qps once created). */
int rn_lcore_qp_create(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		       uint8_t kind);
/* The peer's QP that pairs with our QP i: same kind, same rank; or NULL. */
const struct rn_ep_qp_info *rn_lcore_qp_peer(const struct rn_ep_request *req,
					     uint32_t i);
/* RTR, then RTS, QP i toward peer. Returns 0 or the device's error. */
int rn_lcore_qp_connect(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			uint32_t i, const struct rn_ep_qp_info *peer);

/*
 * The native channel (lcore_channel.c): one way to open it, whether with
 * the endpoint or later; each call is a transition of enum
 * rn_channel_state and does nothing from a state it does not leave.
 */
/* NONE -> OPEN: a bay, its CQEs on ep's CQ, the notify QP in INIT.
 * Returns 0, -EALREADY (not NONE, or no QP left), -ENOSPC (no bay, or no
 * CQ room: counted), or the device's or allocation's error (logged once
 * per worker); the channel then stays NONE. */
int rn_lcore_channel_open(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* OPEN -> CONNECTED toward the peer's notify QP in ep->req->remote: its
 * receive slots posted, then RTR and RTS. Returns 0, -EINVAL (not OPEN),
 * -EPROTO (the peer has none), or the error of a post or the device. */
int rn_lcore_channel_connect(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* CONNECTED -> NATIVE: both QPs can receive, it sends. */
void rn_lcore_channel_enable(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* OPEN -> NONE: not to be used; QP, bay and CQ room go back. */
void rn_lcore_channel_drop(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* OPEN, CONNECTED or NATIVE -> DRAINING: the peer's QP failed (its
 * NOTIFY_CLOSE); ours goes to ERR. */
void rn_lcore_channel_peer_closed(struct rn_lcore *lc,
				  struct rn_lcore_ep *ep);
/* An error CQE of ep's notify QP: its SENDs in flight fail; a local fault
 * stops the channel (-> DRAINING) and tells the control thread. Returns
 * true when the error is the endpoint's (the peer's QP or the path
 * failed): the caller fails the endpoint. */
bool rn_lcore_channel_error(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			    const struct rn_wc *wc);
/* DRAINING -> NONE for every channel drained and released (at most once a
 * millisecond); a bay back is announced. */
void rn_lcore_channel_reap(struct rn_lcore *lc);
/* The channel's bay and buffers, as its endpoint is freed (its QPs are
 * the endpoint's to destroy). */
void rn_lcore_channel_fini(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* A bay, or CQ room, came back: if a bay is free, BAY_FREE tells the
 * control thread. after_drop: it was the bay of an offer refused. */
void rn_lcore_bay_returned(struct rn_lcore *lc, bool after_drop);

/* Notifications on a channel (lcore_notify.c): what the channel sets up
 * at each transition, then the send and receive paths. */
/* At open: the send window's arrays, the receive side's counts. Returns 0
 * or -ENOMEM (rn_lcore_notify_fini() frees what was made). */
int rn_lcore_notify_init(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* At connect: the peer's credits, slot size and credit word. */
void rn_lcore_notify_attach(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			    const struct rn_ep_qp_info *peer);
/* At enable: the frame limits, and the credits already due. */
void rn_lcore_notify_enable(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* At stop: no frame fits any more. */
void rn_lcore_notify_stop(struct rn_lcore_ep *ep);
/* A signalled credit WRITE after every SEND posted on ep's native
 * channel: once it completed, each of them did (a QP completes its WQEs
 * in order). For a failing endpoint (lcore_endpoint.c). Returns 0, or
 * -EAGAIN when the SQ has no room. */
int rn_lcore_notify_fence(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* Every SEND still in its window failed: reported, never replayed. */
void rn_lcore_notify_fail_pending(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* The window's arrays freed, what was in flight failed. */
void rn_lcore_notify_fini(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* A completion with status 0 of ep's notify QP. */
void rn_lcore_notify_completion(struct rn_lcore *lc, struct rn_lcore_ep *ep,
				const struct rn_wc *wc);
/* RN_LCORE_CMD_EP_DELIVER, or ep failing or closing before it: ep
 * delivers from now on, its early receives first, in the order they came;
 * those whose slots are gone are counted in notify_early_lost (owning
 * lcore). */
void rn_lcore_notify_deliver(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* Drain the app's send requests and buffer releases. */
unsigned int rn_lcore_notify_poll(struct rn_lcore *lc);

/* Agents of up to this many bytes each go inline in an agent frame (a
 * NIXL agent is a 36-byte UUID): the notify QP's inline size is
 * lc->max_inline plus their room and the agent frame's header, within
 * RN_LCORE_INLINE_MAX ([notify] max_inline's own bound, plus 8). */
#define RN_LCORE_AGENT_INLINE 64u
#define RN_LCORE_AGENT_FRAME_EXTRA \
	(sizeof(struct rn_notify_agent_hdr) - RN_NOTIFY_OVERHEAD + \
	 2 * RN_LCORE_AGENT_INLINE)
#define RN_LCORE_INLINE_MAX 512u
/* BBs a notify QP's send ring may take: a device's 16-bit WQE counter
 * must not lap (the sim refuses more, mlx5 past its max_qp_wr). */
#define RN_LCORE_SQ_MAX_BBS 32768u

/* An agent frame, or a refusal, for the native channel (lcore_client.c
 * fills it, lcore_notify.c posts it). */
struct rn_lcore_agent_out {
	uint32_t kind;            /* enum rn_notify_kind */
	uint16_t reason;          /* a refusal's: enum rn_notify_refusal */
	uint8_t dst_len;
	uint8_t src_len;
	bool want;                /* it wants its success reported */
	uint32_t client_id;       /* its attachment (and slot); 0: a
				   * refusal */
	uint32_t inline_max;      /* it goes inline up to this length */
	uint32_t name_len;
	uint32_t msg_len;
	uint64_t cookie;
	const uint8_t *dst;       /* dst_len bytes */
	const uint8_t *src;       /* src_len bytes */
	const uint8_t *body;      /* name, then msg */
};
/* Post a's frame of len bytes (at most ep->n.max_frame) on ep's native
 * channel, inline or from its send buffer, with the same window, credits
 * and signalling as a node-level one; the doorbell is the caller's
 * (rn_lcore_notify_ring()). Returns 0, -EAGAIN (no credit, window entry or
 * SQ room: nothing changed) or -EPIPE. */
int rn_lcore_notify_post_agent(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			       const struct rn_lcore_agent_out *a,
			       uint64_t len);
/* Ring ep's SQ doorbell for what was posted. */
void rn_lcore_notify_ring(struct rn_lcore_ep *ep);
/* Put receive slot index of ep back on its RQ, counted as a credit. Out
 * of line, for the instruction benches' count. */
void rn_lcore_repost(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		     uint32_t index);
/* Receive slot index of ep is free again: reposted if its channel still
 * receives. For a slot held by lcore_client.c, held is counted down. */
static inline void
rn_lcore_notify_repost(struct rn_lcore *lc, struct rn_lcore_ep *ep,
		       uint32_t index, bool held)
{
	if (held)
		ep->n.held--;
	if (!ep->closing && !ep->failed && ep->n.state != RN_CHANNEL_DRAINING)
		rn_lcore_repost(lc, ep, index);
}

/*
 * Client processes (lcore_client.c, rn_lcore_client.h). The commands;
 * their submit rings, each turn (returns the entries taken and frames
 * delivered); whether a SEND waits there (before sleeping).
 */
void rn_lcore_client_command(struct rn_lcore *lc,
			     const struct rn_lcore_cmd *cmd);
unsigned int rn_lcore_client_poll(struct rn_lcore *lc);
bool rn_lcore_client_pending(const struct rn_lcore *lc);
/* Whether frames wait for a client whose deliver ring was full. */
bool rn_lcore_client_holding(const struct rn_lcore *lc);
/* A frame of len bytes at frame, receive slot index of ep, that the
 * node-level reader refused: an agent frame or refusal is delivered, held
 * or refused here, its slot reposted or held (0); anything else is
 * -EBADMSG, for the caller to reject as before. */
int rn_lcore_client_frame(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			  const uint8_t *frame, uint32_t index, uint32_t len);
/* The plain SEND wc received on ep: rn_lcore_client_frame(), and what
 * that refuses to rn_lcore_notify_received(). */
void rn_lcore_client_received(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			      const struct rn_wc *wc);
/* The SEND wc received on ep read as a node-level frame, as if it had
 * come as a SEND_IMM: delivered to the embedded API, or rejected. */
void rn_lcore_notify_received(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			      const struct rn_wc *wc);
/* The fate of a client's SEND, s its window entry's record: to its
 * client's deliver ring, unless that client is gone. */
void rn_lcore_client_report(struct rn_lcore *lc,
			    const struct rn_client_sent *s, int status);
/* At rn_lcore_fini(). */
void rn_lcore_client_fini(struct rn_lcore *lc);
/* An XFER_DONE entry e for the client in slot of lc->clients, attachment
 * id, on its deliver ring: false when that client is gone or its ring is
 * full (dropped, counted in reports_dropped: the batch slot holds the
 * result). */
bool rn_lcore_client_xfer_done(struct rn_lcore *lc, uint32_t slot, uint32_t id,
			       struct rn_client_entry *e);

/*
 * Client processes' transfers (lcore_client_xfer.c): the XFER entry e of
 * the client of link (slot and attachment id in lc->clients), consumed at
 * once (taken into the engine, or refused with its final status); the
 * commands CLIENT_REG and CLIENT_DEREG; at CLIENT_REMOVE, whether nothing
 * of link is left here (true: answer CLIENT_REMOVED now; false: it is
 * answered once its batches are final and its regions deregistered).
 */
struct rn_client_link;
void rn_lcore_client_xfer(struct rn_lcore *lc,
			  const struct rn_client_link *link, uint32_t slot,
			  uint32_t id, const struct rn_client_entry *e);
void rn_lcore_client_reg_command(struct rn_lcore *lc,
				 const struct rn_lcore_cmd *cmd);
bool rn_lcore_client_xfer_remove(struct rn_lcore *lc,
				 const struct rn_client_link *link);
/* At rn_lcore_fini(): every region deregistered, the state freed. */
void rn_lcore_client_xfer_fini(struct rn_lcore *lc);

/* Post o on ep's native channel, for the transfer engine: 0, -EAGAIN (no
 * credit or room now), -ENOTSUP (no native channel), -EPIPE, -EMSGSIZE. */
int rn_lcore_notify_post(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			 const struct rn_notify_out *o);

/* Transfers (lcore_transfer.c): a chunk's CQE, whatever its status; an
 * endpoint freed, its batches failed. */
void rn_lcore_xfer_completion(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			      const struct rn_wc *wc);
void rn_lcore_xfer_ep_fini(struct rn_lcore *lc, struct rn_lcore_ep *ep);
/* Whether a batch on ep is still in the engine (it owes its notification
 * or failure notice). O(batches in the engine): for a failing endpoint. */
bool rn_lcore_xfer_ep_busy(const struct rn_lcore *lc,
			   const struct rn_lcore_ep *ep);

struct rn_notify_request;
/*
 * Make the fault of req, a diagnostic request (count 0) for ep, on the sim
 * device (lcore_diag.c). Returns 0 once req is answered (-ENOTSUP off the
 * sim device), else the length to send req->out[0]'s frame as natively (a
 * bad frame), for the caller to post and answer.
 */
uint64_t rn_lcore_diag_fault(struct rn_lcore *lc, struct rn_lcore_ep *ep,
			     struct rn_notify_request *req);

/*
 * Adaptive idle (owning lcore only): block on the lcore's epoll set until
 * the control thread or a wire wakes it, or idle_sleep_us pass. True when
 * a descriptor woke it, or work was queued before it slept.
 */
bool rn_lcore_sleep(struct rn_lcore *lc);
/* How long the next sleep may last, in microseconds: idle_sleep_us, or
 * longer once the lcore has been quiet for a second (lcore_idle.c). */
uint32_t rn_lcore_sleep_us(struct rn_lcore *lc);

#endif /* RN_LCORE_PVT_H */
