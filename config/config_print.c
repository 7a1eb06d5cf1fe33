/* SPDX-License-Identifier: BSD-3-Clause */
/* The effective configuration, written back as an INI file. */
#include <errno.h>

#include "config_schema_pvt.h"
#include "rn_config.h"

static void
print_keys(const struct rn_config_section *section, const void *base,
	   FILE *out)
{
	char value[RN_CONFIG_ERROR_MAX];

	for (unsigned int k = 0; k < section->n_keys; k++) {
		const struct rn_config_key *key = &section->keys[k];

		rn_config_value_format(key, (const char *)base + key->offset,
				       value, sizeof(value));
		fprintf(out, "%s = %s\n", key->name, value);
	}
}

int
rn_config_print(const struct rn_config *cfg, FILE *out)
{
	for (unsigned int s = 0; s < rn_config_n_sections; s++) {
		const struct rn_config_section *section = &rn_config_sections[s];

		if (!section->per_peer) {
			fprintf(out, "%s[%s]\n", s == 0 ? "" : "\n",
				section->name);
			print_keys(section, (const char *)cfg + section->offset,
				   out);
			continue;
		}
		for (uint32_t p = 0; p < cfg->n_peers; p++) {
			fprintf(out, "\n[peer %s]\n", cfg->peers[p].name);
			print_keys(section, &cfg->peers[p], out);
		}
	}
	return ferror(out) ? -EIO : 0;
}
