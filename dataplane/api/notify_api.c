/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application side of notifications. A send finds the endpoint in the
 * control plane's published table, hands the request to the lcore that owns
 * the endpoint and waits for its answer: the lcore owns the QP, the
 * credits and the slots, so nothing here races with it. Polling takes what
 * the lcores (native) and the control thread (TCP) delivered, in send order
 * per endpoint across both (notify_order_pvt.h), and gives the previous
 * batch's buffers back to the lcore that owns them.
 */
#include <errno.h>
#include <rte_log.h>
#include <rte_pause.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "notify_api_pvt.h"
#include "notify_order_pvt.h"
#include "rn_lcore.h"
#include "rn_plane.h"

/* A payload and its lengths fill the largest slot. */
_Static_assert(RN_NOTIFY_MAX_PAYLOAD + RN_NOTIFY_OVERHEAD == 64 * 1024,
	       "the largest frame");

RTE_LOG_REGISTER_SUFFIX(rn_notify_logtype, notify, INFO);

int
rn_notify_create(struct rn_plane *plane, struct rn_lcore **workers,
		 unsigned int n_workers, struct rn_notify **out)
{
	struct rn_notify *nf = calloc(1, sizeof(*nf));

	if (nf == NULL)
		return -ENOMEM;
	nf->plane = plane;
	nf->workers = workers;
	nf->n_workers = n_workers;
	nf->completions = rte_ring_create_elem("rn_notify_done",
		sizeof(struct rn_notify_event), RN_NOTIFY_RING_SIZE,
		SOCKET_ID_ANY, RING_F_SC_DEQ | RING_F_EXACT_SZ);
	nf->tcp_deliveries = rte_ring_create_elem("rn_notify_tcp",
		sizeof(struct rn_notify_delivery), RN_NOTIFY_RING_SIZE,
		SOCKET_ID_ANY, RING_F_SP_ENQ | RING_F_SC_DEQ | RING_F_EXACT_SZ);
	nf->uses = rte_ring_create_elem("rn_notify_uses", sizeof(uint32_t),
		RN_NOTIFY_RING_SIZE, SOCKET_ID_ANY, RING_F_SC_DEQ);
	nf->order = calloc(1, sizeof(*nf->order));
	pthread_mutex_init(&nf->poll_lock, NULL);
	if (nf->completions == NULL || nf->tcp_deliveries == NULL ||
	    nf->uses == NULL || nf->order == NULL) {
		rn_notify_free(nf);
		return -ENOMEM;
	}
	rn_plane_set_notify(plane, nf->uses, nf->tcp_deliveries,
			    nf->completions);
	for (unsigned int i = 0; i < n_workers; i++)
		workers[i]->notify_completions = nf->completions;
	*out = nf;
	return 0;
}

void
rn_notify_free(struct rn_notify *nf)
{
	struct rn_notify_delivery d;

	while (nf->tcp_deliveries != NULL &&
	       rte_ring_sc_dequeue_elem(nf->tcp_deliveries, &d, sizeof(d)) == 0)
		rn_plane_tcp_release(nf->plane, &d);
	for (unsigned int i = 0; i < nf->n_held; i++)
		if (!rn_notify_delivery_native(&nf->held[i]))
			rn_plane_tcp_release(nf->plane, &nf->held[i]);
	while (nf->order != NULL && rn_notify_order_take_any(nf->order, &d))
		if (!rn_notify_delivery_native(&d))
			rn_plane_tcp_release(nf->plane, &d);
	free(nf->order);
	rte_ring_free(nf->completions);
	rte_ring_free(nf->tcp_deliveries);
	rte_ring_free(nf->uses);
	pthread_mutex_destroy(&nf->poll_lock);
	free(nf);
}

/* The endpoint's state says what to answer before asking its lcore. */
static int
not_connected(struct rn_notify *nf, uint32_t ep_index,
	      enum rn_ep_state state)
{
	switch (state) {
	case RN_EP_IDLE:
	case RN_EP_CONNECTING:
		/* First use: have the control thread connect it. */
		rte_ring_mp_enqueue_elem(nf->uses, &ep_index, sizeof(ep_index));
		return -EAGAIN;
	case RN_EP_CLOSED:
		rte_ring_mp_enqueue_elem(nf->uses, &ep_index, sizeof(ep_index));
		return -ENOTCONN;
	default:
		return -ENOTCONN;
	}
}

int
rn_notify_submit(struct rn_notify *nf, const char *peer,
		 struct rn_notify_request *req)
{
	enum rn_ep_state state;
	int64_t result;
	uint32_t worker;
	struct rn_lcore *lc;

	/* The lcore finds the endpoint by its index, unchecked. */
	if (rn_plane_lookup(nf->plane, peer, &req->ep_index, &state,
			    &worker) != 0)
		return -ENOENT;
	if (state != RN_EP_CONNECTED)
		return not_connected(nf, req->ep_index, state);
	req->result = RN_NOTIFY_PENDING;
	lc = nf->workers[worker];
	while (rte_ring_mp_enqueue(lc->notify_requests, req) != 0)
		rte_pause();
	rn_lcore_wake(lc);
	/* The owning lcore answers within an iteration of its loop. */
	while ((result = __atomic_load_n(&req->result, __ATOMIC_ACQUIRE)) ==
	       RN_NOTIFY_PENDING)
		rte_pause();
	return (int)result;
}

int
rn_notify_send_burst(struct rn_notify *nf, const char *peer,
		     const struct rn_notify_out *out, unsigned int n,
		     uint32_t flags)
{
	struct rn_notify_request req = { .flags = flags, .out = out };

	if (n == 0)
		return 0;
	if (unlikely((flags & ~RN_NOTIFY_WANT_COMPLETION) != 0))
		return -EINVAL;
	/* The lcore takes them as they come: those before a bad one go. */
	while (req.count < n && (uint64_t)out[req.count].name_len +
				out[req.count].msg_len <= RN_NOTIFY_MAX_PAYLOAD)
		req.count++;
	if (req.count == 0)
		return -E2BIG;
	return rn_notify_submit(nf, peer, &req);
}

int
rn_notify_send(struct rn_notify *nf, const char *peer, const void *name,
	       uint32_t name_len, const void *msg, uint32_t msg_len,
	       uint64_t cookie, uint32_t flags)
{
	struct rn_notify_out one = { .name = name, .msg = msg,
				     .name_len = name_len, .msg_len = msg_len,
				     .cookie = cookie };
	int rc = rn_notify_send_burst(nf, peer, &one, 1, flags);

	return rc > 0 ? 0 : rc;
}

/* Where a delivery's frame is: its receive slot, or a copy (TCP). */
static const uint8_t *
frame_of(const struct rn_notify_delivery *d)
{
	return rn_notify_delivery_native(d) ?
	       rn_lcore_ep_recv_slot(d->owner, d->index) : d->frame;
}

/*
 * Give d's buffer back: a native one's slot to the lcore that owns it, to
 * be reposted (and become a credit for the sender); a TCP one's memory,
 * and its place in its peer's quota, to the plane.
 */
static void
release(struct rn_notify *nf, const struct rn_notify_delivery *d)
{
	struct rn_notify_delivery copy = *d;   /* DPDK 22.11 takes void * */
	struct rn_lcore *lc;

	if (!rn_notify_delivery_native(d)) {
		rn_plane_tcp_release(nf->plane, d);
		return;
	}
	lc = rn_lcore_ep_lcore(d->owner);
	/* The one polling thread is this ring's only producer. */
	while (rte_ring_sp_enqueue_elem(lc->notify_releases, &copy,
					sizeof(copy)) != 0)
		rte_pause();
	rn_lcore_wake(lc);
}

static bool
fill(struct rn_notify *nf, const struct rn_notify_delivery *d,
     struct rn_notification *out)
{
	struct rn_notify_view v;

	/* Checked by whoever delivered it, and read again for the views. A
	 * native one its lcore rejected (counted there) fails again here:
	 * it has taken its place in send order and goes no further. */
	if (rn_notify_frame_read(frame_of(d), d->len, &v) != 0)
		return false;
	rn_plane_name(nf->plane, d->ep_index, out->peer);
	out->name = v.name;
	out->name_len = v.name_len;
	out->msg = v.msg;
	out->msg_len = v.msg_len;
	out->native = rn_notify_delivery_native(d);
	return true;
}

/*
 * Hand d to the application: held until the next poll. One that does not
 * read (its lcore rejected it) goes back at once, taking no place in the
 * batch.
 */
static void
hand_over(struct rn_notify *nf, const struct rn_notify_delivery *d,
	  struct rn_notification *out, unsigned int *n)
{
	if (!fill(nf, d, &out[*n])) {
		release(nf, d);
		return;
	}
	nf->held[nf->n_held++] = *d;
	(*n)++;
}

static void
log_overdue(uint64_t n)
{
	rte_log(RTE_LOG_WARNING, rn_notify_logtype, "notifications: %lu handed "
		"over out of send order: what was sent before them on the "
		"other channel did not come in %u ms (a QP failed with it in "
		"flight), or there was no memory to hold them back\n",
		(unsigned long)n, RN_NOTIFY_ORDER_WAIT_MS);
}

/*
 * Parked deliveries whose turn came, oldest first, and those that waited
 * in vain (sooner with rings_dry: every ring was empty).
 */
static void
hand_over_parked(struct rn_notify *nf, uint64_t now_ms, bool rings_dry,
		 struct rn_notification *out, unsigned int *n, unsigned int max)
{
	struct rn_notify_order *o = nf->order;
	uint64_t overdue = o->overdue;
	struct rn_notify_delivery d;

	while (nf->n_held < max &&
	       rn_notify_order_next(o, now_ms, rings_dry, &d))
		hand_over(nf, &d, out, n);
	if (o->overdue != overdue)
		log_overdue(o->overdue - overdue);
}

/* Ring w of the poll: the workers' delivery rings, then the TCP one. */
static struct rte_ring *
ring_of(const struct rn_notify *nf, unsigned int w)
{
	return w < nf->n_workers ? nf->workers[w]->notify_deliveries :
				   nf->tcp_deliveries;
}

static uint32_t
generation_of(void *plane, uint16_t ep_index)
{
	return rn_plane_generation(plane, ep_index);
}

/*
 * Take ring's deliveries into the batch, in send order per endpoint.
 * Returns false when the batch filled before the ring was empty.
 */
static bool
take_ring(struct rn_notify *nf, struct rte_ring *ring, uint64_t *now_ms,
	  struct rn_notification *out, unsigned int *n, unsigned int max)
{
	struct rn_notify_order *o = nf->order;
	struct rn_notify_delivery d;

	for (;;) {
		if (nf->n_held >= max)
			return false;
		/* TCP frames parked by the thousand: leave the rest in the
		 * ring, whose being full holds the connection back. What
		 * they wait for is not in it. */
		if (ring == nf->tcp_deliveries &&
		    o->parked_tcp >= RN_NOTIFY_RING_SIZE)
			return true;
		if (rte_ring_sc_dequeue_elem(ring, &d, sizeof(d)) != 0)
			return true;
		if (!rn_notify_order_admit_taken(o, &d, *now_ms)) {
			if (*now_ms == 0)
				*now_ms = rn_now_ms();
			if (rn_notify_order_park(o, &d, *now_ms) == 0)
				continue;
			log_overdue(1);   /* no memory to hold it back */
		}
		hand_over(nf, &d, out, n);
		/* It may be what a parked one waits for. */
		if (rn_notify_order_waiting(o))
			hand_over_parked(nf, *now_ms, false, out, n, max);
	}
}

unsigned int
rn_notify_poll(struct rn_notify *nf, struct rn_notification *out,
	       unsigned int max)
{
	struct rn_notify_order *o = nf->order;
	uint64_t now_ms = 0;   /* read only while something waits */
	bool rings_dry = true;
	unsigned int n = 0;

	if (max > RN_NOTIFY_POLL_MAX)
		max = RN_NOTIFY_POLL_MAX;
	pthread_mutex_lock(&nf->poll_lock);
	for (unsigned int i = 0; i < nf->n_held; i++)
		release(nf, &nf->held[i]);
	nf->n_held = 0;
	if (rn_notify_order_waiting(o)) {
		now_ms = rn_now_ms();
		rn_notify_order_refresh(o, generation_of, nf->plane);
		hand_over_parked(nf, now_ms, false, out, &n, max);
	}
	/* Each poll starts at the next ring (the workers', then TCP's), so
	 * that a busy one never keeps the others waiting. */
	for (unsigned int i = 0; i <= nf->n_workers; i++)
		rings_dry &= take_ring(nf, ring_of(nf, (nf->first_ring + i) %
						   (nf->n_workers + 1)),
				       &now_ms, out, &n, max);
	/* Nothing more came: what a parked one waits for may never come. */
	if (rings_dry && rn_notify_order_waiting(o))
		hand_over_parked(nf, now_ms, true, out, &n, max);
	if (max != 0)
		nf->first_ring = (nf->first_ring + 1) % (nf->n_workers + 1);
	pthread_mutex_unlock(&nf->poll_lock);
	return n;
}

void
rn_notify_order_counts(const struct rn_notify *nf, uint64_t *parked,
		       uint64_t *overdue)
{
	*parked = __atomic_load_n(&nf->order->parked, __ATOMIC_RELAXED);
	*overdue = __atomic_load_n(&nf->order->overdue, __ATOMIC_RELAXED);
}

unsigned int
rn_notify_discard(struct rn_notify *nf)
{
	struct rn_notify_delivery d;
	unsigned int dropped = 0;

	pthread_mutex_lock(&nf->poll_lock);
	for (unsigned int i = 0; i < nf->n_held; i++)
		release(nf, &nf->held[i]);
	nf->n_held = 0;
	while (rn_notify_order_take_any(nf->order, &d)) {
		release(nf, &d);
		dropped++;
	}
	for (unsigned int w = 0; w <= nf->n_workers; w++) {
		while (rte_ring_sc_dequeue_elem(ring_of(nf, w), &d,
						sizeof(d)) == 0) {
			release(nf, &d);
			dropped++;
		}
	}
	pthread_mutex_unlock(&nf->poll_lock);
	return dropped;
}

unsigned int
rn_notify_completions(struct rn_notify *nf, struct rn_notify_completion *out,
		      unsigned int max)
{
	struct rn_notify_event ev;
	unsigned int n = 0;

	while (n < max && rte_ring_sc_dequeue_elem(nf->completions, &ev,
						   sizeof(ev)) == 0)
		out[n++] = (struct rn_notify_completion){ .cookie = ev.cookie,
							  .status = ev.status };
	return n;
}
