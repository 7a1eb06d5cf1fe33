/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CHANNEL_ADD_PVT_H
#define RN_CHANNEL_ADD_PVT_H

#include <stdbool.h>
#include <stdint.h>

#include "rn_proto.h"

/*
 * Channel add: a native channel added to a connected endpoint after its
 * handshake (channel_add.c). One at a time per endpoint.
 */
enum rn_chan_add_state {
	RN_CHAN_ADD_IDLE = 0,         /* none being added */
	RN_CHAN_ADD_OPENING,          /* our lcore makes our notify QP */
	RN_CHAN_ADD_OFFERED,          /* OFFER sent, waiting for the answer */
	RN_CHAN_ADD_CONNECTING,       /* our lcore connects it to the peer's */
	RN_CHAN_ADD_ACCEPTED,         /* ACCEPT sent, waiting for READY */
	RN_CHAN_ADD_N_STATES,
};

struct rn_chan_add {
	enum rn_chan_add_state state;
	bool ours;                    /* we offered (else the peer did) */
	uint16_t offer;               /* ours, or the peer's we answer */
	uint64_t deadline_ms;         /* the peer's answer or READY by then */
};

struct rn_plane;
struct rn_endpoint;
struct rn_lcore_event;

/* A bay is free on that lcore; after_drop: it is the one of an offer that
 * a peer refused or did not answer. */
void rn_chan_add_bay_free(struct rn_plane *pl, uint16_t lcore_id,
			  bool after_drop);
/* NOTIFY_OPENED, NOTIFY_CONNECTED or NOTIFY_FAILED for ep. */
void rn_chan_add_event(struct rn_plane *pl, struct rn_endpoint *ep,
		       const struct rn_lcore_event *ev);
/* A NOTIFY_QP frame from ep's peer. */
void rn_chan_add_frame(struct rn_plane *pl, struct rn_endpoint *ep,
		       const struct rn_proto_frame *f);
/* A step the peer did not answer in connect_timeout_ms. */
void rn_chan_add_check(struct rn_plane *pl, struct rn_endpoint *ep,
		       uint64_t now);

#endif /* RN_CHANNEL_ADD_PVT_H */
