/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CONFIG_SECRET_PVT_H
#define RN_CONFIG_SECRET_PVT_H

#include <stddef.h>

#include "rn_config.h"

/*
 * Load the secrets [control] secret_file and secret_file_next name into
 * c->secret and c->secret_len (none: lengths 0). Returns 0, or a negative
 * errno with why set: a file missing or unreadable, not a regular file,
 * readable by another user, shorter than RN_CONFIG_SECRET_MIN or longer
 * than RN_CONFIG_SECRET_MAX, or secret_file_next without secret_file.
 */
int rn_config_secrets_load(struct rn_control_config *c, char *why,
			   size_t why_len);

#endif /* RN_CONFIG_SECRET_PVT_H */
