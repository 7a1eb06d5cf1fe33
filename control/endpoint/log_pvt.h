/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PLANE_LOG_PVT_H
#define RN_PLANE_LOG_PVT_H

/* The control plane's log type (registered in log.c), for every layer. */

#include <rte_log.h>

extern int rn_plane_logtype;
#define RN_PLANE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_##level, rn_plane_logtype, "rnotify.endpoint: " fmt "\n", \
		##__VA_ARGS__)

#endif /* RN_PLANE_LOG_PVT_H */
