/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send order across an endpoint's native and TCP channels, at the
 * application's poll: see notify_order_pvt.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "notify_order_pvt.h"

struct rn_notify_parked {
	struct rn_notify_parked *next;
	struct rn_notify_delivery d;
	uint64_t parked_ms;
};

static bool
native(const struct rn_notify_delivery *d)
{
	return rn_notify_delivery_native(d);
}

/* a - b in wrap-around order: counts and generations are modulo 2^32. */
static int32_t
ahead(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/* *count moves up to at least to; never back. */
static void
at_least(uint32_t *count, uint32_t to)
{
	if (ahead(to, *count) > 0)
		*count = to;
}

static struct rn_notify_order_ep *
ep_of(struct rn_notify_order *o, uint16_t ep_index)
{
	return &o->ep[ep_index & (RN_MAX_ENDPOINTS - 1)];
}

void
rn_notify_order_generation(struct rn_notify_order *o, uint16_t ep_index,
			   uint32_t generation)
{
	struct rn_notify_order_ep *s = ep_of(o, ep_index);

	if (ahead(generation, s->generation) > 0)
		*s = (struct rn_notify_order_ep){ .generation = generation };
}

/*
 * The counts d is ordered by, started afresh for a newer incarnation; NULL
 * for one of an incarnation gone, which has nothing left to be ordered with.
 */
static struct rn_notify_order_ep *
counts_for(struct rn_notify_order *o, const struct rn_notify_delivery *d)
{
	struct rn_notify_order_ep *s = ep_of(o, d->ep_index);

	rn_notify_order_generation(o, d->ep_index, d->generation);
	return d->generation == s->generation ? s : NULL;
}

/* What d waits for on the other channel was handed over. */
static bool
turn_came(const struct rn_notify_order_ep *s,
	  const struct rn_notify_delivery *d)
{
	return ahead(native(d) ? s->tcps : s->natives, d->seq) >= 0;
}

/* d is handed over: its channel's count passes it. */
static void
handed_over(struct rn_notify_order_ep *s, const struct rn_notify_delivery *d,
	    uint64_t now_ms)
{
	at_least(native(d) ? &s->natives : &s->tcps, d->pos + 1);
	s->progress_ms = now_ms;
}

bool
rn_notify_order_admit(struct rn_notify_order *o,
		      const struct rn_notify_delivery *d,
		      uint64_t now_ms)
{
	struct rn_notify_order_ep *s = counts_for(o, d);

	if (s == NULL)
		return true;
	if (!turn_came(s, d))
		return false;
	handed_over(s, d, now_ms);
	return true;
}

/* d goes without its turn: what it waited for is taken as lost. */
static void
overdue(struct rn_notify_order *o, const struct rn_notify_delivery *d,
	uint64_t now_ms)
{
	struct rn_notify_order_ep *s = counts_for(o, d);

	__atomic_store_n(&o->overdue, o->overdue + 1, __ATOMIC_RELAXED);
	if (s == NULL)
		return;
	at_least(native(d) ? &s->tcps : &s->natives, d->seq);
	handed_over(s, d, now_ms);
}

int
rn_notify_order_park(struct rn_notify_order *o,
		     const struct rn_notify_delivery *d,
		     uint64_t now_ms)
{
	struct rn_notify_parked *p = malloc(sizeof(*p));

	if (p == NULL) {
		overdue(o, d, now_ms);
		return -ENOMEM;
	}
	*p = (struct rn_notify_parked){ .d = *d, .parked_ms = now_ms };
	if (o->tail != NULL)
		o->tail->next = p;
	else
		o->head = p;
	o->tail = p;
	o->parked_tcp += !native(d);
	__atomic_store_n(&o->parked, o->parked + 1, __ATOMIC_RELAXED);
	return 0;
}

static void
unlink_parked(struct rn_notify_order *o, struct rn_notify_parked *prev,
	      struct rn_notify_parked *p, struct rn_notify_delivery *d)
{
	if (prev != NULL)
		prev->next = p->next;
	else
		o->head = p->next;
	if (o->tail == p)
		o->tail = prev;
	o->parked_tcp -= !native(&p->d);
	*d = p->d;
	free(p);
}

/*
 * Whether p has waited wait_ms: since it was parked, and since its
 * endpoint last handed one over (what it waits for may be coming slowly).
 */
static bool
waited(struct rn_notify_order *o, const struct rn_notify_parked *p,
       uint64_t now_ms, uint64_t wait_ms)
{
	const struct rn_notify_order_ep *s = ep_of(o, p->d.ep_index);
	uint64_t since = p->parked_ms;

	if (s->generation == p->d.generation && s->progress_ms > since)
		since = s->progress_ms;
	return now_ms >= since + wait_ms;
}

/*
 * Oldest first: one that waits keeps the later ones of its channel waiting
 * too (their counts are at least its own), so each channel stays in order.
 */
bool
rn_notify_order_next(struct rn_notify_order *o, uint64_t now_ms, bool rings_dry,
		     struct rn_notify_delivery *d)
{
	uint64_t wait_ms = rings_dry ? RN_NOTIFY_ORDER_WAIT_MS :
				       RN_NOTIFY_ORDER_WAIT_MAX_MS;

	struct rn_notify_parked *prev = NULL;

	for (struct rn_notify_parked *p = o->head; p != NULL; prev = p, p = p->next) {
		if (rn_notify_order_admit(o, &p->d, now_ms)) {
			unlink_parked(o, prev, p, d);
			return true;
		}
		if (waited(o, p, now_ms, wait_ms)) {
			overdue(o, &p->d, now_ms);
			unlink_parked(o, prev, p, d);
			return true;
		}
	}
	return false;
}

void
rn_notify_order_refresh(struct rn_notify_order *o,
			uint32_t (*generation_of)(void *ctx, uint16_t ep_index),
			void *ctx)
{
	for (struct rn_notify_parked *p = o->head; p != NULL; p = p->next)
		rn_notify_order_generation(o, p->d.ep_index,
					   generation_of(ctx, p->d.ep_index));
}

bool
rn_notify_order_take_any(struct rn_notify_order *o,
			 struct rn_notify_delivery *d)
{
	if (o->head == NULL)
		return false;
	unlink_parked(o, NULL, o->head, d);
	return true;
}
