/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_HANDSHAKE_PVT_H
#define RN_HANDSHAKE_PVT_H

/*
 * The handshake's frames (handshake.c), over the transport (conn_pvt.h):
 * which frame is news in which phase, and the frames a handshake sends.
 * It knows connections and wire records, not endpoints: the endpoint layer
 * calls down into it and acts on what it says a frame is.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn_pvt.h"
#include "rn_lcore_ep.h"
#include "rn_proto.h"

/*
 * What this node proves with, and to whom: with no secret (key_len[0] 0)
 * there is no challenge exchange, and HELLO comes first.
 */
struct rn_hs_auth {
	const char *name;             /* this node's */
	uint64_t session_id;          /* this process's */
	const uint8_t *key[2];        /* current secret, next one */
	uint32_t key_len[2];          /* 0: none */
};

static inline bool
rn_hs_auth_on(const struct rn_hs_auth *a)
{
	return a->key_len[0] != 0;
}

/* What a frame that came in on a connection is, in its phase. */
enum rn_handshake_news {
	RN_HS_NONE,       /* nothing more to do: a heartbeat, or the frame
			   * was refused and the connection closed or failed */
	RN_HS_AUTHED,     /* the callee proved the secret, and PROOF went:
			   * our QPs may be made, HELLO sent */
	RN_HS_HELLO,      /* a caller's HELLO: its capabilities understood,
			   * a data QP in it, its sender authenticated when
			   * auth is on (c->auth names it) */
	RN_HS_ACCEPT,     /* the answer to our HELLO */
	RN_HS_REFUSED,    /* REFUSE of our HELLO */
	RN_HS_READY,      /* READY of the incarnation that called: the
			   * connection is established */
	RN_HS_CLOSE,      /* the peer closed its endpoint on purpose */
	RN_HS_NOTIFY,     /* a notification over TCP */
	RN_HS_NOTIFY_QP,  /* a channel-add step */
	RN_HS_DESC_REQUEST, /* a peer's descriptor request */
	RN_HS_DESC_ANSWER,  /* the answer to one of ours */
};

/*
 * What f means on c. owner: c is its endpoint's connection (a CLOSE then
 * counts in any phase); peer_generation: the incarnation whose READY
 * establishes c.
 */
enum rn_handshake_news rn_handshake_frame(struct rn_conn *c,
					  const struct rn_proto_frame *f,
					  bool owner, uint32_t peer_generation,
					  const struct rn_hs_auth *auth);

/* Our call's TCP connection is up, auth on: send CHALLENGE to the node
 * callee; the answer comes as RN_HS_AUTHED. */
void rn_handshake_challenge(struct rn_conn *c, const struct rn_hs_auth *auth,
			    const char *callee);

/* Send HELLO or ACCEPT (type) describing me; notify_on: [notify] enabled.
 * c moves on to wait for the answer. */
void rn_handshake_send_hello(struct rn_conn *c, uint8_t type,
			     const struct rn_ep_side *me, bool notify_on);
/* Send READY for our incarnation generation: c is established. */
void rn_handshake_send_ready(struct rn_conn *c, uint32_t generation);
/*
 * Whether a line about a caller without an endpoint may be logged now
 * (rn_plane_log_refusal); if so, more is "" or says how many were not.
 */
bool rn_handshake_log_allowed(char *more, size_t len);
/* Refuse and close a connection that has no endpoint of its own. */
void rn_handshake_refuse(struct rn_conn *c, uint16_t code, const char *text);
/*
 * The sim wire token of c's exchange (rn_proto_wire_token()), once both
 * proofs checked; all zeros without a secret. Returns 0 or -EIO.
 */
int rn_handshake_wire_token(const struct rn_conn *c,
			    const struct rn_hs_auth *auth,
			    uint8_t token[RN_NIC_TOKEN_SIZE]);
/* A random token, for an endpoint whose QPs are their own peers. */
int rn_handshake_random_token(uint8_t token[RN_NIC_TOKEN_SIZE]);
/* Every endpoint needs a data QP: the probe, and RDMA, run over QP 0. */
bool rn_handshake_has_data_qp(const struct rn_proto_hello *h);

/* A QP record of the protocol, and the lcore's view of it (the kinds are
 * numbered alike). */
struct rn_ep_qp_info rn_handshake_qp_info(const struct rn_proto_qp *q);
struct rn_proto_qp rn_handshake_qp_record(const struct rn_ep_qp_info *q);
/* The side a HELLO or ACCEPT describes. */
void rn_handshake_side(const struct rn_proto_hello *h, struct rn_ep_side *s);

#endif /* RN_HANDSHAKE_PVT_H */
