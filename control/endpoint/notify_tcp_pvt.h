/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_TCP_PVT_H
#define RN_NOTIFY_TCP_PVT_H

/* The TCP fallback (notify_tcp.c). */

#include <stdbool.h>

#include "rn_proto.h"

struct rn_plane;
struct rn_endpoint;

/* Send a struct rn_notify_request over its endpoint's connection (or to
 * this node itself), and answer it. */
void rn_notify_tcp_send(struct rn_plane *pl, void *request);
/* A NOTIFY frame from ep's peer, to the application's ring. */
void rn_notify_tcp_receive(struct rn_plane *pl, struct rn_endpoint *ep,
			   const struct rn_proto_frame *f);
/* No room for one more delivery: hold NOTIFY frames back, not drop them. */
bool rn_notify_tcp_ring_full(const struct rn_plane *pl);

#endif /* RN_NOTIFY_TCP_PVT_H */
