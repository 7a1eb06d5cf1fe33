/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Telemetry commands, served by DPDK's telemetry threads (one per client) on
 * the socket that dpdk-telemetry.py reads (-f rnotify-<name>). They only
 * read: the configuration and the worker list (complete before the commands
 * are registered, immutable after), the daemon state (atomic) and the
 * lcores' counters (relaxed loads of single-writer fields).
 */
#include <errno.h>
#include <rte_common.h>
#include <rte_telemetry.h>
#include <stddef.h>
#include <unistd.h>

#include "rn_daemon.h"
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
	add_workers(out, d);
	return 0;
}

int
rn_telemetry_register(const struct rn_daemon *d)
{
	daemon_seen = d;
	return rte_telemetry_register_cmd("/rnotify/status", handle_status,
		"rnotifyd status: version, state, provider, lcores, uptime, "
		"counters. No parameters");
}
