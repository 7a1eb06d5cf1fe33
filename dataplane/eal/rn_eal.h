/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_EAL_H
#define RN_EAL_H

/*
 * EAL bring-up. The EAL argument list is derived from the configuration
 * (never passed through by the user): lcores, memory, hugepages or ordinary
 * memory, and a file prefix of our own so several rnotifyd run side by side.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_config.h"

#define RN_EAL_MAX_ARGS 24
#define RN_EAL_FILE_PREFIX "rnotify-"

/* Whether this process can back memory_mb with hugepages, and why not. */
struct rn_hugepages_probe {
	bool usable;
	uint64_t page_size;      /* bytes, default hugepage size */
	uint64_t free_pages;
	char reason[160];        /* set when !usable */
};

/*
 * Look at /proc/meminfo and the process's privileges: hugepages are usable
 * when enough of the default size are free for need_bytes and we are root.
 */
void rn_hugepages_probe(uint64_t need_bytes, struct rn_hugepages_probe *out);

struct rn_eal_args {
	int argc;
	char *argv[RN_EAL_MAX_ARGS + 1];
	bool hugepages;          /* the chosen backing */
	char storage[2048];      /* the argument strings */
};

/*
 * Build the EAL arguments for cfg. hugepages = on without usable hugepages
 * is an error (-ENOMEM, err says why); auto falls back to ordinary memory.
 */
int rn_eal_args_build(const struct rn_config *cfg,
		      const struct rn_hugepages_probe *probe, const char *prog,
		      struct rn_eal_args *args, struct rn_config_error *err);

/*
 * Probe, build the arguments and call rte_eal_init. Logs which memory was
 * chosen and why. Returns 0, or a negative errno with err set.
 */
int rn_eal_start(const struct rn_config *cfg, const char *prog,
		 bool *hugepages, struct rn_config_error *err);

/* Undo rn_eal_start. */
void rn_eal_stop(void);

#endif /* RN_EAL_H */
