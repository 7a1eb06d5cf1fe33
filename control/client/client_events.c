/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer events to clients: the plane calls rn_client_peer_event() on the
 * control thread when an endpoint goes down, comes back, comes back as a
 * new incarnation of its peer or is removed; every attached client gets
 * it on its events ring (the control thread is that ring's only
 * producer) and is woken if it waits. A full ring drops the event and
 * counts it: a client that does not read its events must not hold the
 * daemon up. O(clients) per event.
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
		bool dropped;

		if (c->state != RN_CONN_ATTACHED)
			continue;
		dropped = rte_ring_sp_enqueue_elem(
				rn_client_events_ring(c->link.region), &ev,
				sizeof(ev)) != 0;
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
