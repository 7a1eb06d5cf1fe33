/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake's frames: what each frame means in each phase of a
 * connection, and the frames it sends. With a secret, the challenge
 * exchange comes first: the caller sends CHALLENGE, the callee ANSWER with
 * its proof, the caller PROOF with its own (docs/protocol.md,
 * "Authentication"); nothing else is read before it. Then the caller sends
 * HELLO (its QPs in INIT); the callee creates and connects its QPs and answers ACCEPT; the
 * caller connects its QPs and sends READY. A frame that makes no sense in
 * the connection's phase closes the connection, with one log line. What a
 * frame means for an endpoint is the caller's to decide (ep_handshake.c):
 * this layer only names it.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "handshake_pvt.h"
#include "log_pvt.h"
#include "rn_plane.h"

static_assert(RN_NIC_TOKEN_SIZE == RN_PROTO_TOKEN_SIZE,
	      "a sim wire token is what the handshake derives");

struct rn_ep_qp_info
rn_handshake_qp_info(const struct rn_proto_qp *q)
{
	return (struct rn_ep_qp_info){
		.kind = q->kind, .qpn = q->qpn, .psn = q->psn,
		.recv_depth = q->recv_depth, .slot_size = q->slot_size,
		.credits = q->credits,
	};
}

struct rn_proto_qp
rn_handshake_qp_record(const struct rn_ep_qp_info *q)
{
	return (struct rn_proto_qp){
		.kind = q->kind, .qpn = q->qpn, .psn = q->psn,
		.recv_depth = q->recv_depth, .slot_size = q->slot_size,
		.credits = q->credits,
	};
}

void
rn_handshake_side(const struct rn_proto_hello *h, struct rn_ep_side *s)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", h->name);
	s->session_id = h->session_id;
	s->generation = h->generation;
	memcpy(s->addr.gid, h->gid, sizeof(s->addr.gid));
	s->addr.lid = h->lid;
	s->addr.mtu = h->mtu;
	s->n_qps = h->n_qps;
	s->probe_addr = h->probe_addr;
	s->probe_rkey = h->probe_rkey;
	for (uint8_t i = 0; i < h->n_qps; i++)
		s->qps[i] = rn_handshake_qp_info(&h->qps[i]);
}

void
rn_handshake_send_hello(struct rn_conn *c, uint8_t type,
			const struct rn_ep_side *me, bool notify_on)
{
	struct rn_proto_hello h = {
		.session_id = me->session_id,
		.generation = me->generation,
		.caps = RN_CAP_TCP_FALLBACK |
			(notify_on ? RN_CAP_NOTIFY_ENABLED : 0),
		.lid = me->addr.lid,
		.mtu = me->addr.mtu,
		.n_qps = (uint8_t)me->n_qps,
		.probe_addr = me->probe_addr,
		.probe_rkey = me->probe_rkey,
	};
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_HELLO_MAX];

	snprintf(h.name, sizeof(h.name), "%s", me->name);
	memcpy(h.gid, me->addr.gid, sizeof(h.gid));
	for (uint32_t i = 0; i < me->n_qps; i++) {
		const struct rn_ep_qp_info *q = &me->qps[i];

		h.qps[i] = rn_handshake_qp_record(q);
		if (q->kind == RN_EP_QP_NOTIFY)
			h.caps |= RN_CAP_NATIVE_NOTIFY;
	}
	rn_conn_send(c, frame, rn_proto_encode_hello(frame, sizeof(frame), type, &h));
	if (c->dead)
		return;
	rn_conn_enter(c, type == RN_PROTO_HELLO ? RN_CONN_WAIT_ACCEPT :
					       RN_CONN_WAIT_READY);
}

void
rn_handshake_send_ready(struct rn_conn *c, uint32_t generation)
{
	uint8_t frame[RN_PROTO_HEADER_SIZE + 4];

	rn_conn_send(c, frame, rn_proto_encode_ready(frame, sizeof(frame),
						     generation));
	if (!c->dead)
		c->phase = RN_CONN_ESTABLISHED;
}

bool
rn_handshake_log_allowed(char *more, size_t len)
{
	uint64_t suppressed;

	if (!rn_plane_log_refusal(rn_now_ms(), &suppressed))
		return false;
	more[0] = '\0';
	if (suppressed != 0)
		snprintf(more, len, " [and %" PRIu64 " more not logged]",
			 suppressed);
	return true;
}

void
rn_handshake_refuse(struct rn_conn *c, uint16_t code, const char *text)
{
	char more[48];

	if (rn_handshake_log_allowed(more, sizeof(more)))
		RN_PLANE_LOG(NOTICE, "refused %s: %s (%s)%s", c->peer, text,
			     rn_proto_refusal_name(code), more);
	rn_conn_send_refuse(c, code, text);
	rn_conn_close(c);
}

bool
rn_handshake_has_data_qp(const struct rn_proto_hello *h)
{
	for (uint8_t i = 0; i < h->n_qps; i++)
		if (h->qps[i].kind == RN_PROTO_QP_DATA)
			return true;
	return false;
}

static bool
caps_understood(struct rn_conn *c, uint32_t caps)
{
	char text[96];

	if ((caps & ~RN_CAP_KNOWN) == 0)
		return true;
	snprintf(text, sizeof(text), "capabilities 0x%x not understood; this "
		 "side knows 0x%x", caps, RN_CAP_KNOWN);
	rn_handshake_refuse(c, RN_REFUSE_CAPABILITY, text);
	return false;
}

static void
out_of_order(struct rn_conn *c, uint8_t type)
{
	char why[96];

	snprintf(why, sizeof(why), "bad frame: %s out of order",
		 rn_proto_type_name(type));
	rn_conn_fail(c, why);
}

/* The exchange on c as both sides see it. */
static struct rn_proto_transcript
transcript(const struct rn_conn *c, const struct rn_hs_auth *auth)
{
	const struct rn_conn_auth *a = &c->auth;

	if (c->outbound)
		return (struct rn_proto_transcript){
			.caller = auth->name, .callee = a->peer_name,
			.caller_session = auth->session_id,
			.callee_session = a->peer_session,
			.caller_nonce = a->nonce_mine,
			.callee_nonce = a->nonce_peer,
		};
	return (struct rn_proto_transcript){
		.caller = a->peer_name, .callee = auth->name,
		.caller_session = a->peer_session,
		.callee_session = auth->session_id,
		.caller_nonce = a->nonce_peer, .callee_nonce = a->nonce_mine,
	};
}

int
rn_handshake_wire_token(const struct rn_conn *c, const struct rn_hs_auth *auth,
			uint8_t token[RN_NIC_TOKEN_SIZE])
{
	struct rn_proto_transcript t = transcript(c, auth);
	uint8_t k = c->auth.key;

	memset(token, 0, RN_NIC_TOKEN_SIZE);
	if (!rn_hs_auth_on(auth))
		return 0;
	if (!c->auth.done)
		return -EPERM;
	return rn_proto_wire_token(auth->key[k], auth->key_len[k], &t, token) ==
	       0 ? 0 : -EIO;
}

int
rn_handshake_random_token(uint8_t token[RN_NIC_TOKEN_SIZE])
{
	uint8_t nonce[RN_PROTO_NONCE_SIZE];

	if (rn_proto_nonce(nonce) != 0)
		return -EIO;
	memcpy(token, nonce, RN_NIC_TOKEN_SIZE);
	return 0;
}

/* Which of our secrets the peer's proof (of role) was made with: 0 or 1,
 * or -1 for neither. Both are always tried, so the time taken does not
 * tell which one matched. */
static int
proof_key(const struct rn_conn *c, const struct rn_hs_auth *auth,
	  enum rn_proto_role role, const uint8_t *proof)
{
	struct rn_proto_transcript t = transcript(c, auth);
	uint8_t mac[RN_PROTO_MAC_SIZE];
	int found = -1;

	for (int k = 1; k >= 0; k--)
		if (auth->key_len[k] != 0 &&
		    rn_proto_proof(auth->key[k], auth->key_len[k], role, &t,
				   mac) == 0 &&
		    rn_proto_proof_equal(mac, proof))
			found = k;
	return found;
}

/* Send CHALLENGE, ANSWER or PROOF (type); false when c failed. */
static bool
send_auth(struct rn_conn *c, const struct rn_hs_auth *auth, uint8_t type)
{
	struct rn_proto_auth a = { .session_id = auth->session_id };
	struct rn_proto_transcript t = transcript(c, auth);
	uint8_t frame[RN_PROTO_HEADER_SIZE + RN_PROTO_AUTH_MAX];
	uint8_t k = c->auth.key;

	snprintf(a.name, sizeof(a.name), "%s", auth->name);
	memcpy(a.nonce, c->auth.nonce_mine, sizeof(a.nonce));
	if (type != RN_PROTO_CHALLENGE &&
	    rn_proto_proof(auth->key[k], auth->key_len[k],
			   c->outbound ? RN_PROTO_ROLE_CALLER :
					 RN_PROTO_ROLE_CALLEE, &t, a.proof) != 0) {
		rn_conn_fail(c, "authentication: libcrypto failed");
		return false;
	}
	rn_conn_send(c, frame, rn_proto_encode_auth(frame, sizeof(frame), type,
						    &a));
	return !c->dead;
}

void
rn_handshake_challenge(struct rn_conn *c, const struct rn_hs_auth *auth,
		       const char *callee)
{
	memset(&c->auth, 0, sizeof(c->auth));
	snprintf(c->auth.peer_name, sizeof(c->auth.peer_name), "%s", callee);
	if (rn_proto_nonce(c->auth.nonce_mine) != 0) {
		rn_conn_fail(c, "authentication: no random bytes");
		return;
	}
	if (send_auth(c, auth, RN_PROTO_CHALLENGE))
		rn_conn_enter(c, RN_CONN_WAIT_ANSWER);
}

/* A caller's CHALLENGE: answer it with our nonce and our proof. */
static void
on_challenge(struct rn_conn *c, const struct rn_proto_auth *a,
	     const struct rn_hs_auth *auth)
{
	if (!rn_hs_auth_on(auth)) {
		rn_handshake_refuse(c, RN_REFUSE_AUTH, "this node has no secret "
				    "([control] secret_file)");
		return;
	}
	memset(&c->auth, 0, sizeof(c->auth));
	snprintf(c->auth.peer_name, sizeof(c->auth.peer_name), "%s", a->name);
	c->auth.peer_session = a->session_id;
	memcpy(c->auth.nonce_peer, a->nonce, sizeof(a->nonce));
	if (rn_proto_nonce(c->auth.nonce_mine) != 0) {
		rn_conn_fail(c, "authentication: no random bytes");
		return;
	}
	if (send_auth(c, auth, RN_PROTO_ANSWER))
		rn_conn_enter(c, RN_CONN_WAIT_PROOF);
}

/* The caller's PROOF: it names this exchange's nonces, or c closes. */
static void
on_proof(struct rn_conn *c, const struct rn_proto_auth *a,
	 const struct rn_hs_auth *auth)
{
	int k = proof_key(c, auth, RN_PROTO_ROLE_CALLER, a->proof);

	if (k < 0) {
		rn_handshake_refuse(c, RN_REFUSE_AUTH, "the caller's proof does "
				    "not check: another secret, or a replay");
		return;
	}
	c->auth.key = (uint8_t)k;
	c->auth.done = true;
	rn_conn_enter(c, RN_CONN_WAIT_HELLO);
}

/* Our call failed to authenticate the callee: say so, and fail. */
static void
auth_failed(struct rn_conn *c, const char *why)
{
	rn_conn_send_refuse(c, RN_REFUSE_AUTH, why);
	rn_conn_fail(c, why);
}

/* The callee's ANSWER to our CHALLENGE: check its proof, send ours. */
static enum rn_handshake_news
on_answer(struct rn_conn *c, const struct rn_proto_auth *a,
	  const struct rn_hs_auth *auth)
{
	char why[128];
	int k;

	if (strcmp(a->name, c->auth.peer_name) != 0) {
		snprintf(why, sizeof(why), "authentication: ANSWER from '%s', "
			 "not the node '%s' called", a->name,
			 c->auth.peer_name);
		auth_failed(c, why);
		return RN_HS_NONE;
	}
	c->auth.peer_session = a->session_id;
	memcpy(c->auth.nonce_peer, a->nonce, sizeof(a->nonce));
	k = proof_key(c, auth, RN_PROTO_ROLE_CALLEE, a->proof);
	if (k < 0) {
		auth_failed(c, "authentication: the callee's proof does not "
			    "check (another secret?)");
		return RN_HS_NONE;
	}
	c->auth.key = (uint8_t)k;
	if (!send_auth(c, auth, RN_PROTO_PROOF))
		return RN_HS_NONE;
	c->auth.done = true;
	rn_conn_enter(c, RN_CONN_TCP_UP);
	return RN_HS_AUTHED;
}

enum rn_handshake_news
rn_handshake_frame(struct rn_conn *c, const struct rn_proto_frame *f,
		   bool owner, uint32_t peer_generation,
		   const struct rn_hs_auth *auth)
{
	/* Before the peer proved the secret, a frame of ours to answer is all
	 * it may send: nothing it says may touch the endpoint. */
	bool proven = c->auth.done || !rn_hs_auth_on(auth);

	if (f->type == RN_PROTO_HEARTBEAT && c->ep != NULL && proven)
		return RN_HS_NONE;   /* liveness only: last_rx_ms is updated */
	switch (c->phase) {
	case RN_CONN_WAIT_HELLO:
		if (f->type == RN_PROTO_CHALLENGE && !c->auth.done) {
			on_challenge(c, &f->auth, auth);
			return RN_HS_NONE;
		}
		if (f->type != RN_PROTO_HELLO)
			break;
		if (rn_hs_auth_on(auth) && !c->auth.done) {
			rn_handshake_refuse(c, RN_REFUSE_AUTH, "this node "
					    "requires authentication: "
					    "CHALLENGE first");
			return RN_HS_NONE;
		}
		if (!caps_understood(c, f->hello.caps))
			return RN_HS_NONE;
		if (!rn_handshake_has_data_qp(&f->hello)) {
			rn_handshake_refuse(c, RN_REFUSE_PROTOCOL, "no data QP");
			return RN_HS_NONE;
		}
		return RN_HS_HELLO;
	case RN_CONN_WAIT_PROOF:
		if (f->type != RN_PROTO_PROOF)
			break;
		on_proof(c, &f->auth, auth);
		return RN_HS_NONE;
	case RN_CONN_WAIT_ANSWER:
		if (f->type == RN_PROTO_ANSWER)
			return on_answer(c, &f->auth, auth);
		if (f->type == RN_PROTO_REFUSE) {
			/* Unproven: a plain failure, never a refusal the
			 * endpoint acts on (DUPLICATE retries at once). */
			rn_conn_fail(c, "the callee refused our CHALLENGE");
			return RN_HS_NONE;
		}
		break;
	case RN_CONN_WAIT_ACCEPT:
		if (f->type == RN_PROTO_ACCEPT)
			return RN_HS_ACCEPT;
		if (f->type == RN_PROTO_REFUSE)
			return RN_HS_REFUSED;
		break;
	case RN_CONN_WAIT_READY:
		if (f->type == RN_PROTO_READY &&
		    f->ready_generation == peer_generation) {
			c->phase = RN_CONN_ESTABLISHED;
			return RN_HS_READY;
		}
		break;
	case RN_CONN_ESTABLISHED:
		if (f->type == RN_PROTO_CLOSE)
			return RN_HS_CLOSE;
		if (f->type == RN_PROTO_NOTIFY)
			return RN_HS_NOTIFY;
		if (f->type == RN_PROTO_NOTIFY_QP)
			return RN_HS_NOTIFY_QP;
		/* Established: with a secret, both proofs were checked. */
		if (f->type == RN_PROTO_DESC_REQUEST)
			return RN_HS_DESC_REQUEST;
		if (f->type == RN_PROTO_DESC_ANSWER)
			return RN_HS_DESC_ANSWER;
		break;
	default:
		break;
	}
	if (f->type == RN_PROTO_CLOSE && owner && proven)
		return RN_HS_CLOSE;
	out_of_order(c, f->type);
	return RN_HS_NONE;
}
