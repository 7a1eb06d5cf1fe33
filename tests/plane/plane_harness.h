/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef PLANE_HARNESS_H
#define PLANE_HARNESS_H

/*
 * A control plane under test, faked only at its edges: one worker lcore
 * whose command ring a fake worker drains (answering on the event ring as
 * the real one would, or holding answers back on request), and a peer that
 * is the test itself on a real TCP socket on loopback, speaking the wire
 * protocol frame by frame. The plane runs on its own control thread; the
 * test thread sees it through its thread-safe snapshot, the commands the
 * fake worker took, and the frames on the socket. Its names start rn_ph_
 * (plane harness), as every library symbol carries rn_.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "rn_lcore.h"
#include "rn_lcore_ep.h"
#include "rn_plane.h"
#include "rn_proto.h"

#define H_MAX_CMDS 4096
#define H_PEER_GENERATION 7        /* the peer's incarnation */
#define H_PEER_NAME "peer"
#define H_PEER_SESSION 0x5e55      /* the peer's session id by default */
#define H_WAIT_MS 3000             /* a step the plane must take by then */
#define H_TCP_IN_ROOM 3            /* deliveries tcp_in holds (ring of 4) */

struct rn_ph_plane {
	struct rn_config cfg;
	struct rn_control *ctl;
	struct rn_lcore lc;
	struct rn_lcore *workers[1];
	struct rte_ring *events;       /* fake worker -> control thread */
	struct rn_plane *pl;
	pthread_t thread;
	bool stopping;                 /* set by the test thread */
	bool shut;                     /* rn_plane_shutdown() called */
	/* The commands the fake worker took, in order (the control thread
	 * writes, then release-stores n_cmds). */
	uint32_t cmds[H_MAX_CMDS];
	unsigned int n_cmds;
	struct rn_ep_request *last_req;   /* of the last EP_OPEN */
	uint32_t last_peer_tag;        /* its peer_tag (release-stored) */
	/* A call the control thread makes on its next turn (rn_ph_call). */
	void (*call)(struct rn_ph_plane *h, void *arg);
	void *call_arg;
	/* Answers held back: a command of a type whose hold flag is set is
	 * answered once the test clears it. */
	bool hold[RN_LCORE_CMD_NOTIFY_CLOSE + 1];
	struct rn_lcore_cmd held[64];
	unsigned int n_held;
	int notify_open_rc;            /* NOTIFY_OPENED's result */
	/* The notification engine's rings the plane serves
	 * (rn_plane_set_notify()); tcp_in holds H_TCP_IN_ROOM deliveries. */
	struct rte_ring *uses, *tcp_in, *completions;
	/* The peer. */
	uint64_t peer_session;         /* its session id; 0: H_PEER_SESSION */
	bool peer_unproven;            /* with a secret: HELLO without the
					* challenge exchange */
	int fd;
	int rcvbuf;                    /* SO_RCVBUF for its socket; 0: default */
	uint8_t rx[RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD];
	size_t rx_len;
	struct rn_proto_frame last;    /* the last frame the peer read */
	uint8_t last_buf[RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD];
};

/* A plane named name with [control] connect_timeout_ms timeout_ms and
 * [notify] enabled = notify. */
struct rn_ph_plane *rn_ph_start(const char *name, uint32_t timeout_ms, bool notify);
/* The same with the shared secret key ([control] secret_file, and
 * accept_unknown for the peer): the peer proves it before its HELLO
 * (rn_ph_peer_hello), unless peer_unproven. */
struct rn_ph_plane *rn_ph_start_secret(const char *name, uint32_t timeout_ms,
				       bool notify, const char *key);
void rn_ph_stop(struct rn_ph_plane *h);
/* cmocka teardown: rn_ph_stop(*state). */
int rn_ph_teardown(void **state);

/* Post an event as the worker lcore would. */
void rn_ph_event(struct rn_ph_plane *h, uint16_t type, int32_t arg, uint64_t cookie);
/* A bay came back on the worker (after_drop: after a NOTIFY_DROP). */
void rn_ph_bay_free(struct rn_ph_plane *h, bool after_drop);
/* Set or clear the hold on answers to commands of type. */
void rn_ph_hold(struct rn_ph_plane *h, uint32_t type, bool on);

/* Commands of type the fake worker has taken so far. */
unsigned int rn_ph_cmd_count(struct rn_ph_plane *h, uint32_t type);
/* Wait until n commands of type were taken; false after H_WAIT_MS. */
bool rn_ph_wait_cmds(struct rn_ph_plane *h, uint32_t type, unsigned int n);

/* The published endpoint named name (false when there is none). */
bool rn_ph_info(struct rn_ph_plane *h, const char *name, struct rn_ep_info *out);
/* Wait until the endpoint named name is in state; false after H_WAIT_MS. */
bool rn_ph_wait_state(struct rn_ph_plane *h, const char *name, enum rn_ep_state state);
/* Wait until its native flag is native; false after H_WAIT_MS. */
bool rn_ph_wait_native(struct rn_ph_plane *h, const char *name, bool native);
void rn_ph_print(struct rn_ph_plane *h, const char *name);

/* Run fn(h, arg) on the control thread, between two of its loop turns,
 * and wait until it returned (plane calls that are control thread only). */
void rn_ph_call(struct rn_ph_plane *h, void (*fn)(struct rn_ph_plane *h, void *arg),
		void *arg);

/* The peer calls the plane and completes the handshake: with caps, and
 * a notify QP when native. Fails the test if the plane does not connect. */
void rn_ph_peer_connect(struct rn_ph_plane *h, uint32_t caps, bool native);
/* Its two halves: call and send HELLO; then take ACCEPT, send READY and
 * wait until the plane is connected. */
void rn_ph_peer_hello(struct rn_ph_plane *h, uint32_t caps, bool native);
void rn_ph_peer_finish(struct rn_ph_plane *h);
/* The peer closes its connection (as a peer process that died). */
void rn_ph_peer_close(struct rn_ph_plane *h);
/* Send bytes as the peer. */
void rn_ph_peer_send(struct rn_ph_plane *h, const uint8_t *frame, size_t len);
void rn_ph_peer_send_step(struct rn_ph_plane *h, uint8_t step, uint8_t reason,
		      uint16_t offer);
/* The same, as if from the peer's incarnation generation. */
void rn_ph_peer_send_step_of(struct rn_ph_plane *h, uint32_t generation, uint8_t step,
			 uint8_t reason, uint16_t offer);
/*
 * The next frame from the plane other than a HEARTBEAT, in h->last, within
 * wait_ms. Returns 1, 0 when none came, -1 when the plane closed the
 * connection.
 */
int rn_ph_peer_recv(struct rn_ph_plane *h, uint32_t wait_ms);
/* The next frame, which must be NOTIFY_QP step; returns its offer. */
uint16_t rn_ph_expect_step(struct rn_ph_plane *h, uint8_t step);

void rn_ph_sleep_ms(uint32_t ms);

#endif /* PLANE_HARNESS_H */
