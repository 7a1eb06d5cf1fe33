/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Value parsers and formatters, one pair per schema type. A parser either
 * stores a valid value or explains, as "why; allowed ...", what it expected.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config_schema_pvt.h"
#include "rn_config.h"

#define BOOL_ALLOWED "allowed 0, 1, true, false, on, off"
#define NAME_ALLOWED "allowed 1 to 31 characters of A-Z a-z 0-9 _ -"
#define ADDRESS_ALLOWED "allowed an IPv4 or IPv6 literal such as 127.0.0.1 or ::1"
#define LCORES_ALLOWED \
	"allowed ascending lcore ids 0..127 as 'A', 'A-B' or a comma list " \
	"of those, at least 2 (the first runs the control thread)"
#define CPUS_ALLOWED \
	"allowed CPU ids 0..1023 as 'A', 'A-B' or a comma list of those, " \
	"repeats allowed, one per lcore in the order of lcores; or empty"

#define MODE_ALLOWED "allowed an octal file mode 0000..0777 such as 0660"
#define GROUP_ALLOWED "allowed a group name or gid, or empty for none"
#define ALLOW_ALLOWED \
	"allowed a comma list of user names or uids and @group names or " \
	"@gids, at most 32, or empty (the daemon's own user only)"

/* Strict decimal: digits only, no sign, no spaces, no trailing junk. */
static int
parse_decimal(const char *text, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (*text == '\0')
		return -EINVAL;
	for (const char *p = text; *p != '\0'; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > max)
			return -ERANGE;
	}
	*out = v;
	return 0;
}

static int
parse_uint(const struct rn_config_key *key, const char *text, uint32_t *field,
	   char *why, size_t len)
{
	uint64_t v;
	int rc = parse_decimal(text, key->max, &v);

	if (rc == 0 && v < key->min)
		rc = -ERANGE;
	if (rc != 0) {
		snprintf(why, len, "%s; allowed %u..%u",
			 rc == -ERANGE ? "out of range" : "not a decimal number",
			 key->min, key->max);
		return -EINVAL;
	}
	*field = (uint32_t)v;
	return 0;
}

/* A power of two in [min, max], both powers of two themselves (the
 * message lists min, 2 min, 4 min, .., max). */
static int
parse_pow2(const struct rn_config_key *key, const char *text,
	   uint32_t *field, char *why, size_t len)
{
	uint64_t v;
	int rc = parse_decimal(text, key->max, &v);

	if (rc == 0 && v < key->min)
		rc = -ERANGE;
	if (rc == 0 && (v & (v - 1)) != 0)
		rc = -EDOM;
	if (rc != 0) {
		snprintf(why, len, "%s; allowed %u, %u, %u, .., %u",
			 rc == -ERANGE ? "out of range" :
			 rc == -EDOM ? "not a power of two" :
				       "not a decimal number",
			 key->min, 2 * key->min, 4 * key->min, key->max);
		return -EINVAL;
	}
	*field = (uint32_t)v;
	return 0;
}

int
rn_config_bool_parse(const char *text, bool *out)
{
	static const char *const yes[] = { "1", "true", "on" };
	static const char *const no[] = { "0", "false", "off" };

	for (unsigned int i = 0; i < 3; i++) {
		if (strcmp(text, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcmp(text, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int
parse_enum(const struct rn_config_key *key, const char *text, int *field,
	   char *why, size_t len)
{
	size_t used;

	for (int i = 0; key->names[i] != NULL; i++) {
		if (strcmp(text, key->names[i]) == 0) {
			*field = i;
			return 0;
		}
	}
	used = (size_t)snprintf(why, len, "unknown value; allowed");
	for (int i = 0; key->names[i] != NULL && used < len; i++)
		used += (size_t)snprintf(why + used, len - used, "%s %s",
					 i == 0 ? "" : ",", key->names[i]);
	return -EINVAL;
}

bool
rn_config_name_valid(const char *text)
{
	size_t n = strlen(text);

	if (n == 0 || n >= RN_CONFIG_NAME_MAX)
		return false;
	return strspn(text, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789_-") == n;
}

static int
parse_text(const char *text, char *field, char *why, size_t len)
{
	if (*text == '\0' || strlen(text) >= RN_CONFIG_TEXT_MAX) {
		snprintf(why, len, "%s; allowed 1 to %d characters",
			 *text == '\0' ? "empty value" : "too long",
			 RN_CONFIG_TEXT_MAX - 1);
		return -EINVAL;
	}
	strcpy(field, text);
	return 0;
}

/* "" is allowed: no file. */
static int
parse_path(const char *text, char *field, char *why, size_t len)
{
	if (strlen(text) >= RN_CONFIG_PATH_MAX) {
		snprintf(why, len, "too long; allowed up to %d characters",
			 RN_CONFIG_PATH_MAX - 1);
		return -EINVAL;
	}
	strcpy(field, text);
	return 0;
}

static int
parse_address(const char *text, char *field, char *why, size_t len)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, text, buf) != 1 &&
	    inet_pton(AF_INET6, text, buf) != 1) {
		snprintf(why, len, "not an IP address; " ADDRESS_ALLOWED);
		return -EINVAL;
	}
	strcpy(field, text); /* inet_pton bounds it below INET6_ADDRSTRLEN */
	return 0;
}

/*
 * "A", "A-B", comma separated, ids up to max_id, at most
 * RN_CONFIG_MAX_LCORES of them. ascending: each id above the one before
 * (lcores); else any order, repeats allowed (cpus), and "" is no list.
 */
static int
parse_id_list(const char *text, uint64_t max_id, bool ascending,
	      struct rn_lcore_list *field)
{
	struct rn_lcore_list list = { .count = 0 };
	char copy[RN_CONFIG_TEXT_MAX * 4];
	char *save = NULL;
	uint64_t next_min = 0;

	if (strlen(text) >= sizeof(copy))
		return -EINVAL;
	strcpy(copy, text);
	if (copy[0] == '\0') {
		*field = list;
		return ascending ? -EINVAL : 0;
	}
	if (copy[0] == ',' || copy[strlen(copy) - 1] == ',' ||
	    strstr(copy, ",,") != NULL)
		return -EINVAL;
	for (char *item = strtok_r(copy, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(item, '-');
		uint64_t lo, hi;

		if (dash != NULL)
			*dash = '\0';
		if (parse_decimal(item, max_id, &lo) != 0)
			return -EINVAL;
		hi = lo;
		if (dash != NULL && parse_decimal(dash + 1, max_id, &hi) != 0)
			return -EINVAL;
		if (hi < lo || (ascending && lo < next_min) ||
		    list.count + (hi - lo) >= RN_CONFIG_MAX_LCORES)
			return -EINVAL;
		for (uint64_t id = lo; id <= hi; id++)
			list.ids[list.count++] = (uint16_t)id;
		next_min = hi + 1;
	}
	*field = list;
	return 0;
}

/* The lcore ids: strictly ascending, at least 2. */
static int
parse_lcores(const char *text, struct rn_lcore_list *field)
{
	struct rn_lcore_list list;

	if (parse_id_list(text, RN_CONFIG_MAX_LCORES - 1, true, &list) != 0 ||
	    list.count < 2)
		return -EINVAL;
	*field = list;
	return 0;
}

/* Strict octal, as chmod writes it: "660", "0660". */
static int
parse_mode(const char *text, uint32_t *field, char *why, size_t len)
{
	uint32_t v = 0;
	size_t n = strlen(text);

	if (n == 0 || n > 4 || strspn(text, "01234567") != n) {
		snprintf(why, len, "not a file mode; " MODE_ALLOWED);
		return -EINVAL;
	}
	for (const char *p = text; *p != '\0'; p++)
		v = v * 8 + (uint32_t)(*p - '0');
	if (v > 0777) {
		snprintf(why, len, "out of range; " MODE_ALLOWED);
		return -EINVAL;
	}
	*field = v;
	return 0;
}

/* The gid of a group name or number; -ENOENT when no such group. */
static int
group_id(const char *text, uint32_t *gid)
{
	char buf[4096];
	struct group gr, *found = NULL;
	uint64_t v;

	if (parse_decimal(text, UINT32_MAX - 1, &v) == 0) {
		*gid = (uint32_t)v;
		return 0;
	}
	if (getgrnam_r(text, &gr, buf, sizeof(buf), &found) != 0 ||
	    found == NULL)
		return -ENOENT;
	*gid = (uint32_t)found->gr_gid;
	return 0;
}

static int
user_id(const char *text, uint32_t *uid)
{
	char buf[4096];
	struct passwd pw, *found = NULL;
	uint64_t v;

	if (parse_decimal(text, UINT32_MAX - 1, &v) == 0) {
		*uid = (uint32_t)v;
		return 0;
	}
	if (getpwnam_r(text, &pw, buf, sizeof(buf), &found) != 0 ||
	    found == NULL)
		return -ENOENT;
	*uid = (uint32_t)found->pw_uid;
	return 0;
}

static int
parse_group(const char *text, struct rn_config_group *field, char *why,
	    size_t len)
{
	struct rn_config_group g;

	memset(&g, 0, sizeof(g));
	if (strlen(text) >= sizeof(g.text)) {
		snprintf(why, len, "too long; " GROUP_ALLOWED);
		return -EINVAL;
	}
	if (text[0] != '\0' && group_id(text, &g.gid) != 0) {
		snprintf(why, len, "no such group; " GROUP_ALLOWED);
		return -EINVAL;
	}
	g.set = text[0] != '\0';
	strcpy(g.text, text);
	*field = g;
	return 0;
}

/* "alice, 1001, @gpu, @1002": users and @groups, spaces around items. */
static int
parse_allow(const char *text, struct rn_config_allow *field, char *why,
	    size_t len)
{
	struct rn_config_allow a;
	char copy[RN_CONFIG_PATH_MAX];
	char *save = NULL;

	memset(&a, 0, sizeof(a));
	if (strlen(text) >= sizeof(copy)) {
		snprintf(why, len, "too long; " ALLOW_ALLOWED);
		return -EINVAL;
	}
	strcpy(copy, text);
	strcpy(a.text, text);
	if (copy[0] != '\0' && (copy[strlen(copy) - 1] == ',' ||
				strstr(copy, ",,") != NULL || copy[0] == ',')) {
		snprintf(why, len, "empty item; " ALLOW_ALLOWED);
		return -EINVAL;
	}
	for (char *item = strtok_r(copy, ",", &save); item != NULL;
	     item = strtok_r(NULL, ",", &save)) {
		bool group;
		int rc;

		while (*item == ' ' || *item == '\t')
			item++;
		for (size_t n = strlen(item);
		     n > 0 && (item[n - 1] == ' ' || item[n - 1] == '\t'); n--)
			item[n - 1] = '\0';
		group = item[0] == '@';
		if (a.count == RN_CONFIG_ALLOW_MAX) {
			snprintf(why, len, "too many items; " ALLOW_ALLOWED);
			return -EINVAL;
		}
		rc = item[group] == '\0' ? -EINVAL :
		     group ? group_id(item + 1, &a.entry[a.count].id) :
			     user_id(item, &a.entry[a.count].id);
		if (rc != 0) {
			snprintf(why, len, "%s '%s'; " ALLOW_ALLOWED,
				 item[group] == '\0' ? "empty item" :
				 group ? "no such group" : "no such user",
				 item + group);
			return -EINVAL;
		}
		a.entry[a.count++].group = group;
	}
	*field = a;
	return 0;
}

int
rn_config_value_parse(const struct rn_config_key *key, const char *text,
		      void *field, char *why, size_t why_len)
{
	switch (key->type) {
	case RN_CFG_UINT:
		return parse_uint(key, text, field, why, why_len);
	case RN_CFG_POW2:
		return parse_pow2(key, text, field, why, why_len);
	case RN_CFG_BOOL:
		if (rn_config_bool_parse(text, field) == 0)
			return 0;
		snprintf(why, why_len, "not a boolean; " BOOL_ALLOWED);
		return -EINVAL;
	case RN_CFG_ENUM:
		return parse_enum(key, text, field, why, why_len);
	case RN_CFG_NAME:
		if (rn_config_name_valid(text)) {
			strcpy(field, text);
			return 0;
		}
		snprintf(why, why_len, "not a valid name; " NAME_ALLOWED);
		return -EINVAL;
	case RN_CFG_TEXT:
		return parse_text(text, field, why, why_len);
	case RN_CFG_PATH:
		return parse_path(text, field, why, why_len);
	case RN_CFG_ADDRESS:
		return parse_address(text, field, why, why_len);
	case RN_CFG_LCORES:
		if (parse_lcores(text, field) == 0)
			return 0;
		snprintf(why, why_len, "not an lcore list; " LCORES_ALLOWED);
		return -EINVAL;
	case RN_CFG_CPUS:
		if (parse_id_list(text, RN_CONFIG_MAX_CPU, false, field) == 0)
			return 0;
		snprintf(why, why_len, "not a CPU list; " CPUS_ALLOWED);
		return -EINVAL;
	case RN_CFG_MODE:
		return parse_mode(text, field, why, why_len);
	case RN_CFG_GROUP:
		return parse_group(text, field, why, why_len);
	case RN_CFG_ALLOW:
		return parse_allow(text, field, why, why_len);
	}
	return -EINVAL;
}

/* Print an lcore list compactly, merging runs into ranges: "0-3,6". */
static void
format_lcores(const struct rn_lcore_list *list, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < list->count && used < len;) {
		uint32_t j = i;

		while (j + 1 < list->count && list->ids[j + 1] == list->ids[j] + 1)
			j++;
		used += (size_t)snprintf(buf + used, len - used, "%s%u",
					 i == 0 ? "" : ",", list->ids[i]);
		if (j > i && used < len)
			used += (size_t)snprintf(buf + used, len - used, "-%u",
						 list->ids[j]);
		i = j + 1;
	}
}

void
rn_config_value_format(const struct rn_config_key *key, const void *field,
		       char *buf, size_t len)
{
	switch (key->type) {
	case RN_CFG_UINT:
	case RN_CFG_POW2:
		snprintf(buf, len, "%u", *(const uint32_t *)field);
		return;
	case RN_CFG_BOOL:
		snprintf(buf, len, "%s", *(const bool *)field ? "true" : "false");
		return;
	case RN_CFG_ENUM:
		snprintf(buf, len, "%s", key->names[*(const int *)field]);
		return;
	case RN_CFG_NAME:
	case RN_CFG_TEXT:
	case RN_CFG_PATH:
	case RN_CFG_ADDRESS:
		snprintf(buf, len, "%s", (const char *)field);
		return;
	case RN_CFG_LCORES:
	case RN_CFG_CPUS:
		format_lcores(field, buf, len);
		return;
	case RN_CFG_MODE:
		snprintf(buf, len, "%04o", *(const uint32_t *)field);
		return;
	case RN_CFG_GROUP:
		snprintf(buf, len, "%s",
			 ((const struct rn_config_group *)field)->text);
		return;
	case RN_CFG_ALLOW:
		snprintf(buf, len, "%s",
			 ((const struct rn_config_allow *)field)->text);
		return;
	}
}
