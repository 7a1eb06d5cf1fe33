/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CONFIG_LINES_H
#define RN_CONFIG_LINES_H

/*
 * rte_cfgfile keeps no line numbers and silently skips lines it does not
 * understand. This pre-pass classifies every line the way rte_cfgfile does,
 * rejects what it would skip or truncate, and records where each section
 * header and entry is, in rte_cfgfile's own index order, so that errors can
 * name the line.
 */

#include "rn_config.h"

#define RN_CONFIG_MAX_SECTIONS (RN_CONFIG_MAX_PEERS + 16)
#define RN_CONFIG_MAX_ENTRIES 2048

struct rn_config_lines {
	unsigned int n_sections;
	unsigned int n_entries;
	struct {
		unsigned int line;         /* of the [header] */
		unsigned int first_entry;  /* index into entry_line */
	} section[RN_CONFIG_MAX_SECTIONS];
	unsigned int entry_line[RN_CONFIG_MAX_ENTRIES];
};

/*
 * Scan path. Returns 0, -errno when it cannot be read, or -EINVAL with
 * err naming the line.
 */
int rn_config_lines_scan(const char *path, struct rn_config_lines *lines,
			 struct rn_config_error *err);

#endif /* RN_CONFIG_LINES_H */
