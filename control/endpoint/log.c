/* SPDX-License-Identifier: BSD-3-Clause */
/* The control plane's log type, which every layer of it logs to. */
#include <rte_log.h>

#include "log_pvt.h"

RTE_LOG_REGISTER_SUFFIX(rn_plane_logtype, endpoint, INFO);
