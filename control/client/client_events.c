/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer events to clients: the plane calls rn_client_peer_event() on the
 * control thread when an endpoint goes down, comes back, comes back as a
 * new incarnation of its peer or is removed; every attached client gets
 * it on its events ring (the control thread is that ring's only
 * producer) and is woken if it waits. A full ring drops the event and
 * counts it: a client that does not read its events must not hold the
 * daemon up. O(clients) per event.
 *
 * The ring's header lies in memory the client writes: this thread writes
 * at its own position, within the shape it made (rn_client_ring_end.h),
 * so a client that overwrites the header garbles only its own events.
 * One that changed the ring's shape is detached all the same, and says so
 * in the log: it has broken its side of the ring.
 */
#include <string.h>

#include "client_pvt.h"

void
rn_client_peer_event(void *arg, uint32_t ep_index, int event)
{
	struct rn_client_server *s = arg;
	struct rn_client_event ev = { .type = (uint32_t)event };
	char name[RN_EP_NAME_SIZE];
	struct rn_client_conn *c;

	rn_plane_name(s->plane, ep_index, name);
	memcpy(ev.node, name, sizeof(ev.node));
	ev.node[sizeof(ev.node) - 1] = '\0';
	TAILQ_FOREACH(c, &s->conns, next) {
		struct rte_ring *r;
		bool dropped;

		if (c->state != RN_CONN_ATTACHED)
			continue;
		r = c->events_ring.r;
		if (__atomic_load_n(&r->size, __ATOMIC_RELAXED) !=
			    c->events_ring.mask + 1 ||
		    __atomic_load_n(&r->mask, __ATOMIC_RELAXED) !=
			    c->events_ring.mask) {
			RN_CLIENT_LOG(WARNING, "client %u (agent '%.*s'): its "
				      "events ring was overwritten: detached",
				      c->link.client_id,
				      (int)c->link.agent_len, c->link.agent);
			rn_client_conn_close(s, c);
			continue;
		}
		dropped = !rn_client_ring_end_room(&c->events_ring);
		if (!dropped) {
			memcpy(rn_client_ring_end_at(&c->events_ring, 0,
						     sizeof(ev)),
			       &ev, sizeof(ev));
			rn_client_ring_end_put(&c->events_ring);
		}
		pthread_mutex_lock(&s->lock);
		if (dropped)
			c->info.events_dropped++;
		else
			c->info.events++;
		pthread_mutex_unlock(&s->lock);
		if (!dropped)
			rn_client_link_wake(&c->link);
	}
}
