/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_LCORE_H
#define RN_LCORE_H

/*
 * A worker lcore: one run-to-completion loop that drains its command ring,
 * polls the queues it owns, then applies the idle policy. The control thread
 * reaches it only through its command ring; it answers through the shared
 * event ring. Nothing here takes a lock.
 */

#include <rte_common.h>
#include <rte_ring.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_notify_engine.h"
#include "rn_nic.h"
#include "rn_notify_region.h"

#define RN_LCORE_RING_SIZE 1024   /* commands in flight per lcore (exact) */
#define RN_LCORE_MAX_CQS 16       /* [nic] cqs_per_lcore at most */
#define RN_LCORE_BURST 32         /* commands drained per iteration */

/* Endpoint commands carry a struct rn_ep_request * in the cookie. */
enum rn_lcore_cmd_type {
	RN_LCORE_CMD_PING = 1,  /* answer RN_LCORE_EVENT_PONG with the cookie */
	RN_LCORE_CMD_STOP,      /* leave the loop after this iteration */
	RN_LCORE_CMD_EP_OPEN,   /* create the QPs in INIT: EP_OPENED */
	RN_LCORE_CMD_EP_CONNECT,/* RTR, RTS toward req->remote: EP_CONNECTED */
	RN_LCORE_CMD_EP_PROBE,  /* RDMA READ the peer's probe: EP_PROBED */
	RN_LCORE_CMD_EP_CLOSE,  /* ERR, drain, destroy: EP_CLOSED */
	RN_LCORE_CMD_EP_DELIVER,/* the endpoint is connected on the control
				 * thread too: deliver what its native
				 * channel receives, its early receives
				 * first (req->defer_deliveries) */
	/* A native channel added to a connected endpoint (a bay freed); each
	 * is a transition of the channel's state (lcore_pvt.h): */
	RN_LCORE_CMD_NOTIFY_OPEN,    /* none -> open: take a bay, notify QP
				      * in INIT: NOTIFY_OPENED */
	RN_LCORE_CMD_NOTIFY_CONNECT, /* open -> connected: post its receives,
				      * RTR, RTS toward the peer's
				      * (req->remote), no sends yet:
				      * NOTIFY_CONNECTED */
	RN_LCORE_CMD_NOTIFY_ENABLE,  /* connected -> native: both QPs are
				      * connected: send */
	RN_LCORE_CMD_NOTIFY_DROP,    /* open -> none: not wanted after all
				      * (the offer was refused or not
				      * answered) */
	RN_LCORE_CMD_NOTIFY_CLOSE,   /* -> draining: the peer's notify QP
				      * failed: ours stops and goes to ERR */
	/* Client processes (rn_lcore_client.h); the cookie is a struct
	 * rn_client_link *: */
	RN_LCORE_CMD_CLIENT_ADD,     /* poll its submit ring, deliver to it
				      * (this lcore's: see
				      * rn_lcore_set_client_sleeping()):
				      * CLIENT_ADDED */
	RN_LCORE_CMD_CLIENT_REMOVE,  /* stop touching it: CLIENT_REMOVED,
				      * once its batches are final and its
				      * regions deregistered on this lcore */
	/* The cookie is a struct rn_client_reg_op * (rn_lcore_client.h): */
	RN_LCORE_CMD_CLIENT_REG,     /* register it with this lcore's device:
				      * CLIENT_REGISTERED */
	RN_LCORE_CMD_CLIENT_DEREG,   /* no new batch may use it; once none
				      * does, deregister: CLIENT_DEREGISTERED */
};

/* 16 bytes, copied by value through the ring: no allocation per command. */
struct rn_lcore_cmd {
	uint32_t type;          /* enum rn_lcore_cmd_type */
	uint32_t arg;
	uint64_t cookie;
};
_Static_assert(sizeof(struct rn_lcore_cmd) == 16, "ring element size");

/* Endpoint events return the request in the cookie; arg is the result:
 * 0 or a negative errno, or for EP_FAILED the CQE syndrome. */
enum rn_lcore_event_type {
	RN_LCORE_EVENT_PONG = 1,
	RN_LCORE_EVENT_EP_OPENED,
	RN_LCORE_EVENT_EP_CONNECTED,
	RN_LCORE_EVENT_EP_PROBED,   /* 0, -EBADMSG (not who the handshake
				     * said), or the error of posting it; a
				     * READ that fails is an EP_FAILED */
	RN_LCORE_EVENT_EP_FAILED,   /* a QP completed in error */
	RN_LCORE_EVENT_EP_CLOSED,   /* the request is the control's again */
	RN_LCORE_EVENT_NOTIFY_TCP,  /* cookie: a struct rn_notify_request to
				     * send over TCP and answer */
	RN_LCORE_EVENT_NOTIFY_OPENED,
	RN_LCORE_EVENT_NOTIFY_CONNECTED,
	RN_LCORE_EVENT_BAY_FREE,    /* no request: a bay of notification
				     * buffers is free, and it or CQ room just
				     * came back; arg 1 after a NOTIFY_DROP */
	RN_LCORE_EVENT_NOTIFY_FAILED,/* our notify QP failed locally (arg: the
				      * syndrome): the peer is to stop */
	RN_LCORE_EVENT_CLIENT_REMOVED,/* cookie: the struct rn_client_link
				       * this lcore no longer touches */
	RN_LCORE_EVENT_CLIENT_ADDED, /* cookie: the struct rn_client_link;
				      * arg: 0, or -errno when this lcore
				      * did not take it */
	RN_LCORE_EVENT_CLIENT_REGISTERED,   /* cookie: the rn_client_reg_op;
					     * arg: 0 or the device's -errno */
	RN_LCORE_EVENT_CLIENT_DEREGISTERED, /* cookie: the op; arg: 0 or the
					     * device's -errno (it is gone
					     * all the same) */
};

struct rn_lcore_event {
	uint16_t type;          /* enum rn_lcore_event_type */
	uint16_t lcore_id;
	int32_t arg;
	uint64_t cookie;
};
_Static_assert(sizeof(struct rn_lcore_event) == 16, "ring element size");

/* Written only by the owning lcore, read by telemetry with relaxed loads. */
struct rn_lcore_stats {
	uint64_t loops;         /* iterations of the run loop */
	uint64_t busy_loops;    /* iterations that found work */
	uint64_t sleeps;        /* adaptive idle: times it slept */
	uint64_t commands;      /* commands executed */
	uint64_t events_dropped;/* event ring full */
	uint64_t completions;   /* CQEs polled */
	uint64_t stale_cqes;    /* CQEs of QPs already destroyed */
	uint64_t qps;           /* QPs alive now */
	uint64_t endpoints;     /* endpoint incarnations alive now */
	uint64_t notify_sent;   /* native SENDs posted; here, less
				 * client_sent, which rn_lcore_stats_read()
				 * adds: one count on a client's send */
	uint64_t notify_received;
	uint64_t notify_rejected;/* frames whose lengths did not add up */
	uint64_t notify_stale;  /* completions of another generation */
	uint64_t notify_early;  /* receives kept until their endpoint was
				 * connected on the control thread (or
				 * failed, or closed) */
	uint64_t notify_early_lost;/* of those, lost: their slots were gone
				 * when they were to be delivered (a bug) */
	uint64_t credit_writes; /* credit-only RDMA WRITEs */
	uint64_t reports_dropped;/* send fates lost: completions ring full */
	uint64_t cqs;           /* CQs in use */
	uint64_t cq_reserved;   /* CQEs reserved by live endpoints, all CQs */
	uint64_t no_cq_room;    /* endpoints or native channels refused */
	/* Client processes (lcore_client.c): */
	uint64_t client_sent;   /* their SENDs posted (in notify_sent too,
				 * as read) */
	uint64_t client_delivered;/* agent frames handed to their clients */
	uint64_t client_held;   /* agent frames that found the client's
				 * deliver ring full: held, retried */
	uint64_t client_refused;/* agent frames for an agent not attached
				 * here: dropped, a refusal sent back */
	uint64_t client_busy;   /* agent frames for a client holding
				 * [client] hold_max: dropped, a refusal
				 * sent back */
	uint64_t refusals_dropped;/* refusals not sent: no credit */
	uint64_t xfer_wqes;     /* transfer chunks posted */
	uint64_t xfer_batches;  /* transfer batches finished */
	/* Written by the control thread alone, as it takes them: */
	uint64_t device_events; /* asynchronous events of the worker's NIC */
};
_Static_assert(sizeof(struct rn_lcore_stats) % sizeof(uint64_t) == 0,
	       "counters only");

/*
 * A CQ shared by endpoints of this lcore. Each endpoint reserves, before
 * its QPs are made, every CQE they could have outstanding, so the CQ never
 * overruns; the reservation returns when the endpoint's QPs are destroyed,
 * after their completions drained.
 */
struct rn_lcore_cq {
	struct rn_cq cq;
	uint32_t reserved;
};

struct rn_lcore {
	/* Hot: what the loop reads or writes on every turn, and the send and
	 * receive paths on every notification. The scalars first, in at most
	 * RN_LCORE_HOT_LINES cache lines (checked below): each turn then
	 * touches those lines, the counters' lines, and one rn_lcore_cq per
	 * CQ in use; nothing that only the control path or the reapers read
	 * sits between them. */
	struct rte_ring *cmd_ring;      /* control -> lcore, single producer */
	struct rn_nic *nic;             /* this lcore's device context */
	uint32_t n_cqs;                 /* CQs in use, grown on demand */
	uint32_t channels_failed;       /* native channels yet to retire */
	struct rn_lcore_ep *closing;    /* draining before destruction */
	struct rn_lcore_ep *failing;    /* failed, EP_FAILED held back until
					 * their notices went
					 * (lcore_endpoint.c) */
	bool running;
	bool notify_fallback;
	enum rn_idle_policy idle;
	uint32_t idle_polls;
	uint32_t idle_polls_left;
	uint32_t sleeping;                  /* adaptive idle: in epoll */
	uint32_t max_inline;            /* frames up to this go inline: [notify]
					 * max_inline (name + msg) + 8 */
	struct rte_ring *notify_requests;   /* app -> lcore, MP/SC */
	struct rte_ring *notify_deliveries; /* lcore -> app, SP/SC */
	struct rte_ring *notify_releases;   /* app -> lcore, SP/SC */
	struct rte_ring *notify_completions;/* shared, to the app */
	struct rn_notify_region notify; /* base NULL: no native channels */
	uint32_t n_clients;             /* client processes attached here */
	struct rn_lcore_clients *clients;   /* lcore_client.c; NULL before
					     * the first CLIENT_ADD */
	/* Written every turn; read by telemetry from another thread, so on
	 * lines of their own. */
	struct rn_lcore_stats stats __rte_cache_aligned;
	/* Polled every turn: cqs[0, n_cqs). */
	struct rn_lcore_cq cqs[RN_LCORE_MAX_CQS] __rte_cache_aligned;

	/* Cold: set up by the control thread before launch, or read by the
	 * command handlers and the reapers only. */
	RTE_MARKER cold __rte_cache_aligned;
	/* Connected endpoints by endpoint index: one entry read per send
	 * request, so where the table sits does not matter to the loop. */
	struct rn_lcore_ep *by_index[RN_MAX_ENDPOINTS];
	struct rte_ring *event_ring;    /* lcores -> control, shared */
	struct rn_qp_table *qps;
	struct rn_lcore_ep *eps;        /* every endpoint open here */
	/* EP_OPENs waiting for a bay that a closing endpoint still holds,
	 * oldest first, each until its TSC deadline. */
	struct {
		struct rn_ep_request *req;
		uint64_t until;
	} parked[RN_NOTIFY_MAX_BAYS];
	uint32_t n_parked;
	unsigned int lcore_id;
	uint32_t idle_sleep_us;
	/* Adaptive idle (lcore_idle.c): microseconds slept in a row with
	 * nothing done, and stats.busy_loops when last counted. */
	uint64_t quiet_us;
	uint64_t quiet_busy_loops;
	int epoll_fd;            /* wake_fd and the NIC's wait fds */
	int wake_fd;             /* eventfd: control -> sleeping lcore */
	int control_wake_fd;     /* eventfd: lcore -> control, after an event */
	uint32_t *client_sleeping;  /* the status page's word for this lcore
				     * (rn_lcore_set_client_sleeping()) */
	uint32_t client_index;   /* its rings in client regions: submit[i] */
	uint32_t client_hold_max;/* [client] hold_max */
	uint64_t tsc_hz;
	uint32_t cq_size;        /* CQEs asked of the device for each CQ */
	uint32_t cq_cqes;        /* CQEs each holds (mlx5 rounds up more) */
	uint32_t max_cqs;

	/* Rare, written by the worker.
	 * Rejected frames: logged at most once a second, so that a peer
	 * sending them by the million does not make the worker write as
	 * many lines; the rest counted for the next line. */
	uint64_t rejected_logged_tsc;
	uint64_t rejected_unlogged;
	/* A notify QP the device refused: said once, as the same caps fail
	 * the same way for every endpoint. */
	bool notify_qp_refused_said;
	/* Early receives lost (lcore_notify.c): said once, counted always. */
	bool early_lost_said;
	uint64_t channel_reap_tsc;      /* failed channels looked at next */
	struct rn_lcore_xfer *xfer;     /* transfers (rn_lcore_xfer.h) */
	struct rn_lcore_cxfer *cxfer;   /* client processes' transfers
					 * (lcore_client_xfer.c), or NULL */
} __rte_cache_aligned;

/* The hot scalars fit three cache lines, the most a turn should pay for
 * them: one for the loop's own fields, two for the notification rings and
 * region. After them come the counters and the CQs, of which a turn
 * touches those in use (`pahole -C rn_lcore` shows the layout). */
#define RN_LCORE_HOT_LINES 3
_Static_assert(offsetof(struct rn_lcore, stats) <=
	       RN_LCORE_HOT_LINES * RTE_CACHE_LINE_SIZE,
	       "the hot scalars of struct rn_lcore outgrew their lines");
/* The 8 KB by_index table and everything else the loop does not touch
 * each turn come after the CQs. */
_Static_assert(offsetof(struct rn_lcore, cold) ==
	       RTE_ALIGN_CEIL(offsetof(struct rn_lcore, cqs) +
			      sizeof(struct rn_lcore_cq) * RN_LCORE_MAX_CQS,
			      RTE_CACHE_LINE_SIZE),
	       "only the CQs lie between the counters and the cold part");

#define RN_LCORE_QP_TABLE_ORDER 10

/*
 * Prepare lc for lcore_id (control thread, before launch): its rings, its
 * wake-up descriptors and its NIC device context. events is the shared
 * event ring and control_wake_fd the eventfd the control thread watches.
 * Returns 0, -ENOMEM, -errno of epoll/eventfd, or rn_nic_open()'s error
 * with why set.
 */
int rn_lcore_init(struct rn_lcore *lc, unsigned int lcore_id,
		  const struct rn_config *cfg, struct rte_ring *events,
		  int control_wake_fd, char *why, size_t why_len);

/* Release what rn_lcore_init made; the lcore must have returned. */
void rn_lcore_fini(struct rn_lcore *lc);

/* The worker's entry point for rte_eal_remote_launch(); arg is its lcore. */
int rn_lcore_run(void *arg);

/*
 * Control thread only: queue cmd for lc and wake it if it may sleep.
 * Returns 0 or -ENOBUFS when its ring is full.
 */
int rn_lcore_cmd_send(struct rn_lcore *lc, struct rn_lcore_cmd cmd);

/* Any thread, after queueing work for lc: wake it if it sleeps. */
void rn_lcore_wake(struct rn_lcore *lc);

struct rn_lcore_ep;
/*
 * The endpoint a native notification came from (its delivery's owner), for
 * the application side, from any thread: the lcore to give its receive
 * slot back to, and where receive slot index is. Both hold until every
 * delivery of the endpoint was given back.
 */
struct rn_lcore *rn_lcore_ep_lcore(const struct rn_lcore_ep *ep);
const uint8_t *rn_lcore_ep_recv_slot(const struct rn_lcore_ep *ep,
				     uint32_t index);

/* A relaxed snapshot of lc's counters, from any thread. */
void rn_lcore_stats_read(const struct rn_lcore *lc,
			 struct rn_lcore_stats *out);

#endif /* RN_LCORE_H */
