/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CONFIG_SCHEMA_H
#define RN_CONFIG_SCHEMA_H

/*
 * The configuration schema: every section and key, its type, range and
 * default. The loader, the printer and the value parsers are driven by these
 * tables, so a key's limits live here and nowhere else.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum rn_config_type {
	RN_CFG_UINT,     /* decimal uint32_t in [min, max] */
	RN_CFG_POW2,     /* the same, and a power of two */
	RN_CFG_BOOL,     /* bool: 0, 1, true, false, on, off */
	RN_CFG_ENUM,     /* int: index into names */
	RN_CFG_NAME,     /* char[RN_CONFIG_NAME_MAX]: [A-Za-z0-9_-]+ */
	RN_CFG_TEXT,     /* char[RN_CONFIG_TEXT_MAX]: any non-empty text */
	RN_CFG_PATH,     /* char[RN_CONFIG_PATH_MAX]: a file name */
	RN_CFG_ADDRESS,  /* char[RN_CONFIG_TEXT_MAX]: IPv4 or IPv6 literal */
	RN_CFG_LCORES,   /* struct rn_lcore_list: "0-1", "0,2,4-5" */
	RN_CFG_CPUS,     /* struct rn_lcore_list: "0,1,1", or "" (count 0) */
	RN_CFG_MODE,     /* uint32_t: octal file mode 0..0777 */
	RN_CFG_GROUP,    /* struct rn_config_group: a group name or gid, "" */
	RN_CFG_ALLOW,    /* struct rn_config_allow: users, @groups, "" */
};

struct rn_config_key {
	const char *name;
	enum rn_config_type type;
	size_t offset;                /* of the field in its section's struct */
	uint32_t min, max;            /* RN_CFG_UINT, RN_CFG_POW2 */
	const char *const *names;     /* RN_CFG_ENUM, NULL-terminated */
	const char *default_value;    /* parsed like file input; NULL: required */
};

struct rn_config_section {
	const char *name;             /* "peer" stands for every [peer NAME] */
	size_t offset;                /* of its struct in struct rn_config */
	const struct rn_config_key *keys;
	unsigned int n_keys;
	bool per_peer;                /* repeated, one struct rn_peer_config each */
};

extern const struct rn_config_section rn_config_sections[];
extern const unsigned int rn_config_n_sections;

/* Section of that name, or NULL. */
const struct rn_config_section *rn_config_section_find(const char *name);

/* Key of that name in section, or NULL. */
const struct rn_config_key *rn_config_key_find(
	const struct rn_config_section *section, const char *name);

/*
 * Parse text into field as key describes. On failure returns -EINVAL and
 * writes "why; allowed ..." into why.
 */
int rn_config_value_parse(const struct rn_config_key *key, const char *text,
			  void *field, char *why, size_t why_len);

/* Booleans as the file and the environment write them: 0 1 true false on off. */
int rn_config_bool_parse(const char *text, bool *out);

/* A name: 1..RN_CONFIG_NAME_MAX-1 characters of [A-Za-z0-9_-]. */
bool rn_config_name_valid(const char *text);

/* Write field as the text rn_config_value_parse() reads back. */
void rn_config_value_format(const struct rn_config_key *key,
			    const void *field, char *buf, size_t len);

#endif /* RN_CONFIG_SCHEMA_H */
