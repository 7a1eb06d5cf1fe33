/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_ORDER_PVT_H
#define RN_NOTIFY_ORDER_PVT_H

/*
 * Send order across the two channels of one endpoint. A sender's
 * notifications to one peer travel natively (SEND on the notify QP) or over
 * TCP (the control connection: a peer without a native channel, or a frame
 * over its slots), and each channel keeps its own order. Where both carry
 * an endpoint's notifications, each says where it stands in the other:
 *   a native one carries how many TCP ones were queued before it (the
 *   SEND's immediate);
 *   a TCP one carries how many native ones were posted before it (the
 *   NOTIFY frame's first word).
 * The receiver numbers what arrives on each channel (pos: neither loses
 * nor reorders within an incarnation), and the application's poll hands a
 * delivery over only when what came before it on the other channel was
 * handed over; until then it is parked here. Counts are per incarnation of
 * the endpoint (its generation at the receiver): one of an incarnation gone
 * is handed over at once.
 *
 * (A native one its receiver rejected as malformed still comes here, to
 * take its place, and is dropped after.) A native notification whose SEND
 * failed with its QP never arrives, and the TCP one after it would wait
 * for it for ever: a parked delivery whose endpoint handed
 * nothing over for RN_NOTIFY_ORDER_WAIT_MS while nothing more was there to
 * take, or for RN_NOTIFY_ORDER_WAIT_MAX_MS whatever there was, goes
 * (counted, overdue), and the counts move past what it waited for; should
 * that arrive after all, it is not counted twice. One polling thread at a
 * time (the poll lock).
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_notify_engine.h"

#define RN_NOTIFY_ORDER_WAIT_MS 1000
#define RN_NOTIFY_ORDER_WAIT_MAX_MS (4 * RN_NOTIFY_ORDER_WAIT_MS)

/* What the order counts of one endpoint. */
struct rn_notify_order_ep {
	uint32_t generation;      /* the incarnation counted here */
	uint32_t natives;         /* native ones handed over: 1 + last pos */
	uint32_t tcps;            /* TCP ones handed over: 1 + last pos */
	uint64_t progress_ms;     /* when one was last handed over */
};

struct rn_notify_parked;

struct rn_notify_order {
	struct rn_notify_order_ep ep[RN_MAX_ENDPOINTS];
	struct rn_notify_parked *head, *tail;   /* in arrival order */
	uint32_t parked_tcp;      /* TCP ones parked now */
	/* Written by the polling thread, read by telemetry (relaxed). */
	uint64_t parked;          /* deliveries that had to wait, in all */
	uint64_t overdue;         /* handed over out of order after the wait */
};

/*
 * Whether d may go to the application now (at now_ms), counted as handed
 * over if so; when false, park it. Only for deliveries that did not wait
 * here before.
 */
bool rn_notify_order_admit(struct rn_notify_order *o,
			   const struct rn_notify_delivery *d, uint64_t now_ms);

/*
 * rn_notify_order_admit() for every delivery the poll takes: the common case
 * (a native one of the incarnation counted, nothing over TCP before it
 * that is not handed over) inline, the rest by the call.
 */
static inline bool
rn_notify_order_admit_taken(struct rn_notify_order *o,
			    const struct rn_notify_delivery *d, uint64_t now_ms)
{
	struct rn_notify_order_ep *s =
		&o->ep[d->ep_index & (RN_MAX_ENDPOINTS - 1)];

	if (rn_notify_delivery_native(d) && d->generation == s->generation &&
	    (int32_t)(s->tcps - d->seq) >= 0 &&
	    (int32_t)(d->pos + 1 - s->natives) > 0) {
		s->natives = d->pos + 1;
		s->progress_ms = now_ms;
		return true;
	}
	return rn_notify_order_admit(o, d, now_ms);
}

/* Keep d until its turn. -ENOMEM: hand it over now (counted as overdue). */
int rn_notify_order_park(struct rn_notify_order *o,
			 const struct rn_notify_delivery *d, uint64_t now_ms);

/*
 * The oldest parked delivery that may go now, counted as handed over; or
 * one whose wait is over: RN_NOTIFY_ORDER_WAIT_MS with rings_dry (the
 * caller found nothing more to take: what it waits for is not coming),
 * RN_NOTIFY_ORDER_WAIT_MAX_MS without. False when none may.
 */
bool rn_notify_order_next(struct rn_notify_order *o, uint64_t now_ms,
			  bool rings_dry, struct rn_notify_delivery *d);

/*
 * The endpoint at ep_index is now in incarnation generation (the control
 * plane says so): what is parked of older ones may go.
 */
void rn_notify_order_generation(struct rn_notify_order *o, uint16_t ep_index,
				uint32_t generation);

/*
 * For each parked delivery, ask generation_of(ctx, ep_index) for its
 * endpoint's incarnation now, as rn_notify_order_generation() takes it.
 */
void rn_notify_order_refresh(struct rn_notify_order *o,
			     uint32_t (*generation_of)(void *ctx,
						       uint16_t ep_index),
			     void *ctx);

/* Any parked delivery, not counted (to discard them). */
bool rn_notify_order_take_any(struct rn_notify_order *o,
			      struct rn_notify_delivery *d);

static inline bool
rn_notify_order_waiting(const struct rn_notify_order *o)
{
	return o->head != NULL;
}

#endif /* RN_NOTIFY_ORDER_PVT_H */
