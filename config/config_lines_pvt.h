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

#include <rte_common.h>
#include <stddef.h>

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

/* The file's bytes, read once; the scan and rte_cfgfile both see these. */
struct rn_config_text {
	char *bytes;
	size_t len;
};

/* What the loader reads: a size that no real configuration comes near
 * (2048 keys of full-length lines are 660 KB) and that bounds the read. */
#define RN_CONFIG_FILE_MAX 1048576
#define RN_CONFIG_FILE_ALLOWED \
	"allowed a regular file of at most " RTE_STR(RN_CONFIG_FILE_MAX) " bytes"

/*
 * Read path into text (free it with rn_config_file_free()). Returns 0, or
 * -errno with err saying why: it cannot be opened, it is not a regular file
 * (-EINVAL), or it is larger than RN_CONFIG_FILE_MAX (-EFBIG).
 */
int rn_config_file_read(const char *path, struct rn_config_text *text,
			struct rn_config_error *err);
void rn_config_file_free(struct rn_config_text *text);

/*
 * Scan text, read from path. A leading UTF-8 byte order mark is removed from
 * text. Returns 0, or -EINVAL with err naming the line.
 */
int rn_config_lines_scan(const char *path, struct rn_config_text *text,
			 struct rn_config_lines *lines,
			 struct rn_config_error *err);

#endif /* RN_CONFIG_LINES_H */
