/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Send order across an endpoint's native and TCP channels, at the
 * application's poll: see notify_order.h.
 */
#include <errno.h>
#include <stdlib.h>

#include "notify_order.h"

struct notify_parked {
	struct notify_parked *next;
	struct rn_notify_delivery d;
	uint64_t deadline_ms;
};

static bool
native(const struct rn_notify_delivery *d)
{
	return d->owner != NULL;
}

/* a - b in wrap-around order: counts and generations are modulo 2^32. */
static int32_t
ahead(uint32_t a, uint32_t b)
{
	return (int32_t)(a - b);
}

/*
 * The counts d is ordered by, started afresh for a newer incarnation; NULL
 * for one of an incarnation gone, which has nothing left to be ordered with.
 */
static struct notify_order_slot *
counts_for(struct rn_notify_order *o, const struct rn_notify_delivery *d)
{
	struct notify_order_slot *s = &o->slot[d->ep_slot % RN_NOTIFY_ORDER_SLOTS];

	if (ahead(d->generation, s->generation) < 0)
		return NULL;
	if (d->generation != s->generation)
		*s = (struct notify_order_slot){ .generation = d->generation };
	return s;
}

bool
notify_order_admit(struct rn_notify_order *o, const struct rn_notify_delivery *d)
{
	struct notify_order_slot *s = counts_for(o, d);

	if (s == NULL)
		return true;
	if (native(d)) {
		if (ahead(s->tcps, d->seq) < 0)
			return false;
		s->natives++;
	} else {
		if (ahead(s->natives, d->seq) < 0)
			return false;
		s->tcps++;
	}
	return true;
}

/* d goes without its turn: what it waited for is taken as lost. */
static void
overdue(struct rn_notify_order *o, const struct rn_notify_delivery *d)
{
	struct notify_order_slot *s = counts_for(o, d);

	__atomic_store_n(&o->overdue, o->overdue + 1, __ATOMIC_RELAXED);
	if (s == NULL)
		return;
	if (native(d)) {
		if (ahead(s->tcps, d->seq) < 0)
			s->tcps = d->seq;
		s->natives++;
	} else {
		if (ahead(s->natives, d->seq) < 0)
			s->natives = d->seq;
		s->tcps++;
	}
}

int
notify_order_park(struct rn_notify_order *o, const struct rn_notify_delivery *d,
		  uint64_t now_ms)
{
	struct notify_parked *p = malloc(sizeof(*p));

	if (p == NULL) {
		overdue(o, d);
		return -ENOMEM;
	}
	*p = (struct notify_parked){ .d = *d,
				     .deadline_ms = now_ms + RN_NOTIFY_ORDER_WAIT_MS };
	if (o->tail != NULL)
		o->tail->next = p;
	else
		o->head = p;
	o->tail = p;
	__atomic_store_n(&o->parked, o->parked + 1, __ATOMIC_RELAXED);
	return 0;
}

static void
unlink_parked(struct rn_notify_order *o, struct notify_parked *prev,
	      struct notify_parked *p, struct rn_notify_delivery *d)
{
	if (prev != NULL)
		prev->next = p->next;
	else
		o->head = p->next;
	if (o->tail == p)
		o->tail = prev;
	*d = p->d;
	free(p);
}

/*
 * Oldest first: one that waits keeps the later ones of its channel waiting
 * too (their counts are at least its own), so each channel stays in order.
 */
bool
notify_order_next(struct rn_notify_order *o, uint64_t now_ms,
		  struct rn_notify_delivery *d)
{
	struct notify_parked *prev = NULL;

	for (struct notify_parked *p = o->head; p != NULL; prev = p, p = p->next) {
		if (notify_order_admit(o, &p->d)) {
			unlink_parked(o, prev, p, d);
			return true;
		}
		if (now_ms >= p->deadline_ms) {
			overdue(o, &p->d);
			unlink_parked(o, prev, p, d);
			return true;
		}
	}
	return false;
}

bool
notify_order_take_any(struct rn_notify_order *o, struct rn_notify_delivery *d)
{
	if (o->head == NULL)
		return false;
	unlink_parked(o, NULL, o->head, d);
	return true;
}
