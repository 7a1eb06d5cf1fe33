/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_TCP_PVT_H
#define RN_NOTIFY_TCP_PVT_H

/* The TCP fallback (notify_tcp.c). */

#include <stdbool.h>
#include <stdint.h>

#include "rn_notify.h"
#include "rn_notify_engine.h"
#include "rn_proto.h"

struct rn_plane;
struct rn_endpoint;

/*
 * What notifications that came over TCP may hold until the application has
 * taken them (polled, then released on its next poll), so that one peer
 * cannot fill the queue for the others: a peer at its quota is not read
 * (TCP flow control slows that peer alone) and the total is bounded.
 * Frames are counted by rn_notify_frame_size().
 */
#define RN_NOTIFY_TCP_PEER_ENTRIES (RN_NOTIFY_RING_SIZE / 4)
#define RN_NOTIFY_TCP_PEER_BYTES (8u << 20)
#define RN_NOTIFY_TCP_BYTES (4 * RN_NOTIFY_TCP_PEER_BYTES)

/* A frame of the largest notification fits any peer's quota. */
_Static_assert(RN_NOTIFY_MAX_PAYLOAD + RN_NOTIFY_OVERHEAD <=
	       RN_NOTIFY_TCP_PEER_BYTES, "a peer's byte quota");

/* What each endpoint index holds, written by the control thread (taken)
 * and the polling thread (given back), hence atomics. */
struct rn_notify_tcp_quota {
	uint32_t entries[RN_MAX_ENDPOINTS];
	uint64_t bytes[RN_MAX_ENDPOINTS];
	uint64_t total_bytes;
};

/* Send a struct rn_notify_request over its endpoint's connection (or to
 * this node itself), and answer it. */
void rn_notify_tcp_send(struct rn_plane *pl, void *request);
/* A NOTIFY frame from ep's peer, to the application's ring. */
void rn_notify_tcp_receive(struct rn_plane *pl, struct rn_endpoint *ep,
			   const struct rn_proto_frame *f);
/* No room for f from ep's peer (the ring full, or the peer at its quota):
 * hold NOTIFY frames back, not drop them. */
bool rn_notify_tcp_held(const struct rn_plane *pl,
			const struct rn_endpoint *ep,
			const struct rn_proto_frame *f);

#endif /* RN_NOTIFY_TCP_PVT_H */
