/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CONN_PVT_H
#define RN_CONN_PVT_H

/*
 * The transport (conn.c): control connections, their non-blocking connect,
 * frame I/O and bounded write queue. It knows nothing above it: what
 * happens on a connection comes up through struct rn_conn_ops, and the
 * layers above decide what it means.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "rn_control.h"
#include "rn_proto.h"

#define RN_CONN_RX_MAX (RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD)
#define RN_CONN_TX_MAX (4u << 20)   /* a peer that stops reading: cut off */
/*
 * Inbound connections in their handshake (no endpoint yet: before their
 * HELLO, or before their proof), at most: in all, and from one address.
 * A caller from an address that has RN_CONN_MAX_PENDING_PER_ADDRESS is
 * turned away at once; when RN_CONN_MAX_PENDING are reached, the oldest
 * of the address with the most goes. So strangers on a few addresses
 * cannot keep a peer on another from calling, and the work and memory an
 * unauthenticated caller costs stay bounded.
 */
#define RN_CONN_MAX_PENDING 64
#define RN_CONN_MAX_PENDING_PER_ADDRESS 8

/*
 * Where a connection is in its handshake (handshake.c moves it on). The
 * transport itself tells only TCP_CONNECTING from the rest; each phase has
 * the pool's timeout_ms to be left (timers.c).
 */
enum rn_conn_phase {
	RN_CONN_TCP_CONNECTING,  /* outbound: connect() in progress */
	RN_CONN_WAIT_ANSWER,     /* outbound: CHALLENGE sent */
	RN_CONN_TCP_UP,          /* outbound: connected (and the callee
				  * proved the secret), QPs not open yet */
	RN_CONN_WAIT_HELLO,      /* inbound: accepted (or the caller proved
				  * the secret), HELLO not in yet */
	RN_CONN_WAIT_PROOF,      /* inbound: ANSWER sent */
	RN_CONN_SERVING,         /* inbound: HELLO in, our QPs on their way */
	RN_CONN_WAIT_ACCEPT,     /* outbound: HELLO sent */
	RN_CONN_CONNECTING_QPS,  /* outbound: ACCEPT in, QPs to RTS */
	RN_CONN_WAIT_READY,      /* inbound: ACCEPT sent */
	RN_CONN_ESTABLISHED,
};

/*
 * The challenge exchange on one connection (handshake.c's; the transport
 * never reads it): what the peer said, and the nonce this side sent.
 */
struct rn_conn_auth {
	bool done;                    /* both proofs checked */
	uint8_t key;                  /* the secret the peer proved: 0 or 1 */
	char peer_name[RN_PROTO_NAME_MAX + 1];
	uint64_t peer_session;
	uint8_t nonce_mine[RN_PROTO_NONCE_SIZE];
	uint8_t nonce_peer[RN_PROTO_NONCE_SIZE];
};

struct rn_conn;

/* News from the transport, to the layer above. */
struct rn_conn_ops {
	/* A whole frame came in. Returns 0 when taken, or -EAGAIN to keep
	 * it: the connection is then not read (TCP's flow control slows the
	 * peer) until rn_conn_resume() finds it taken. */
	int (*frame)(struct rn_conn *c, const struct rn_proto_frame *f);
	/* An outbound connect() completed. */
	void (*connected)(struct rn_conn *c);
	/* c failed (why): the owner closes it, with its endpoint or alone. */
	void (*failed)(struct rn_conn *c, const char *why);
};

/* Every connection of a plane. */
struct rn_conn_pool {
	struct rn_control *ctl;
	uint32_t timeout_ms;          /* each handshake phase's budget */
	const struct rn_conn_ops *ops;
	struct rn_conn *live;
	struct rn_conn *dead;         /* closed; freed by rn_conn_reap() */
	unsigned int n_live;
};

struct rn_endpoint;

struct rn_conn {
	struct rn_conn_pool *pool;
	struct rn_endpoint *ep;       /* its owner's: NULL until a HELLO
				       * names the peer; never read here */
	int fd;
	bool outbound;
	bool dead;                    /* closed; freed on a tick or an accept */
	enum rn_conn_phase phase;
	char peer[64];                /* "address port", for log lines */
	struct in6_addr peer_ip;      /* IPv4 ones mapped: ::ffff:a.b.c.d */
	uint64_t accepted_ms;         /* inbound: when, for the pending cap */
	uint64_t deadline_ms;         /* of the current handshake phase */
	uint64_t last_rx_ms, last_tx_ms;
	uint8_t *rx;
	size_t rx_len;
	uint8_t *tx;
	size_t tx_len, tx_off;
	bool want_out;                /* EPOLLOUT armed */
	bool rx_held;                 /* a frame waits in rx, not taken yet
				       * (rn_conn_ops.frame): not reading */
	struct rn_conn_auth auth;
	struct rn_conn *next;         /* pool->live or pool->dead */
};

/* Call address port; c->ep is for the caller to set. Returns 0, -EINVAL
 * (not a numeric address), -ENOMEM or -errno of socket() or connect(). */
int rn_conn_connect(struct rn_conn_pool *pool, const char *address,
		    uint16_t port, struct rn_conn **out);
/* Take an accepted fd, and read what it sent already (the layer above
 * hears of it, and may close it). NULL (fd closed) when out of memory, or
 * when the caller's address has its RN_CONN_MAX_PENDING_PER_ADDRESS
 * handshakes in progress already (one rate-limited log line says so). */
struct rn_conn *rn_conn_accepted(struct rn_conn_pool *pool, int fd,
				 const struct sockaddr *sa, socklen_t len);
/* Queue a frame; a queue over RN_CONN_TX_MAX fails the connection. */
void rn_conn_send(struct rn_conn *c, const uint8_t *frame, size_t len);
/* Send REFUSE now, as far as the socket takes it. */
void rn_conn_send_refuse(struct rn_conn *c, uint16_t code, const char *text);
/* Move c to phase, with the pool's timeout_ms to get through it. */
void rn_conn_enter(struct rn_conn *c, enum rn_conn_phase phase);
/* Declare c failed: the owner hears of it (rn_conn_ops.failed). */
void rn_conn_fail(struct rn_conn *c, const char *why);
/* Close and detach; the memory goes at rn_conn_reap(). */
void rn_conn_close(struct rn_conn *c);
void rn_conn_reap(struct rn_conn_pool *pool);
/* Bytes queued to send on c. */
size_t rn_conn_queued(const struct rn_conn *c);
/* Offer a held frame again; when taken, read on. */
void rn_conn_resume(struct rn_conn *c);
/* Take the frames c has received already, as if it were readable now. */
void rn_conn_read_pending(struct rn_conn *c);
/*
 * Whether c comes from address, however either is written (0:0::1 and ::1
 * are one address, and so are 10.0.0.1 and ::ffff:10.0.0.1).
 */
bool rn_conn_from_address(const struct rn_conn *c, const char *address);
/* The IPv4 address (network order) c's peer is at; -EAFNOSUPPORT when it
 * is an IPv6 one. */
int rn_conn_peer_ipv4(const struct rn_conn *c, uint8_t out[4]);

#endif /* RN_CONN_PVT_H */
