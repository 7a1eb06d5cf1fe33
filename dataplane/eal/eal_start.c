/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <sched.h>
#include <inttypes.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_log.h>
#include <stdio.h>
#include <string.h>

#include "rn_eal.h"

RTE_LOG_REGISTER_SUFFIX(rn_eal_logtype, eal, INFO);
#define RN_EAL_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_eal_logtype, "rnotify.eal: " fmt "\n", \
		##__VA_ARGS__)

/* Every lcore needs its CPU: [dataplane] cpus, or lcore N's is CPU N. */
static int
check_cpus(const struct rn_dataplane_config *dp, struct rn_config_error *err)
{
	const struct rn_lcore_list *cpus = dp->cpus.count != 0 ? &dp->cpus :
					   &dp->lcores;
	cpu_set_t allowed;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		return 0;   /* let EAL decide */
	for (uint32_t i = 0; i < cpus->count; i++) {
		if (!CPU_ISSET(cpus->ids[i], &allowed)) {
			snprintf(err->text, sizeof(err->text),
				 "[dataplane] %s: CPU %u is not available "
				 "to this process (%d CPUs available)",
				 dp->cpus.count != 0 ? "cpus" : "lcores",
				 cpus->ids[i], CPU_COUNT(&allowed));
			return -EINVAL;
		}
	}
	return 0;
}

int
rn_eal_start(const struct rn_config *cfg, const char *prog, bool *hugepages,
	     struct rn_config_error *err)
{
	struct rn_hugepages_probe probe;
	struct rn_eal_args args;
	int rc;

	rc = check_cpus(&cfg->dataplane, err);
	if (rc != 0)
		return rc;
	rn_hugepages_probe((uint64_t)cfg->dataplane.memory_mb << 20, &probe);
	rc = rn_eal_args_build(cfg, &probe, prog, &args, err);
	if (rc != 0)
		return rc;
	if (rte_eal_init(args.argc, args.argv) < 0) {
		snprintf(err->text, sizeof(err->text),
			 "EAL initialisation failed: %s",
			 rte_strerror(rte_errno));
		return -rte_errno;
	}
	if (args.hugepages)
		RN_EAL_LOG(INFO, "memory: %u MiB of %" PRIu64 " KiB hugepages",
			   cfg->dataplane.memory_mb, probe.page_size / 1024);
	else if (cfg->dataplane.hugepages == RN_HUGEPAGES_OFF)
		RN_EAL_LOG(INFO, "memory: %u MiB of ordinary memory "
			   "(hugepages = off)", cfg->dataplane.memory_mb);
	else
		RN_EAL_LOG(NOTICE, "memory: %u MiB of ordinary memory, "
			   "hugepages unavailable: %s",
			   cfg->dataplane.memory_mb, probe.reason);
	*hugepages = args.hugepages;
	return 0;
}

void
rn_eal_stop(void)
{
	rte_eal_cleanup();
}
