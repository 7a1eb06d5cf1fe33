/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_DAEMON_H
#define RN_DAEMON_H

/*
 * rnotifyd: the process. The main lcore runs the control thread; every
 * other configured lcore runs a worker loop. The daemon owns the
 * configuration, the lcores' state and the event ring they answer on.
 */

#include <limits.h>
#include <pthread.h>
#include <rte_config.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "rn_config.h"
#include "rn_control.h"
#include "rn_lcore.h"
#include "rn_client_server.h"
#include "rn_plane.h"

enum rn_daemon_state {
	RN_DAEMON_STARTING,     /* workers launched, not all answered yet */
	RN_DAEMON_RUNNING,      /* every worker answered its first ping */
	RN_DAEMON_STOPPING,     /* a signal arrived: workers are told to stop */
};

#define RN_DAEMON_TICK_MAX_MS 100 /* control thread timers: at most this */
#define RN_DAEMON_DRAIN_S 2       /* at exit, lcores get this to drain QPs */
#define RN_DAEMON_EVENT_RING_SIZE 4096

/* What the control thread watches a worker's NIC events for. */
struct rn_device_watch {
	struct rn_daemon *d;
	unsigned int worker;          /* its index in worker_ptrs */
};

struct rn_daemon {
	struct rn_config cfg;
	char config_path[PATH_MAX];
	bool hugepages;                 /* memory backing EAL chose */
	struct timespec started;        /* CLOCK_MONOTONIC */
	int name_fd;                    /* lock file: holds the claim on the name */
	FILE *log;                      /* the timestamped log stream */
	enum rn_daemon_state state;     /* written by control, read by telemetry */
	unsigned int n_workers;
	unsigned int worker_ids[RTE_MAX_LCORE];
	struct rte_ring *events;        /* lcores -> control, MP/SC */
	int events_fd;                  /* eventfd: an event was queued */
	unsigned int pongs_pending;
	uint64_t events_handled;        /* control thread only; read relaxed */
	struct rn_control *ctl;
	struct rn_plane *plane;
	struct rn_notify *notify;
	struct rn_client_server *clients;   /* NULL: [client] enabled = false */
	struct rn_transfer *transfer;   /* the embedded application's */
	/* An application embedded in the process (rnotify-bench): started on
	 * its own thread once RUNNING, joined at shutdown. It ends the daemon
	 * by raising SIGTERM, and must return once rn_daemon_stopping(). */
	void (*app)(struct rn_daemon *d, void *arg);
	void *app_arg;
	pthread_t app_thread;
	bool app_started;
	struct rn_lcore *worker_ptrs[RTE_MAX_LCORE];
	struct rn_device_watch device_watches[RTE_MAX_LCORE];
};

/* Per-lcore worker state, indexed by lcore id, alive for the whole process. */
extern struct rn_lcore rn_workers[RTE_MAX_LCORE];

/*
 * Run the daemon on d->cfg until SIGINT or SIGTERM, then tear everything
 * down in reverse order. prog is argv[0]. Returns the process exit code:
 * 0 after a clean stop, 1 when start-up failed (the reason is logged).
 */
int rn_daemon_run(struct rn_daemon *d, const char *prog);

const char *rn_daemon_state_name(enum rn_daemon_state state);

/* From any thread: the daemon is shutting down. */
bool rn_daemon_stopping(const struct rn_daemon *d);

/* Seconds since start-up, from any thread. */
double rn_daemon_uptime(const struct rn_daemon *d);

/*
 * Register the /rnotify/ telemetry commands, which read d from the
 * telemetry thread. Returns 0 or a negative errno.
 */
int rn_telemetry_register(const struct rn_daemon *d);
/* Diagnostic telemetry commands still acting as applications. */
unsigned int rn_telemetry_acting(void);

#endif /* RN_DAEMON_H */
