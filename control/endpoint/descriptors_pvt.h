/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_DESCRIPTORS_PVT_H
#define RN_DESCRIPTORS_PVT_H

/*
 * Descriptor requests (descriptors.c): a peer's DESC_REQUEST answered from
 * the descriptor source (rn_plane_set_descriptors()), on an authenticated,
 * established connection only; and this node's own requests
 * (rn_plane_desc_fetch()), sent on the endpoint's connection once it is
 * established, matched to their DESC_ANSWER by id. docs/protocol.md,
 * "Descriptor requests".
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rn_plane.h"
#include "rn_proto.h"

struct rn_desc_fetch;
struct rn_plane;
struct rn_endpoint;
struct rn_conn;

struct rn_desc_state {
	rn_plane_desc_source source;  /* NULL: none served */
	void *source_arg;
	rn_plane_desc_source client_source;   /* after source: clients' */
	void *client_source_arg;
	pthread_mutex_t lock;         /* submitted and closed, from any thread */
	struct rn_desc_fetch *submitted;
	bool closed;                  /* rn_desc_fini(): no more taken */
	struct rn_desc_fetch *pending; /* the control thread's */
	uint32_t next_id;
};

int rn_desc_init(struct rn_plane *pl);
/* Every request not answered ends -ESHUTDOWN; control thread, at close. */
void rn_desc_fini(struct rn_plane *pl);
/* Send what waits to be sent, end what timed out or lost its endpoint. */
void rn_desc_tick(struct rn_plane *pl);
/* A DESC_REQUEST on c (established): answer it. */
void rn_desc_serve(struct rn_plane *pl, struct rn_conn *c,
		   const struct rn_proto_frame *f);
/* A DESC_ANSWER on ep's connection. */
void rn_desc_answered(struct rn_plane *pl, struct rn_endpoint *ep,
		      const struct rn_proto_frame *f);

#endif /* RN_DESCRIPTORS_PVT_H */
