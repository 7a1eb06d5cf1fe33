/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Telemetry commands, served by DPDK's telemetry threads (one per client) on
 * the socket that dpdk-telemetry.py reads (-f rnotify-<name>). The status
 * commands only read: the configuration and the worker list (complete
 * before the commands are registered, immutable after), the daemon state
 * (atomic) and the lcores' counters (relaxed loads of single-writer
 * fields). The diagnostic commands, which act as an application would,
 * are telemetry_diag.c's.
 */
#include <errno.h>
#include <rte_common.h>
#include <rte_telemetry.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rn_daemon.h"
#include "rn_notify.h"
#include "rn_version.h"
#include "telemetry_pvt.h"

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
	{ "notify_early", offsetof(struct rn_lcore_stats, notify_early) },
	{ "notify_early_lost",
	  offsetof(struct rn_lcore_stats, notify_early_lost) },
	{ "credit_writes", offsetof(struct rn_lcore_stats, credit_writes) },
	{ "reports_dropped", offsetof(struct rn_lcore_stats, reports_dropped) },
	{ "cqs", offsetof(struct rn_lcore_stats, cqs) },
	{ "cq_reserved", offsetof(struct rn_lcore_stats, cq_reserved) },
	{ "no_cq_room", offsetof(struct rn_lcore_stats, no_cq_room) },
	{ "client_sent", offsetof(struct rn_lcore_stats, client_sent) },
	{ "client_delivered",
	  offsetof(struct rn_lcore_stats, client_delivered) },
	{ "client_held", offsetof(struct rn_lcore_stats, client_held) },
	{ "client_refused", offsetof(struct rn_lcore_stats, client_refused) },
	{ "client_busy", offsetof(struct rn_lcore_stats, client_busy) },
	{ "refusals_dropped",
	  offsetof(struct rn_lcore_stats, refusals_dropped) },
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
	if (d->clients != NULL) {
		struct rn_client_totals t;

		rn_client_server_totals(d->clients, &t);
		rte_tel_data_add_dict_u64(out, "clients", t.attached);
		rte_tel_data_add_dict_u64(out, "client_attaches", t.attaches);
		rte_tel_data_add_dict_u64(out, "clients_refused", t.refused);
		rte_tel_data_add_dict_u64(out, "client_attach_errors",
					  t.failed);
		rte_tel_data_add_dict_string(out, "client_socket",
			rn_client_server_path(d->clients));
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

int
rn_telemetry_parse_u64(const char *text, uint64_t min, uint64_t max,
		       uint64_t *out)
{
	uint64_t v = 0;

	if (text == NULL || *text == '\0')
		return -EINVAL;
	for (; *text != '\0'; text++) {
		unsigned int digit = (unsigned int)(*text - '0');

		if (digit > 9 || v > (UINT64_MAX - digit) / 10)
			return -EINVAL;
		v = v * 10 + digit;
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
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
	struct rte_tel_data *names, *states;
	struct rn_ep_info *eps;
	unsigned int n, first, next;
	uint64_t start = 0;

	(void)cmd;
	/* START, the first endpoint to list: empty for 0. A bad one is null,
	 * as an unknown name is for /rnotify/endpoint: the status commands
	 * reply with data or nothing. */
	if (params != NULL && params[0] != '\0' &&
	    rn_telemetry_parse_u64(params, 0, RN_MAX_ENDPOINTS, &start) != 0)
		return -EINVAL;
	names = rte_tel_data_alloc();
	states = rte_tel_data_alloc();
	n = snapshot(daemon_seen, &eps);
	if (names == NULL || states == NULL) {
		rte_tel_data_free(names);
		rte_tel_data_free(states);
		free(eps);
		return -ENOMEM;
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

/*
 * /rnotify/clients,START: the attached clients, CLIENTS_PAGE from START,
 * as columns of equal length like /rnotify/endpoints (a list of dicts
 * would not fit telemetry's 16 KiB for [client] max_clients of them):
 * id, agent, pid, uid, gid, attached_unix_ms, state (attached, or closing
 * while the lcores let go), requests, events, events_dropped, regions
 * (memory registered for transfers); "next" and
 * "total". An agent name is shown with every byte that JSON would need
 * escaped, or that is not printable ASCII, as '?'.
 */
#define CLIENTS_PAGE 32

enum client_column {
	COL_ID, COL_AGENT, COL_PID, COL_UID, COL_GID, COL_SINCE, COL_STATE,
	COL_REQUESTS, COL_EVENTS, COL_DROPPED, COL_REGIONS, N_CLIENT_COLUMNS,
};

static const struct {
	const char *name;
	enum rte_tel_value_type type;
} client_columns[N_CLIENT_COLUMNS] = {
	[COL_ID] = { "id", RTE_TEL_U64_VAL },
	[COL_AGENT] = { "agent", RTE_TEL_STRING_VAL },
	[COL_PID] = { "pid", RTE_TEL_U64_VAL },
	[COL_UID] = { "uid", RTE_TEL_U64_VAL },
	[COL_GID] = { "gid", RTE_TEL_U64_VAL },
	[COL_SINCE] = { "attached_unix_ms", RTE_TEL_U64_VAL },
	[COL_STATE] = { "state", RTE_TEL_STRING_VAL },
	[COL_REQUESTS] = { "requests", RTE_TEL_U64_VAL },
	[COL_EVENTS] = { "events", RTE_TEL_U64_VAL },
	[COL_DROPPED] = { "events_dropped", RTE_TEL_U64_VAL },
	[COL_REGIONS] = { "regions", RTE_TEL_U64_VAL },
};

static void
printable(const char *in, char *out, size_t len)
{
	size_t i;

	for (i = 0; in[i] != '\0' && i + 1 < len; i++)
		out[i] = in[i] >= 0x20 && in[i] < 0x7f && in[i] != '"' &&
			 in[i] != '\\' ? in[i] : '?';
	out[i] = '\0';
}

static void
add_client(struct rte_tel_data **col, const struct rn_client_info *c)
{
	const uint64_t values[N_CLIENT_COLUMNS] = {
		[COL_ID] = c->id, [COL_PID] = (uint64_t)c->pid,
		[COL_UID] = c->uid, [COL_GID] = c->gid,
		[COL_SINCE] = c->attached_unix_ms,
		[COL_REQUESTS] = c->requests, [COL_EVENTS] = c->events,
		[COL_DROPPED] = c->events_dropped,
		[COL_REGIONS] = c->regions,
	};
	char agent[RTE_TEL_MAX_STRING_LEN];

	printable(c->agent, agent, sizeof(agent));
	for (int k = 0; k < N_CLIENT_COLUMNS; k++) {
		if (k == COL_AGENT)
			rte_tel_data_add_array_string(col[k], agent);
		else if (k == COL_STATE)
			rte_tel_data_add_array_string(col[k], c->closing ?
						      "closing" : "attached");
		else
			rte_tel_data_add_array_u64(col[k], values[k]);
	}
}

static int
handle_clients(const char *cmd, const char *params, struct rte_tel_data *out)
{
	const struct rn_daemon *d = daemon_seen;
	struct rte_tel_data *col[N_CLIENT_COLUMNS] = { NULL };
	struct rn_client_info *infos;
	unsigned int n = 0, first, next;
	uint64_t start = 0;
	int rc = 0;

	(void)cmd;
	if (params != NULL && params[0] != '\0' &&
	    rn_telemetry_parse_u64(params, 0, UINT32_MAX, &start) != 0)
		return -EINVAL;
	if (d->clients == NULL)
		return -EINVAL;   /* [client] enabled = false: null */
	infos = malloc(sizeof(*infos) * d->cfg.client.max_clients);
	for (int k = 0; k < N_CLIENT_COLUMNS; k++) {
		col[k] = rte_tel_data_alloc();
		if (col[k] == NULL)
			rc = -ENOMEM;
	}
	if (infos == NULL || rc != 0) {
		for (int k = 0; k < N_CLIENT_COLUMNS; k++)
			rte_tel_data_free(col[k]);
		free(infos);
		return -ENOMEM;
	}
	n = rn_client_server_snapshot(d->clients, infos,
				      d->cfg.client.max_clients);
	first = RTE_MIN((unsigned int)start, n);
	next = RTE_MIN(n, first + CLIENTS_PAGE);
	rte_tel_data_start_dict(out);
	for (int k = 0; k < N_CLIENT_COLUMNS; k++)
		rte_tel_data_start_array(col[k], client_columns[k].type);
	for (unsigned int i = first; i < next; i++)
		add_client(col, &infos[i]);
	for (int k = 0; k < N_CLIENT_COLUMNS; k++)
		rte_tel_data_add_dict_container(out, client_columns[k].name,
						col[k], 0);
	rte_tel_data_add_dict_int(out, "next", (int)next);
	rte_tel_data_add_dict_int(out, "total", (int)n);
	free(infos);
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
	       rte_telemetry_register_cmd("/rnotify/clients", handle_clients,
		"Client processes attached (id, agent, pid, uid, since, "
		"counters), 32 from START. Parameter: START (default 0)") |
	       rte_telemetry_register_cmd("/rnotify/endpoint", handle_endpoint,
		"One endpoint: state, generation, peer session, counters, last "
		"error. Parameter: the peer's name") |
	       rn_telemetry_diag_register(d);
}
