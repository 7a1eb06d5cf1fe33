/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Telemetry commands, served by DPDK's telemetry threads (one per client) on
 * the socket that dpdk-telemetry.py reads (-f rnotify-<name>). The status
 * commands only read: the configuration and the worker list (complete
 * before the commands are registered, immutable after), the daemon state
 * (atomic) and the lcores' counters (relaxed loads of single-writer
 * fields). The diagnostic ones act as an application thread would (send,
 * poll) or inject faults (tests, sim only).
 */
#include <errno.h>
#include <pthread.h>
#include <rte_common.h>
#include <rte_telemetry.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_daemon.h"
#include "rn_notify.h"
#include "rn_notify_diag.h"
#include "rn_sim.h"
#include "rn_version.h"

static const struct rn_daemon *daemon_seen;

/* Worker counters, one array per counter, in the order of worker_lcores. */
static const struct {
	const char *name;
	size_t offset;
} worker_counters[] = {
	{ "loops", offsetof(struct rn_lcore_stats, loops) },
	{ "busy_loops", offsetof(struct rn_lcore_stats, busy_loops) },
	{ "sleeps", offsetof(struct rn_lcore_stats, sleeps) },
	{ "commands", offsetof(struct rn_lcore_stats, commands) },
	{ "events_dropped", offsetof(struct rn_lcore_stats, events_dropped) },
	{ "completions", offsetof(struct rn_lcore_stats, completions) },
	{ "stale_cqes", offsetof(struct rn_lcore_stats, stale_cqes) },
	{ "qps", offsetof(struct rn_lcore_stats, qps) },
	{ "endpoint_qp_sets", offsetof(struct rn_lcore_stats, endpoints) },
	{ "notify_sent", offsetof(struct rn_lcore_stats, notify_sent) },
	{ "notify_received", offsetof(struct rn_lcore_stats, notify_received) },
	{ "notify_rejected", offsetof(struct rn_lcore_stats, notify_rejected) },
	{ "notify_stale", offsetof(struct rn_lcore_stats, notify_stale) },
	{ "credit_writes", offsetof(struct rn_lcore_stats, credit_writes) },
	{ "reports_dropped", offsetof(struct rn_lcore_stats, reports_dropped) },
	{ "cqs", offsetof(struct rn_lcore_stats, cqs) },
	{ "cq_reserved", offsetof(struct rn_lcore_stats, cq_reserved) },
	{ "no_cq_room", offsetof(struct rn_lcore_stats, no_cq_room) },
	{ "device_events", offsetof(struct rn_lcore_stats, device_events) },
};

/* Add an array container under name; arrays of scalars are what 22.11 nests. */
static int
add_array(struct rte_tel_data *out, const char *name,
	  enum rte_tel_value_type type, const uint64_t *values, unsigned int n)
{
	struct rte_tel_data *array = rte_tel_data_alloc();

	if (array == NULL)
		return -ENOMEM;
	rte_tel_data_start_array(array, type);
	for (unsigned int i = 0; i < n; i++) {
		if (type == RTE_TEL_INT_VAL)
			rte_tel_data_add_array_int(array, (int)values[i]);
		else
			rte_tel_data_add_array_u64(array, values[i]);
	}
	return rte_tel_data_add_dict_container(out, name, array, 0);
}

static void
add_workers(struct rte_tel_data *out, const struct rn_daemon *d)
{
	/* On the stack: DPDK runs one handler thread per client. */
	uint64_t values[RTE_MAX_LCORE];
	struct rn_lcore_stats stats[RTE_MAX_LCORE];

	for (unsigned int i = 0; i < d->n_workers; i++) {
		rn_lcore_stats_read(&rn_workers[d->worker_ids[i]], &stats[i]);
		values[i] = d->worker_ids[i];
	}
	add_array(out, "worker_lcores", RTE_TEL_INT_VAL, values, d->n_workers);
	for (unsigned int i = 0; i < d->n_workers; i++)
		values[i] = d->plane != NULL &&
			    rn_plane_worker_out(d->plane, i);
	add_array(out, "out_of_service", RTE_TEL_INT_VAL, values,
		  d->n_workers);
	for (unsigned int c = 0; c < RTE_DIM(worker_counters); c++) {
		for (unsigned int i = 0; i < d->n_workers; i++)
			values[i] = *(const uint64_t *)((const char *)&stats[i] +
						worker_counters[c].offset);
		add_array(out, worker_counters[c].name, RTE_TEL_U64_VAL,
			  values, d->n_workers);
	}
}

static int
handle_status(const char *cmd, const char *params, struct rte_tel_data *out)
{
	const struct rn_daemon *d = daemon_seen;
	const struct rn_config *cfg = &d->cfg;
	enum rn_daemon_state state = __atomic_load_n(&d->state,
						     __ATOMIC_ACQUIRE);

	(void)cmd;
	(void)params;
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_string(out, "version", RN_VERSION);
	rte_tel_data_add_dict_string(out, "name", cfg->dataplane.name);
	rte_tel_data_add_dict_int(out, "pid", (int)getpid());
	rte_tel_data_add_dict_string(out, "state", rn_daemon_state_name(state));
	rte_tel_data_add_dict_u64(out, "uptime_ms",
				  (uint64_t)(rn_daemon_uptime(d) * 1000));
	rte_tel_data_add_dict_string(out, "provider",
				     rn_nic_provider_name(cfg->nic.provider));
	rte_tel_data_add_dict_string(out, "memory",
				     d->hugepages ? "hugepages" : "ordinary");
	rte_tel_data_add_dict_u64(out, "memory_mb", cfg->dataplane.memory_mb);
	rte_tel_data_add_dict_string(out, "idle",
				     rn_idle_policy_name(cfg->dataplane.idle));
	rte_tel_data_add_dict_int(out, "main_lcore", cfg->dataplane.lcores.ids[0]);
	rte_tel_data_add_dict_u64(out, "events_handled",
				  __atomic_load_n(&d->events_handled,
						  __ATOMIC_RELAXED));
	if (d->plane != NULL) {
		char session[20];

		snprintf(session, sizeof(session), "%016lx",
			 (unsigned long)rn_plane_session(d->plane));
		rte_tel_data_add_dict_string(out, "session", session);
		rte_tel_data_add_dict_int(out, "control_port",
					  rn_plane_port(d->plane));
	}
	if (d->notify != NULL) {
		uint64_t parked, overdue;

		rn_notify_order_counts(d->notify, &parked, &overdue);
		rte_tel_data_add_dict_u64(out, "notify_order_parked", parked);
		rte_tel_data_add_dict_u64(out, "notify_order_overdue", overdue);
	}
	add_workers(out, d);
	return 0;
}

/* The snapshot buffer is big: one per call, not on a thread's stack. */
static unsigned int
snapshot(const struct rn_daemon *d, struct rn_ep_info **out)
{
	*out = malloc(sizeof(**out) * RN_MAX_ENDPOINTS);
	if (*out == NULL || d->plane == NULL)
		return 0;
	return rn_plane_snapshot(d->plane, *out, RN_MAX_ENDPOINTS);
}

/*
 * START, the first endpoint to list: empty for 0, else a decimal index.
 * Returns it, or -1 when params is anything else.
 */
static long
page_start(const char *params)
{
	char *end;
	long start;

	if (params == NULL || params[0] == '\0')
		return 0;
	if (params[0] < '0' || params[0] > '9')
		return -1;
	start = strtol(params, &end, 10);
	return *end == '\0' && start <= RN_MAX_ENDPOINTS ? start : -1;
}

/*
 * {"name": [...], "state": [...], "next": N, "total": T}: up to
 * ENDPOINTS_PAGE endpoints from START, in the same order in both arrays.
 * Not a dict keyed by name: telemetry keys may not hold the '-' that node
 * names may. Pages keep the reply within telemetry's output size (16 KiB)
 * and array size (512); next == total: nothing more.
 */
#define ENDPOINTS_PAGE 256

static int
handle_endpoints(const char *cmd, const char *params, struct rte_tel_data *out)
{
	long start = page_start(params);
	struct rte_tel_data *names = rte_tel_data_alloc();
	struct rte_tel_data *states = rte_tel_data_alloc();
	struct rn_ep_info *eps;
	unsigned int n = snapshot(daemon_seen, &eps);
	unsigned int first, next;

	(void)cmd;
	if (names == NULL || states == NULL || start < 0) {
		rte_tel_data_free(names);
		rte_tel_data_free(states);
		free(eps);
		return start < 0 ? -EINVAL : -ENOMEM;
	}
	first = RTE_MIN((unsigned int)start, n);
	next = RTE_MIN(n, first + ENDPOINTS_PAGE);
	rte_tel_data_start_dict(out);
	rte_tel_data_start_array(names, RTE_TEL_STRING_VAL);
	rte_tel_data_start_array(states, RTE_TEL_STRING_VAL);
	for (unsigned int i = first; i < next; i++) {
		rte_tel_data_add_array_string(names, eps[i].name);
		rte_tel_data_add_array_string(states,
					      rn_ep_state_name(eps[i].state));
	}
	rte_tel_data_add_dict_container(out, "name", names, 0);
	rte_tel_data_add_dict_container(out, "state", states, 0);
	rte_tel_data_add_dict_int(out, "next", (int)next);
	rte_tel_data_add_dict_int(out, "total", (int)n);
	free(eps);
	return 0;
}

static void
add_transitions(struct rte_tel_data *out, const struct rn_ep_info *ep)
{
	static const char *const keys[RN_EP_N_STATES] = {
		[RN_EP_IDLE] = "to_idle", [RN_EP_CONNECTING] = "to_connecting",
		[RN_EP_CONNECTED] = "to_connected", [RN_EP_CLOSING] = "to_closing",
		[RN_EP_CLOSED] = "to_closed", [RN_EP_FAILED] = "to_failed",
		[RN_EP_RECONNECTING] = "to_reconnecting",
	};

	for (int s = 0; s < RN_EP_N_STATES; s++)
		rte_tel_data_add_dict_u64(out, keys[s], ep->transitions[s]);
}

/* One endpoint, by peer name: /rnotify/endpoint,NAME */
static int
handle_endpoint(const char *cmd, const char *params, struct rte_tel_data *out)
{
	struct rn_ep_info *eps;
	unsigned int n = snapshot(daemon_seen, &eps);
	char text[24];

	(void)cmd;
	for (unsigned int i = 0; params != NULL && i < n; i++) {
		const struct rn_ep_info *ep = &eps[i];

		if (strcmp(ep->name, params) != 0)
			continue;
		rte_tel_data_start_dict(out);
		rte_tel_data_add_dict_string(out, "name", ep->name);
		rte_tel_data_add_dict_string(out, "address", ep->address);
		rte_tel_data_add_dict_int(out, "configured", ep->configured);
		rte_tel_data_add_dict_string(out, "state",
					     rn_ep_state_name(ep->state));
		rte_tel_data_add_dict_u64(out, "generation", ep->generation);
		snprintf(text, sizeof(text), "%016lx",
			 (unsigned long)ep->peer_session);
		rte_tel_data_add_dict_string(out, "peer_session", text);
		rte_tel_data_add_dict_u64(out, "peer_generation",
					  ep->peer_generation);
		rte_tel_data_add_dict_u64(out, "peer_caps", ep->peer_caps);
		rte_tel_data_add_dict_int(out, "native", ep->native);
		rte_tel_data_add_dict_u64(out, "native_added",
					  ep->native_added);
		rte_tel_data_add_dict_int(out, "lcore", (int)ep->lcore);
		rte_tel_data_add_dict_u64(out, "probes_ok", ep->probes_ok);
		rte_tel_data_add_dict_u64(out, "probes_bad", ep->probes_bad);
		rte_tel_data_add_dict_u64(out, "last_detect_ms",
					  ep->last_detect_ms);
		rte_tel_data_add_dict_string(out, "last_error", ep->last_error);
		add_transitions(out, ep);
		free(eps);
		return 0;
	}
	free(eps);
	return -EINVAL;   /* no such endpoint: the client shows null */
}

/* The engine exists from RUNNING until teardown begins (STOPPING). */
static bool
running(const struct rn_daemon *d)
{
	return __atomic_load_n(&d->state, __ATOMIC_ACQUIRE) == RN_DAEMON_RUNNING &&
	       d->notify != NULL;
}

/*
 * The diagnostic commands act as an application thread, on the
 * notification engine that teardown stops and frees: they run counted, and
 * teardown (rn_telemetry_acting()) waits for the count to fall to zero
 * after it left RUNNING. Either a command sees the state change, or
 * teardown sees the command.
 */
static unsigned int acting;

static int
act(int (*fn)(const char *, struct rte_tel_data *), const char *params,
    struct rte_tel_data *out)
{
	int rc = -EBUSY;

	__atomic_fetch_add(&acting, 1, __ATOMIC_SEQ_CST);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);   /* before reading the state */
	if (running(daemon_seen))
		rc = fn(params, out);
	__atomic_fetch_sub(&acting, 1, __ATOMIC_RELEASE);
	return rc;
}

unsigned int
rn_telemetry_acting(void)
{
	return __atomic_load_n(&acting, __ATOMIC_SEQ_CST);
}

/*
 * Copy params (under 1,024 bytes) into buf and cut it at its first n - 1
 * commas into fields[0..n), the last keeping any commas. Returns 0, or
 * -EINVAL with fewer fields.
 */
static int
split_params(const char *params, char (*buf)[1024], char **fields,
	     unsigned int n)
{
	if (params == NULL || strlen(params) >= sizeof(*buf))
		return -EINVAL;
	strcpy(*buf, params);
	fields[0] = *buf;
	for (unsigned int i = 1; i < n; i++) {
		char *comma = strchr(fields[i - 1], ',');

		if (comma == NULL)
			return -EINVAL;
		*comma = '\0';
		fields[i] = comma + 1;
	}
	return 0;
}

/* The answer of a send: {"result": 0 or -errno, "error": its text}. */
static void
send_result(struct rte_tel_data *out, int rc)
{
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_int(out, "result", rc);
	rte_tel_data_add_dict_string(out, "error", rc == 0 ? "" : strerror(-rc));
}

/*
 * Diagnostics: send a notification, /rnotify/send,PEER,NAME,MSG (MSG may
 * hold commas), as an application would.
 */
static int
send_now(const char *params, struct rte_tel_data *out)
{
	char buf[1024];
	char *f[3];   /* peer, name, msg */

	if (split_params(params, &buf, f, 3) != 0)
		return -EINVAL;
	send_result(out, rn_notify_send(daemon_seen->notify, f[0], f[1],
					(uint32_t)strlen(f[1]), f[2],
					(uint32_t)strlen(f[2]), 0, 0));
	return 0;
}

/*
 * Diagnostics: the same, asking for the send's completion report,
 * /rnotify/send_report,PEER,COOKIE,NAME,MSG; /rnotify/completions takes
 * the reports.
 */
static int
send_report_now(const char *params, struct rte_tel_data *out)
{
	char buf[1024];
	char *f[4];   /* peer, cookie, name, msg */
	char *end;
	uint64_t cookie;

	if (split_params(params, &buf, f, 4) != 0)
		return -EINVAL;
	errno = 0;
	cookie = strtoull(f[1], &end, 10);
	if (errno != 0 || end == f[1] || *end != '\0')
		return -EINVAL;
	send_result(out, rn_notify_send(daemon_seen->notify, f[0], f[2],
					(uint32_t)strlen(f[2]), f[3],
					(uint32_t)strlen(f[3]), cookie,
					RN_NOTIFY_WANT_COMPLETION));
	return 0;
}

static pthread_mutex_t completions_lock = PTHREAD_MUTEX_INITIALIZER;

/* Diagnostics: take the completion reports of sends that asked for one,
 * as an application would: {"cookie": [...], "status": [0 or -errno]}. */
static int
completions_now(const char *params, struct rte_tel_data *out)
{
	struct rn_notify_completion got[64];
	struct rte_tel_data *cookies = rte_tel_data_alloc();
	struct rte_tel_data *statuses = rte_tel_data_alloc();
	unsigned int n;

	(void)params;
	if (cookies == NULL || statuses == NULL) {
		rte_tel_data_free(cookies);
		rte_tel_data_free(statuses);
		return -ENOMEM;
	}
	rte_tel_data_start_array(cookies, RTE_TEL_U64_VAL);
	rte_tel_data_start_array(statuses, RTE_TEL_INT_VAL);
	/* One thread at a time takes them (rn_notify_completions()). */
	pthread_mutex_lock(&completions_lock);
	n = rn_notify_completions(daemon_seen->notify, got, 64);
	pthread_mutex_unlock(&completions_lock);
	for (unsigned int i = 0; i < n; i++) {
		rte_tel_data_add_array_u64(cookies, got[i].cookie);
		rte_tel_data_add_array_int(statuses, got[i].status);
	}
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_container(out, "cookie", cookies, 0);
	rte_tel_data_add_dict_container(out, "status", statuses, 0);
	return 0;
}

#define BURST_MAX 64
#define BURST_MSG_MAX 1024

/*
 * The msg lengths of /rnotify/send_burst: COUNT alike (len, each MSG), or
 * a list "L0;L1;..." of lengths, each msg that many of MSG's first byte.
 * Returns how many, or 0 for bad text.
 */
static unsigned int
burst_lengths(const char *text, uint32_t len, uint32_t *lengths,
	      bool *listed)
{
	unsigned int n = 0;
	char *end;

	*listed = strchr(text, ';') != NULL;
	if (!*listed) {
		unsigned long count = strtoul(text, &end, 10);

		if (*end != '\0' || count == 0 || count > BURST_MAX)
			return 0;
		for (n = 0; n < count; n++)
			lengths[n] = len;
		return n;
	}
	do {
		unsigned long l = strtoul(text, &end, 10);

		if (end == text || (*end != ';' && *end != '\0') ||
		    l > BURST_MSG_MAX || n == BURST_MAX)
			return 0;
		lengths[n++] = (uint32_t)l;
		text = end + 1;
	} while (*end == ';');
	return n;
}

/*
 * Diagnostics: /rnotify/send_burst,PEER,COUNT,NAME,MSG sends COUNT
 * (1..64) notifications in one rn_notify_send_burst(): NAME0, NAME1, ...,
 * each with MSG (which may hold commas). COUNT may be a list of msg
 * lengths instead, "L0;L1;..." (up to 1,024 each): then msg i is Li
 * times MSG's first byte. {"result": how many went, or -errno}.
 */
static int
send_burst_now(const char *params, struct rte_tel_data *out)
{
	struct rn_notify_out burst[BURST_MAX];
	char fill[BURST_MSG_MAX];
	uint32_t lengths[BURST_MAX];
	char names[BURST_MAX][48];
	char buf[1024];
	char *f[4];   /* peer, count, name, msg */
	char *count, *name, *msg;
	unsigned int n;
	bool listed;
	int rc;

	if (split_params(params, &buf, f, 4) != 0)
		return -EINVAL;
	count = f[1];
	name = f[2];
	msg = f[3];
	n = burst_lengths(count, (uint32_t)strlen(msg), lengths, &listed);
	if (n == 0 || strlen(name) + 3 > sizeof(names[0]) ||
	    (listed && *msg == '\0'))
		return -EINVAL;
	if (listed)
		memset(fill, *msg, sizeof(fill));
	for (unsigned int i = 0; i < n; i++) {
		int len = snprintf(names[i], sizeof(names[i]), "%s%u", name, i);

		burst[i] = (struct rn_notify_out){
			.name = names[i], .name_len = (uint32_t)len,
			.msg = listed ? fill : msg, .msg_len = lengths[i] };
	}
	rc = rn_notify_send_burst(daemon_seen->notify, f[0], burst, n, 0);
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_int(out, "result", rc);
	rte_tel_data_add_dict_string(out, "error", rc > 0 ? "" : strerror(-rc));
	return 0;
}

/* The sim device of the worker that owns peer's endpoint raises the event
 * of its port going down, or (fatal) of a CQ error: the event alone, the
 * wires and CQs stay up. */
static int
raise_device_event(const char *peer, bool fatal)
{
	enum rn_ep_state state;
	uint32_t slot, worker;
	struct rn_nic *nic;

	if (rn_plane_lookup(daemon_seen->plane, peer, &slot, &state,
			    &worker) != 0)
		return -ENOENT;
	nic = daemon_seen->worker_ptrs[worker]->nic;
	if (nic->provider != RN_NIC_SIM)
		return -ENOTSUP;
	rn_sim_raise_event(nic, fatal);
	return 0;
}

/* Tests, sim device only: FAULT,PEER with FAULT local_qp (PEER's notify
 * QP fails locally), bad_frame (PEER is sent a frame it must reject),
 * stall (the lcore that owns PEER's endpoint stops for a while),
 * port_event or cq_event (that lcore's device says its port went down, or
 * one of its CQs stopped: fatal), cq_overrun (PEER's CQ overruns: it
 * stops, its QPs fail, and the fatal event follows). */
static int
inject_now(const char *params, struct rte_tel_data *out)
{
	const char *peer = params != NULL ? strchr(params, ',') : NULL;
	int rc;

	if (peer == NULL)
		return -EINVAL;
	peer++;
	if (strncmp(params, "local_qp,", 9) == 0)
		rc = rn_notify_diag_local_fault(daemon_seen->notify, peer);
	else if (strncmp(params, "bad_frame,", 10) == 0)
		rc = rn_notify_diag_bad_frame(daemon_seen->notify, peer);
	else if (strncmp(params, "stall,", 6) == 0)
		rc = rn_notify_diag_stall(daemon_seen->notify, peer);
	else if (strncmp(params, "port_event,", 11) == 0)
		rc = raise_device_event(peer, false);
	else if (strncmp(params, "cq_event,", 9) == 0)
		rc = raise_device_event(peer, true);
	else if (strncmp(params, "cq_overrun,", 11) == 0)
		rc = rn_notify_diag_cq_overrun(daemon_seen->notify, peer);
	else
		return -EINVAL;
	rte_tel_data_start_dict(out);
	rte_tel_data_add_dict_int(out, "result", rc);
	return 0;
}

static pthread_mutex_t poll_lock = PTHREAD_MUTEX_INITIALIZER;

/* Diagnostics: take delivered notifications, as an application would. */
static int
poll_now(const char *params, struct rte_tel_data *out)
{
	static const char *const keys[] = { "peer", "name", "msg" };
	struct rn_notification got[RN_NOTIFY_POLL_MAX];
	struct rte_tel_data *arrays[3] = { NULL, NULL, NULL };
	unsigned int n;

	(void)params;
	/* Allocated before polling, so that no failure loses a delivery. */
	for (int k = 0; k < 3; k++) {
		arrays[k] = rte_tel_data_alloc();
		if (arrays[k] == NULL) {
			for (int j = 0; j < k; j++)
				rte_tel_data_free(arrays[j]);
			return -ENOMEM;
		}
		rte_tel_data_start_array(arrays[k], RTE_TEL_STRING_VAL);
	}
	/* Each client is its own thread, and one thread at a time may poll
	 * and read what the poll handed out. */
	pthread_mutex_lock(&poll_lock);
	n = rn_notify_poll(daemon_seen->notify, got, RN_NOTIFY_POLL_MAX);
	for (unsigned int i = 0; i < n; i++) {
		char text[RTE_TEL_MAX_STRING_LEN];

		rte_tel_data_add_array_string(arrays[0], got[i].peer);
		snprintf(text, sizeof(text), "%.*s", (int)got[i].name_len,
			 got[i].name);
		rte_tel_data_add_array_string(arrays[1], text);
		snprintf(text, sizeof(text), "%.*s", (int)got[i].msg_len,
			 got[i].msg);
		rte_tel_data_add_array_string(arrays[2], text);
	}
	/* Copied out: the slots go back now, not at the next poll. */
	rn_notify_poll(daemon_seen->notify, NULL, 0);
	pthread_mutex_unlock(&poll_lock);
	rte_tel_data_start_dict(out);
	for (int k = 0; k < 3; k++)
		rte_tel_data_add_dict_container(out, keys[k], arrays[k], 0);
	return 0;
}

static int
handle_send(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(send_now, params, out);
}

static int
handle_send_report(const char *cmd, const char *params,
		   struct rte_tel_data *out)
{
	(void)cmd;
	return act(send_report_now, params, out);
}

static int
handle_completions(const char *cmd, const char *params,
		   struct rte_tel_data *out)
{
	(void)cmd;
	return act(completions_now, params, out);
}

static int
handle_send_burst(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(send_burst_now, params, out);
}

static int
handle_sim_fault(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(inject_now, params, out);
}

static int
handle_poll(const char *cmd, const char *params, struct rte_tel_data *out)
{
	(void)cmd;
	return act(poll_now, params, out);
}

int
rn_telemetry_register(const struct rn_daemon *d)
{
	daemon_seen = d;
	return rte_telemetry_register_cmd("/rnotify/status", handle_status,
		"rnotifyd status: version, state, provider, lcores, uptime, "
		"counters. No parameters") |
	       rte_telemetry_register_cmd("/rnotify/endpoints", handle_endpoints,
		"Endpoints (name, state), 256 from START. Parameter: START "
		"(default 0); 'next' is where the rest begins") |
	       rte_telemetry_register_cmd("/rnotify/endpoint", handle_endpoint,
		"One endpoint: state, generation, peer session, counters, last "
		"error. Parameter: the peer's name") |
	       rte_telemetry_register_cmd("/rnotify/send", handle_send,
		"Diagnostics: send a notification. Parameters: PEER,NAME,MSG") |
	       rte_telemetry_register_cmd("/rnotify/send_report",
		handle_send_report, "Diagnostics: send one, report its fate "
		"to /rnotify/completions. Parameters: PEER,COOKIE,NAME,MSG") |
	       rte_telemetry_register_cmd("/rnotify/completions",
		handle_completions, "Diagnostics: take the reports of sends "
		"that asked for one (cookie, status). No parameters") |
	       rte_telemetry_register_cmd("/rnotify/send_burst",
		handle_send_burst, "Diagnostics: send COUNT notifications "
		"NAME0.. in one burst. Parameters: PEER,COUNT,NAME,MSG") |
	       rte_telemetry_register_cmd("/rnotify/sim_fault", handle_sim_fault,
		"Tests, sim only. FAULT,PEER: local_qp, bad_frame, stall, "
		"port_event, cq_event, cq_overrun (operations.md)") |
	       rte_telemetry_register_cmd("/rnotify/poll", handle_poll,
		"Diagnostics: take delivered notifications (peer, name, msg). "
		"No parameters");
}
