/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_ENGINE_H
#define RN_NOTIFY_ENGINE_H

/*
 * What the application side, the lcores and the control thread share to
 * carry notifications. All traffic between them goes through rings:
 *   send:      app -> owning lcore      (a request the app waits on)
 *   deliver:   lcore -> app             (a received frame in its slot)
 *   release:   app -> lcore             (the slot may be reposted)
 *   TCP:       lcore -> control thread  (the request, forwarded)
 *              control thread -> app    (a frame that came over TCP)
 *   completed: lcores, control -> app   (the fate of a send)
 */

#include <rte_ring.h>
#include <stdint.h>

#include "rn_notify.h"
#include "rn_notify_frame.h"

/* Requests and deliveries name an endpoint by its index, below this: the
 * most endpoints a node has. The control plane's table, each lcore's
 * by_index and the send order's per-endpoint counts are this long; a power
 * of two, which the send order's index mask needs. */
#define RN_MAX_ENDPOINTS 1024
_Static_assert((RN_MAX_ENDPOINTS & (RN_MAX_ENDPOINTS - 1)) == 0,
	       "RN_MAX_ENDPOINTS is a power of two");

/*
 * The fault a diagnostic request (rn_notify_diag.h) makes on the lcore
 * that owns the endpoint, sim device only (lcore_diag.c). Sends carry
 * none: a diagnostic request is one of no notification (count 0).
 */
enum rn_notify_fault {
	RN_NOTIFY_FAULT_NONE = 0,     /* a send */
	RN_NOTIFY_FAULT_LOCAL,        /* the notify QP fails locally */
	RN_NOTIFY_FAULT_BAD_FRAME,    /* out[0] goes natively one byte longer
				       * than its lengths say: the receiver
				       * must reject it */
	RN_NOTIFY_FAULT_STALL,        /* the lcore stops for
				       * RN_NOTIFY_STALL_MS */
	RN_NOTIFY_FAULT_CQ_OVERRUN,   /* the endpoint's CQ overruns */
};

/*
 * One hand-over of out[0..count) (count >= 1), on the sending thread's
 * stack while it waits for its `result`; or, with count 0, a diagnostic
 * request of `fault`. Only a request's first notification goes over TCP:
 * the control thread gets the request with it, and answers for that one
 * alone.
 */
struct rn_notify_request {
	uint32_t ep_index;        /* the endpoint's, in the plane's table */
	uint32_t flags;           /* rn_notify.h's */
	const struct rn_notify_out *out;
	uint32_t count;
	uint32_t fault;           /* enum rn_notify_fault, when count is 0 */
	uint32_t native_before;   /* to TCP: native ones posted before it, */
	uint32_t generation;      /* by this incarnation of the endpoint */
	/* How many went, or -errno if none; RN_NOTIFY_PENDING until whoever
	 * answers release-stores it: one word, so one store answers. */
	int64_t result;
};

#define RN_NOTIFY_PENDING INT64_MIN

#define RN_NOTIFY_VIA_TCP 0xffff   /* the index of one that came over TCP */

/*
 * A received notification, and later its release. 32 bytes, which the
 * rings copy in two 16-byte moves (a larger element takes a loop of 8-byte
 * ones, on the receive path of every notification). A native one's frame
 * is in its receive slot (rn_lcore_ep_recv_slot()).
 */
struct rn_notify_delivery {
	union {
		void *owner;      /* native: the lcore endpoint */
		uint8_t *frame;   /* over TCP: the frame, malloc'd */
	};
	uint32_t len;
	uint16_t ep_index;        /* the endpoint's, in the plane's table */
	uint16_t index;           /* its receive slot, or RN_NOTIFY_VIA_TCP */
	uint32_t seq;             /* sent after this many of the other channel
				   * (dataplane/api/notify_order_pvt.h) */
	uint32_t pos;             /* its place on its own channel */
	uint32_t generation;      /* of the endpoint here, when it came */
	uint32_t pad;
};
_Static_assert(sizeof(struct rn_notify_delivery) == 32, "two 16-byte moves");

static inline bool
rn_notify_delivery_native(const struct rn_notify_delivery *d)
{
	return d->index != RN_NOTIFY_VIA_TCP;
}

struct rn_notify_event {
	uint64_t cookie;
	int32_t status;
	uint32_t pad;
};

/* Answer a request: sent of its notifications went (>= 1), or -errno. */
static inline void
rn_notify_answer_sent(struct rn_notify_request *req, int sent)
{
	__atomic_store_n(&req->result, sent, __ATOMIC_RELEASE);
}

/* Answer a request for its first notification: 0 (it went) or -errno. */
static inline void
rn_notify_answer(struct rn_notify_request *req, int rc)
{
	rn_notify_answer_sent(req, rc == 0 ? 1 : rc);
}

/*
 * Report a send's fate. The application drains the ring; when it does not
 * and the ring is full, the newest report is dropped: returns false, for
 * the caller to count.
 */
static inline bool
rn_notify_complete(struct rte_ring *completions, uint64_t cookie, int status)
{
	struct rn_notify_event ev = { .cookie = cookie, .status = status };

	return rte_ring_mp_enqueue_elem(completions, &ev, sizeof(ev)) == 0;
}

#endif /* RN_NOTIFY_ENGINE_H */
