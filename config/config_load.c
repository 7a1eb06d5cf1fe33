/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Loading: defaults, then the file through rte_cfgfile, then the environment.
 * All checks happen before anything else starts; the first failure stops the
 * load with one line in err.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <rte_cfgfile.h>
#include <rte_common.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "config_lines_pvt.h"
#include "config_schema_pvt.h"
#include "config_secret_pvt.h"
#include "rn_config.h"

#define MAX_KEYS_PER_SECTION 16

struct load {
	const char *path;
	struct rn_config *cfg;
	struct rn_config_error *err;
	struct rn_config_lines *lines;
	struct rte_cfgfile *file;
	int first_index[16]; /* file section index of each fixed section, or -1 */
	int peer_index[RN_CONFIG_MAX_PEERS];
};

__attribute__((format(printf, 3, 4))) static int
fail_at(struct load *ld, unsigned int line, const char *fmt, ...)
{
	size_t used = (size_t)snprintf(ld->err->text, sizeof(ld->err->text),
				       "%s:%u: ", ld->path, line);
	va_list ap;

	va_start(ap, fmt);
	if (used < sizeof(ld->err->text))
		vsnprintf(ld->err->text + used, sizeof(ld->err->text) - used,
			  fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void
apply_defaults(const struct rn_config_section *section, void *base)
{
	char why[RN_CONFIG_ERROR_MAX];

	for (unsigned int k = 0; k < section->n_keys; k++) {
		const struct rn_config_key *key = &section->keys[k];

		if (key->default_value != NULL)
			rn_config_value_parse(key, key->default_value,
					      (char *)base + key->offset, why,
					      sizeof(why));
	}
}

void
rn_config_defaults(struct rn_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (unsigned int s = 0; s < rn_config_n_sections; s++)
		if (!rn_config_sections[s].per_peer)
			apply_defaults(&rn_config_sections[s],
				       (char *)cfg + rn_config_sections[s].offset);
}

static void
list_sections(char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int s = 0; s < rn_config_n_sections && used < len; s++)
		used += (size_t)snprintf(buf + used, len - used, "%s[%s%s]",
					 s == 0 ? "" : ", ",
					 rn_config_sections[s].name,
					 rn_config_sections[s].per_peer ?
						 " NAME" : "");
}

static void
list_keys(const struct rn_config_section *section, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int k = 0; k < section->n_keys && used < len; k++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 k == 0 ? "" : ", ",
					 section->keys[k].name);
}

/*
 * "[peer NAME]": claims the next peer slot. Returns its struct or NULL with
 * the error set.
 */
static void *
open_peer(struct load *ld, int index, const char *header, unsigned int line)
{
	const char *name = header + strlen("peer");
	struct rn_config *cfg = ld->cfg;
	struct rn_peer_config *peer;

	while (*name == ' ' || *name == '\t')
		name++;
	if (!rn_config_name_valid(name)) {
		fail_at(ld, line, "[%s]: peer name '%s' is not valid; allowed "
			"[peer NAME] with NAME of 1 to 31 characters of "
			"A-Z a-z 0-9 _ -", header, name);
		return NULL;
	}
	for (uint32_t p = 0; p < cfg->n_peers; p++) {
		if (strcmp(cfg->peers[p].name, name) == 0) {
			fail_at(ld, line, "duplicate peer [peer %s] (first at "
				"line %u)", name,
				ld->lines->section[ld->peer_index[p]].line);
			return NULL;
		}
	}
	if (cfg->n_peers == RN_CONFIG_MAX_PEERS) {
		fail_at(ld, line, "too many peers; allowed at most %d",
			RN_CONFIG_MAX_PEERS);
		return NULL;
	}
	ld->peer_index[cfg->n_peers] = index;
	peer = &cfg->peers[cfg->n_peers++];
	apply_defaults(rn_config_section_find("peer"), peer);
	strcpy(peer->name, name);
	return peer;
}

/* Section of the file at index: its schema and the struct it fills. */
static const struct rn_config_section *
open_section(struct load *ld, int index, const char *header, void **base)
{
	unsigned int line = ld->lines->section[index].line;
	const struct rn_config_section *section;
	char allowed[256];

	if (strncmp(header, "peer", 4) == 0 &&
	    (header[4] == '\0' || header[4] == ' ' || header[4] == '\t')) {
		*base = open_peer(ld, index, header, line);
		return *base == NULL ? NULL : rn_config_section_find("peer");
	}
	section = rn_config_section_find(header);
	if (section == NULL) {
		list_sections(allowed, sizeof(allowed));
		fail_at(ld, line, "unknown section [%s]; allowed %s", header,
			allowed);
		return NULL;
	}
	if (ld->first_index[section - rn_config_sections] >= 0) {
		fail_at(ld, line, "duplicate section [%s] (first at line %u)",
			header,
			ld->lines->section[ld->first_index[section -
						rn_config_sections]].line);
		return NULL;
	}
	ld->first_index[section - rn_config_sections] = index;
	*base = (char *)ld->cfg + section->offset;
	return section;
}

static int
apply_entries(struct load *ld, int index, const char *header,
	      const struct rn_config_section *section, void *base,
	      const struct rte_cfgfile_entry *entries, int n)
{
	unsigned int first = ld->lines->section[index].first_entry;
	int seen_at[MAX_KEYS_PER_SECTION];
	char why[RN_CONFIG_ERROR_MAX / 2];

	for (unsigned int k = 0; k < section->n_keys; k++)
		seen_at[k] = -1;
	for (int e = 0; e < n; e++) {
		unsigned int line = ld->lines->entry_line[first + e];
		const struct rn_config_key *key =
			rn_config_key_find(section, entries[e].name);
		unsigned int k;

		if (key == NULL) {
			list_keys(section, why, sizeof(why));
			return fail_at(ld, line, "[%s] unknown key '%s'; "
				       "allowed %s", header, entries[e].name,
				       why);
		}
		k = (unsigned int)(key - section->keys);
		if (seen_at[k] >= 0)
			return fail_at(ld, line, "[%s] duplicate key '%s' "
				       "(first at line %u)", header, key->name,
				       ld->lines->entry_line[first + seen_at[k]]);
		seen_at[k] = e;
		if (rn_config_value_parse(key, entries[e].value,
					  (char *)base + key->offset, why,
					  sizeof(why)) != 0)
			return fail_at(ld, line, "[%s] %s = %s: %s", header,
				       key->name, entries[e].value, why);
	}
	for (unsigned int k = 0; k < section->n_keys; k++)
		if (section->keys[k].default_value == NULL && seen_at[k] < 0)
			return fail_at(ld, ld->lines->section[index].line,
				       "[%s] missing required key '%s'", header,
				       section->keys[k].name);
	return 0;
}

static int
apply_section(struct load *ld, int index)
{
	char header[CFG_NAME_LEN];
	int n = rte_cfgfile_section_num_entries_by_index(ld->file, header,
							 index);
	struct rte_cfgfile_entry *entries;
	const struct rn_config_section *section;
	void *base = NULL;
	int rc;

	section = open_section(ld, index, header, &base);
	if (section == NULL)
		return -EINVAL;
	entries = calloc((size_t)n + 1, sizeof(*entries));
	if (entries == NULL)
		return -ENOMEM;
	rte_cfgfile_section_entries_by_index(ld->file, index, header, entries,
					     n);
	rc = apply_entries(ld, index, header, section, base, entries, n);
	free(entries);
	return rc;
}

/* Equal as addresses, not as text: "::1" is "0::1". */
bool
rn_config_same_address(const char *a, const char *b)
{
	unsigned char x[sizeof(struct in6_addr)] = { 0 };
	unsigned char y[sizeof(struct in6_addr)] = { 0 };
	int fx = strchr(a, ':') != NULL ? AF_INET6 : AF_INET;
	int fy = strchr(b, ':') != NULL ? AF_INET6 : AF_INET;

	return fx == fy && inet_pton(fx, a, x) == 1 && inet_pton(fy, b, y) == 1 &&
	       memcmp(x, y, sizeof(x)) == 0;
}

/* A peer given at run time: the [peer NAME] section's own checks, by the
 * same schema keys, so that both accept exactly the same peers. */
int
rn_config_peer_check(const char *name, const char *address, uint32_t port,
		     char *why, size_t why_len)
{
	const struct rn_config_section *section = rn_config_section_find("peer");
	struct rn_peer_config peer;
	char detail[RN_CONFIG_ERROR_MAX], text[16];

	if (!rn_config_name_valid(name)) {
		snprintf(why, why_len, "peer name '%s' is not valid; allowed 1 "
			 "to 31 characters of A-Z a-z 0-9 _ -", name);
		return -EINVAL;
	}
	if (rn_config_value_parse(rn_config_key_find(section, "address"),
				  address, peer.address, detail,
				  sizeof(detail)) != 0) {
		snprintf(why, why_len, "[peer %s] address = %s: %s", name,
			 address, detail);
		return -EINVAL;
	}
	snprintf(text, sizeof(text), "%u", port);
	if (rn_config_value_parse(rn_config_key_find(section, "port"), text,
				  &peer.port, detail, sizeof(detail)) != 0) {
		snprintf(why, why_len, "[peer %s] port = %u: %s", name, port,
			 detail);
		return -EINVAL;
	}
	return 0;
}

/* Rules that span keys; checked once every section is in. */
static int
check_across(struct load *ld)
{
	const struct rn_config *cfg = ld->cfg;
	struct rn_config_error *err = ld->err;

	if (cfg->dataplane.cpus.count != 0 &&
	    cfg->dataplane.cpus.count != cfg->dataplane.lcores.count) {
		snprintf(err->text, sizeof(err->text), "%s: [dataplane] "
			 "cpus: %u CPU(s) for %u lcores; give one CPU per "
			 "lcore, in the order of lcores", ld->path,
			 cfg->dataplane.cpus.count,
			 cfg->dataplane.lcores.count);
		return -EINVAL;
	}
	if (cfg->control.dead_after_ms < 2 * cfg->control.heartbeat_ms) {
		snprintf(err->text, sizeof(err->text), "%s: [control] "
			 "dead_after_ms = %u: must be at least twice "
			 "heartbeat_ms (%u)", ld->path,
			 cfg->control.dead_after_ms, cfg->control.heartbeat_ms);
		return -EINVAL;
	}
	if (cfg->control.reconnect_min_ms > cfg->control.reconnect_max_ms) {
		snprintf(err->text, sizeof(err->text), "%s: [control] "
			 "reconnect_min_ms = %u: must be at most "
			 "reconnect_max_ms (%u)", ld->path,
			 cfg->control.reconnect_min_ms,
			 cfg->control.reconnect_max_ms);
		return -EINVAL;
	}
	if (cfg->notify.max_inline > cfg->notify.slot_size - 8) {
		snprintf(err->text, sizeof(err->text), "%s: [notify] "
			 "max_inline = %u: must be at most slot_size - 8 (%u)",
			 ld->path, cfg->notify.max_inline,
			 cfg->notify.slot_size - 8);
		return -EINVAL;
	}
	if (cfg->client.enabled &&
	    cfg->dataplane.lcores.count - 1 > RN_CONFIG_CLIENT_MAX_WORKERS) {
		snprintf(err->text, sizeof(err->text), "%s: [client] enabled: "
			 "%u worker lcores; clients can talk to at most %d: "
			 "give [dataplane] lcores fewer, or set [client] "
			 "enabled = false", ld->path,
			 cfg->dataplane.lcores.count - 1,
			 RN_CONFIG_CLIENT_MAX_WORKERS);
		return -EINVAL;
	}
	if (cfg->client.xfer_slot_size % 64 != 0) {
		snprintf(err->text, sizeof(err->text), "%s: [client] "
			 "xfer_slot_size = %u: must be a multiple of 64",
			 ld->path, cfg->client.xfer_slot_size);
		return -EINVAL;
	}
	if (cfg->client.socket[0] != '\0' &&
	    (cfg->client.socket[0] != '/' ||
	     strlen(cfg->client.socket) >= RN_CONFIG_SOCKET_PATH_MAX)) {
		snprintf(err->text, sizeof(err->text), "%s: [client] socket = "
			 "%s: %s; allowed an absolute path of at most %d "
			 "characters, or empty for the default", ld->path,
			 cfg->client.socket, cfg->client.socket[0] != '/' ?
			 "not an absolute path" : "too long",
			 RN_CONFIG_SOCKET_PATH_MAX - 1);
		return -EINVAL;
	}
	for (uint32_t a = 0; a < cfg->n_peers; a++)
		if (strcmp(cfg->peers[a].name, cfg->dataplane.name) == 0)
			return fail_at(ld,
				ld->lines->section[ld->peer_index[a]].line,
				"[peer %s]: that is this node's own name "
				"([dataplane] name); notifications to itself "
				"need no [peer] section", cfg->peers[a].name);
	for (uint32_t a = 0; a < cfg->n_peers; a++)
		for (uint32_t b = 0; b < a; b++)
			if (rn_config_same_address(cfg->peers[a].address,
					 cfg->peers[b].address) &&
			    cfg->peers[a].port == cfg->peers[b].port)
				return fail_at(ld,
					ld->lines->section[ld->peer_index[a]].line,
					"[peer %s] duplicate peer: %s port %u "
					"is already [peer %s]",
					cfg->peers[a].name, cfg->peers[a].address,
					cfg->peers[a].port, cfg->peers[b].name);
	return 0;
}

static int
apply_env(const char *var, bool *field, struct rn_config_error *err)
{
	const char *value = getenv(var);

	if (value == NULL || rn_config_bool_parse(value, field) == 0)
		return 0;
	snprintf(err->text, sizeof(err->text), "environment %s=%s: not a "
		 "boolean; allowed 0, 1, true, false, on, off", var, value);
	return -EINVAL;
}

/*
 * rte_cfgfile reads only from a path. It gets the bytes the scan checked,
 * through a memory file: reading path again could see another file, or a
 * FIFO put there meanwhile.
 */
static struct rte_cfgfile *
load_cfgfile(const struct rn_config_text *text,
	     const struct rte_cfgfile_parameters *params)
{
	struct rte_cfgfile *file = NULL;
	char proc_path[64];
	size_t done = 0;
	int fd = memfd_create("rnotifyd-config", MFD_CLOEXEC);

	if (fd < 0)
		return NULL;
	while (done < text->len) {
		ssize_t n = write(fd, text->bytes + done, text->len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			goto close_fd;
		done += (size_t)n;
	}
	snprintf(proc_path, sizeof(proc_path), "/proc/self/fd/%d", fd);
	/* Empty values are ours to report, with the key's allowed forms. */
	file = rte_cfgfile_load_with_params(proc_path, CFG_FLAG_EMPTY_VALUES,
					    params);
close_fd:
	close(fd);
	return file;
}

int
rn_config_load(const char *path, struct rn_config *cfg,
	       struct rn_config_error *err)
{
	static const struct rte_cfgfile_parameters params = {
		.comment_character = CFG_DEFAULT_COMMENT_CHARACTER,
	};
	struct load ld = { .path = path, .cfg = cfg, .err = err };
	struct rn_config_text text;
	int rc;

	rn_config_defaults(cfg);
	for (unsigned int s = 0; s < RTE_DIM(ld.first_index); s++)
		ld.first_index[s] = -1;
	ld.lines = malloc(sizeof(*ld.lines));
	if (ld.lines == NULL)
		return -ENOMEM;
	rc = rn_config_file_read(path, &text, err);
	if (rc != 0)
		goto free_lines;
	rc = rn_config_lines_scan(path, &text, ld.lines, err);
	if (rc != 0)
		goto free_text;
	ld.file = load_cfgfile(&text, &params);
	if (ld.file == NULL) {
		snprintf(err->text, sizeof(err->text),
			 "cannot read config file '%s': rte_cfgfile failed",
			 path);
		rc = -EIO;
		goto free_text;
	}
	for (int i = 0; rc == 0 && i < rte_cfgfile_num_sections(ld.file, NULL, 0);
	     i++)
		rc = apply_section(&ld, i);
	if (rc == 0)
		rc = check_across(&ld);
	if (rc == 0) {
		char why[RN_CONFIG_ERROR_MAX - 64];

		rc = rn_config_secrets_load(&cfg->control, why, sizeof(why));
		if (rc != 0)
			snprintf(err->text, sizeof(err->text), "%s: %s", path,
				 why);
	}
	if (rc == 0)
		rc = apply_env(RN_ENV_NOTIFY_ENABLED, &cfg->notify.enabled, err);
	if (rc == 0)
		rc = apply_env(RN_ENV_NOTIFY_OOB_FALLBACK,
			       &cfg->notify.oob_fallback, err);
	rte_cfgfile_close(ld.file);
free_text:
	rn_config_file_free(&text);
free_lines:
	free(ld.lines);
	return rc;
}
