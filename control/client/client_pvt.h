/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_PVT_H
#define RN_CLIENT_PVT_H

/*
 * The client server's state (rn_client_server.h), shared by its files:
 * client_server.c (the socket, the callers, the requests), client_attach.c
 * (regions, the lcores' links, teardown), client_events.c (the plane's
 * peer events to every client) and client_xfer.c (transfers: memory
 * registration, publications, descriptor fetches).
 */

#include <pthread.h>
#include <rte_log.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include "rn_client_msg.h"
#include "rn_client_ring_end.h"
#include "rn_client_server.h"
#include "rn_client_shm.h"
#include "rn_lcore_client.h"

extern int rn_client_server_logtype;
#define RN_CLIENT_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_client_server_logtype, \
		"rnotify.client: " fmt "\n", ##__VA_ARGS__)

/* Lines about refused callers per second, at most; the rest counted. */
#define RN_CLIENT_REFUSALS_LOGGED_PER_S 10
/* Callers that have not attached (yet): at most this many at once, each
 * for at most RN_CLIENT_HELLO_MS; beyond, they are closed at once. */
#define RN_CLIENT_UNATTACHED_MAX 16
#define RN_CLIENT_HELLO_MS 2000
/* Listen backlog of the socket. */
#define RN_CLIENT_BACKLOG 64

_Static_assert(RN_CONFIG_CLIENT_MAX_WORKERS == RN_CLIENT_MAX_LCORES,
	       "the config's worker limit is the region's");
_Static_assert(RN_CONFIG_NAME_MAX == RN_CLIENT_NODE_MAX + 1,
	       "a node name is a [dataplane] name");

enum rn_conn_state {
	RN_CONN_NEW,       /* allowed; its first request must be ATTACH */
	RN_CONN_REFUSED,   /* not allowed: answered -EACCES at its first
			    * request, then closed */
	RN_CONN_ADDING,    /* CLIENT_ADD sent: its ATTACH is answered once
			    * every lcore answered CLIENT_ADDED, so that
			    * nothing sent to it is refused meanwhile */
	RN_CONN_ATTACHED,  /* the lcores poll its region */
	RN_CONN_CLOSING,   /* socket closed, CLIENT_REMOVE sent: waits for
			    * every lcore's CLIENT_REMOVED */
};

enum rn_xreg_state {
	RN_XREG_REGISTERING,  /* CLIENT_REG sent to every lcore */
	RN_XREG_UNDOING,      /* some refused: CLIENT_DEREG to those that took
			       * it, then the REG's error is the reply */
	RN_XREG_LIVE,         /* registered on every lcore */
	RN_XREG_DEREGISTERING,/* CLIENT_DEREG sent to every lcore */
};

/* A client's registered memory (REG). The op is what the lcores hold. */
struct rn_client_xreg {
	struct rn_client_reg_op op;   /* the cookie of its lcore commands */
	struct rn_client_conn *c;
	enum rn_xreg_state state;
	unsigned int lcores_left;     /* answers still due */
	uint32_t took;                /* workers that registered it (bits) */
	int status;                   /* the first refusal */
	void *map;                    /* the pieces, mapped one after the
				       * other; NULL for a dma-buf */
	size_t map_len;
	char name[RN_CLIENT_PUBLISH_NAME_MAX + 1];   /* published; "": not */
	uint8_t desc[RN_CLIENT_DESC_SIZE];            /* once LIVE */
};

/* One caller on the socket, and once attached, one client. */
struct rn_client_conn {
	TAILQ_ENTRY(rn_client_conn) next;
	struct rn_client_server *s;
	enum rn_conn_state state;
	int fd;                   /* the socket; -1 once closed */
	struct ucred cred;        /* SO_PEERCRED at accept */
	uint64_t accepted_ms;     /* CLOCK_MONOTONIC */
	unsigned int lcores_left; /* CLIENT_ADDED or CLIENT_REMOVED answers
				   * still due */
	int add_status;           /* the first lcore's refusal, or 0 */
	int region_fd;            /* held from ATTACH to its reply; -1 */
	/* Its events ring: this thread's end, the shape the daemon made
	 * (rn_client_ring_end.h). */
	struct rn_client_ring_end events_ring;
	struct rn_client_link link;   /* the lcores' view; region NULL until
				       * attached */
	struct rn_client_info info;   /* under s->lock */
	/* A request answered later (REG, DEREG, FETCH): 0 when none. While
	 * there is one, the socket is watched for its close only, so that
	 * the next request is read after this one's reply. */
	uint16_t pending;
	struct rn_desc_fetch *fetch;  /* FETCH's, until it is done */
	char fetch_node[RN_CLIENT_NODE_MAX + 1];
	struct rn_client_xreg *regions[RN_CLIENT_MAX_REGIONS];
};
TAILQ_HEAD(rn_conn_list, rn_client_conn);

/* Commands that found a worker's ring full, oldest first. */
struct rn_client_cmd_waiting {
	struct rn_lcore_cmd cmd;
	struct rn_client_cmd_waiting *next;
};

struct rn_client_server {
	const struct rn_config *cfg;
	struct rn_control *ctl;
	struct rn_plane *plane;
	unsigned int n_workers;
	struct rn_lcore *workers[RN_CLIENT_MAX_LCORES];
	struct {
		struct rn_client_cmd_waiting *head, *tail;
	} backlog[RN_CLIENT_MAX_LCORES];
	uint32_t buf_size;        /* [notify] slot_size, to 64 bytes */

	/* The status page, mapped read-write here, read-only in clients. */
	int status_fd;
	struct rn_client_status_page *status;
	size_t status_size;

	int listen_fd;
	char path[RN_CONFIG_SOCKET_PATH_MAX];
	dev_t path_dev;           /* the socket file we made: removed at */
	ino_t path_ino;           /* close only while it is still that one */

	struct rn_conn_list conns;
	unsigned int unattached;  /* NEW and REFUSED conns */
	uint32_t next_id;

	/* Refused callers: one log window per second. */
	uint64_t refusals_start_ms;
	unsigned int refusals_logged;
	uint64_t refusals_unlogged;

	/* Telemetry reads conns' info and the totals under it; the control
	 * thread takes it only to change them. */
	pthread_mutex_t lock;
	struct rn_client_totals totals;
};

/* client_attach.c */
/* Answer ATTACH of agent (len bytes) on c: make its region and eventfd,
 * hand it to the lcores (the reply follows their answers:
 * rn_client_server_added()). Returns 0, or a negative errno for the reply
 * (nothing is left made). */
int rn_client_server_attach(struct rn_client_server *s, struct rn_client_conn *c,
			    const char *agent, uint32_t len);
/* An lcore's CLIENT_ADDED for c (ADDING), with its status: once every
 * lcore answered, reply to ATTACH (descriptors, or the first refusal). */
void rn_client_server_added(struct rn_client_server *s,
			    struct rn_client_conn *c, int status);
/* c's socket closed or it detached: stop watching and close the socket;
 * an attached client goes CLOSING (CLIENT_REMOVE to every lcore), any
 * other is freed now. */
void rn_client_conn_close(struct rn_client_server *s, struct rn_client_conn *c);
/* Free c and everything it holds; the lcores must not touch it. */
void rn_client_conn_free(struct rn_client_server *s, struct rn_client_conn *c);
/* Put cmd onto worker's ring, after any that wait; never waits. */
void rn_client_cmd_send(struct rn_client_server *s, unsigned int worker,
			struct rn_lcore_cmd cmd);
/* Push waiting commands onto the rings as they have room. */
void rn_client_cmd_push(struct rn_client_server *s);
void rn_client_cmd_backlog_free(struct rn_client_server *s);

/* client_xfer.c */
/* A transfer request of c (REG, DEREG, PUBLISH, FETCH) with the fds it
 * carried (REG takes what it keeps, setting them -1; the caller closes
 * the rest). Returns the status of an immediate reply (status only), 1
 * when c->pending was set: the reply follows, or RN_CLIENT_XFER_REPLIED
 * when it was answered already. */
#define RN_CLIENT_XFER_REPLIED 2
int rn_client_xfer_request(struct rn_client_server *s,
			   struct rn_client_conn *c, uint16_t type,
			   const uint8_t *body, uint32_t len, int *fds,
			   unsigned int n_fds);
/* An lcore's CLIENT_REGISTERED or _DEREGISTERED. */
void rn_client_xfer_event(struct rn_client_server *s,
			  const struct rn_lcore_event *ev);
/* c's socket closed: withdraw its publications, forget its fetch. */
void rn_client_xfer_closing(struct rn_client_server *s,
			    struct rn_client_conn *c);
/* The lcores let go of c: unmap and close every region of it. */
void rn_client_xfer_free(struct rn_client_conn *c);
/* The plane's client descriptor source (rn_plane_set_client_
 * descriptors()). */
int rn_client_xfer_published(void *arg, const char *name, void *blob,
			     size_t cap);

/* client_server.c */
/* The reply to c's pending request is out: read its next requests. */
void rn_client_conn_resume(struct rn_client_server *s,
			   struct rn_client_conn *c);
/* Send c the reply to type: status, then body (len bytes) and fds. */
int rn_client_server_reply(struct rn_client_conn *c, uint16_t type,
			   int status, const void *body, uint32_t len,
			   const int *fds, unsigned int n_fds);
/* CLOCK_REALTIME in ms, for "attached since". */
uint64_t rn_client_wall_ms(void);

/* Every conn of s, where the body may free the one it is at. */
#define RN_CONN_FOREACH_SAFE(c, s, tmp) \
	for ((c) = TAILQ_FIRST(&(s)->conns); \
	     (c) != NULL && ((tmp) = TAILQ_NEXT((c), next), 1); (c) = (tmp))

/* client_events.c: the plane's observer (rn_plane_set_clients()). */
void rn_client_peer_event(void *arg, uint32_t ep_index, int event);

#endif /* RN_CLIENT_PVT_H */
