/* SPDX-License-Identifier: BSD-3-Clause */
/* Setting up and tearing down a worker lcore: control thread only. */
#include <errno.h>
#include <inttypes.h>
#include <rte_cycles.h>
#include <rte_errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "lcore_pvt.h"
#include "rn_lcore_xfer.h"
#include "rn_notify_engine.h"

RTE_LOG_REGISTER_SUFFIX(rn_lcore_logtype, lcore, INFO);

/*
 * Let the NIC's descriptors (the sim's wires) end an adaptive sleep. A NIC
 * without them (mlx5: no completion channel is armed) cannot: a completion
 * that comes while the worker sleeps waits for the end of the sleep.
 */
static int
watch_nic(struct rn_lcore *lc)
{
	int fds[4];
	int n = lc->nic->ops->wait_fds != NULL ?
		lc->nic->ops->wait_fds(lc->nic, fds, RTE_DIM(fds)) : 0;

	if (n == 0 && lc->idle == RN_IDLE_ADAPTIVE)
		RN_LCORE_LOG(WARNING, "lcore %u: idle = adaptive, and the NIC "
			     "cannot wake a sleeping worker: what arrives "
			     "meanwhile waits up to idle_sleep_us = %u us; "
			     "idle = busy never sleeps", lc->lcore_id,
			     lc->idle_sleep_us);
	for (int i = 0; i < n; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.fd = fds[i] };

		if (epoll_ctl(lc->epoll_fd, EPOLL_CTL_ADD, fds[i], &ev) != 0)
			return -errno;
	}
	return 0;
}

/*
 * Without its buffers an lcore still runs: its endpoints simply have no
 * native notification channel (the fallback rules apply).
 */
static void
open_notify_region(struct rn_lcore *lc, const struct rn_notify_config *nc)
{
	int rc = rn_notify_region_create(lc->nic, nc->endpoints_per_lcore,
					 nc->slots, nc->slot_size, &lc->notify);

	if (rc != 0)
		RN_LCORE_LOG(WARNING, "lcore %u: no notification buffers (%u x "
			     "2 x %u slots of %u bytes: %s%s): its endpoints "
			     "get no native channel", lc->lcore_id,
			     nc->endpoints_per_lcore, nc->slots, nc->slot_size,
			     strerror(-rc), rc == -ENOMEM ?
			     "; they come from [dataplane] memory_mb, and "
			     "registering them pins them within the memlock "
			     "limit, ulimit -l, unless root" : "");
}

/*
 * An endpoint's QPs reserve their CQEs on one CQ ([nic] cq_size; the
 * device may make it larger). When its data QPs never fit one, no
 * endpoint could open: the start fails. When its notify QP never fits
 * with them, no endpoint gets a native channel (each counts in
 * no_cq_room): said once, here.
 */
static int
check_cq_room(const struct rn_lcore *lc, const struct rn_config *cfg,
	      char *why, size_t why_len)
{
	const struct rn_ep_request req = { .n_data_qps = cfg->nic.data_qps,
					   .notify_depth = cfg->notify.slots };
	struct rn_qp_caps data = rn_lcore_qp_caps(lc, &req, RN_EP_QP_DATA);
	struct rn_qp_caps notify = rn_lcore_qp_caps(lc, &req,
						       RN_EP_QP_NOTIFY);
	uint64_t data_need = (uint64_t)req.n_data_qps * rn_qp_cqes(&data);
	uint64_t need = data_need + rn_qp_cqes(&notify);

	if (data_need > lc->cq_cqes) {
		snprintf(why, why_len, "[nic] cq_size = %u: a CQ of %u CQEs "
			 "cannot hold an endpoint's %u data QPs (%" PRIu64
			 " CQEs): no endpoint could open; cq_size must be at "
			 "least %" PRIu64, cfg->nic.cq_size, lc->cq_cqes,
			 req.n_data_qps, data_need, data_need);
		return -EINVAL;
	}
	if (lc->notify.base != NULL && need > lc->cq_cqes)
		RN_LCORE_LOG(WARNING, "lcore %u: an endpoint with a native "
			     "channel needs %" PRIu64 " CQEs, more than a CQ of "
			     "[nic] cq_size = %u holds (%u): its endpoints get "
			     "none; raise cq_size to %" PRIu64 " or lower "
			     "[notify] slots or max_inline", lc->lcore_id, need,
			     cfg->nic.cq_size, lc->cq_cqes, need);
	return 0;
}

int
rn_lcore_cq_grow(struct rn_lcore *lc)
{
	int rc;

	if (lc->n_cqs >= lc->max_cqs)
		return -ENOSPC;
	rc = rn_nic_cq_create(lc->nic, lc->cq_size, lc->qps,
			      &lc->cqs[lc->n_cqs].cq);
	if (rc != 0)
		return rc;
	lc->cqs[lc->n_cqs].reserved = 0;
	lc->n_cqs++;
	rn_lcore_count(&lc->stats.cqs, 1);
	return 0;
}

static void
destroy_cqs(struct rn_lcore *lc)
{
	while (lc->n_cqs > 0)
		rn_nic_cq_destroy(lc->nic, &lc->cqs[--lc->n_cqs].cq);
}

static struct rte_ring *
notify_ring(const char *what, unsigned int lcore_id, size_t elem,
	    unsigned int count, unsigned int flags)
{
	char name[RTE_RING_NAMESIZE];

	snprintf(name, sizeof(name), "rn_%s_%u", what, lcore_id);
	return rte_ring_create_elem(name, (unsigned int)elem, count,
				    SOCKET_ID_ANY, flags | RING_F_EXACT_SZ);
}

/* Deliveries hold a receive slot each: room for all of them, never full. */
static int
create_notify_rings(struct rn_lcore *lc, const struct rn_notify_config *nc)
{
	unsigned int slots = lc->notify.base != NULL ?
		lc->notify.n_bays * lc->notify.slots : 1;

	lc->notify_fallback = nc->oob_fallback;
	lc->max_inline = (uint32_t)rn_notify_frame_size(0, nc->max_inline);
	lc->notify_requests = notify_ring("req", lc->lcore_id, sizeof(void *),
					  RN_LCORE_RING_SIZE, RING_F_SC_DEQ);
	lc->notify_deliveries = notify_ring("dlv", lc->lcore_id,
		sizeof(struct rn_notify_delivery), slots,
		RING_F_SP_ENQ | RING_F_SC_DEQ);
	lc->notify_releases = notify_ring("rel", lc->lcore_id,
		sizeof(struct rn_notify_delivery), slots,
		RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (lc->notify_requests == NULL || lc->notify_deliveries == NULL ||
	    lc->notify_releases == NULL)
		return -ENOMEM;
	return 0;
}

static void
free_notify_rings(struct rn_lcore *lc)
{
	rte_ring_free(lc->notify_requests);
	rte_ring_free(lc->notify_deliveries);
	rte_ring_free(lc->notify_releases);
}

int
rn_lcore_init(struct rn_lcore *lc, unsigned int lcore_id,
	      const struct rn_config *cfg, struct rte_ring *events,
	      int control_wake_fd, char *why, size_t why_len)
{
	const struct rn_dataplane_config *dp = &cfg->dataplane;
	struct epoll_event ev = { .events = EPOLLIN };
	char name[RTE_RING_NAMESIZE];
	int rc;

	memset(lc, 0, sizeof(*lc));
	lc->lcore_id = lcore_id;
	lc->idle = dp->idle;
	lc->idle_polls = dp->idle_polls;
	lc->idle_sleep_us = dp->idle_sleep_us;
	lc->client_hold_max = cfg->client.hold_max;
	lc->event_ring = events;
	lc->control_wake_fd = control_wake_fd;
	snprintf(name, sizeof(name), "rn_cmd_%u", lcore_id);
	lc->cmd_ring = rte_ring_create_elem(name, sizeof(struct rn_lcore_cmd),
					    RN_LCORE_RING_SIZE,
					    (int)rte_lcore_to_socket_id(lcore_id),
					    RING_F_SP_ENQ | RING_F_SC_DEQ |
					    RING_F_EXACT_SZ);
	if (lc->cmd_ring == NULL) {
		snprintf(why, why_len, "command ring: %s", rte_strerror(rte_errno));
		return -ENOMEM;
	}
	lc->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (lc->wake_fd < 0) {
		rc = -errno;
		snprintf(why, why_len, "eventfd: %s", strerror(errno));
		goto free_ring;
	}
	lc->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (lc->epoll_fd < 0) {
		rc = -errno;
		snprintf(why, why_len, "epoll: %s", strerror(errno));
		goto close_wake;
	}
	ev.data.fd = lc->wake_fd;
	if (epoll_ctl(lc->epoll_fd, EPOLL_CTL_ADD, lc->wake_fd, &ev) != 0) {
		rc = -errno;
		snprintf(why, why_len, "epoll: %s", strerror(errno));
		goto close_epoll;
	}
	rc = rn_nic_open(&cfg->nic, cfg->control.listen, &lc->nic, why, why_len);
	if (rc != 0)
		goto close_epoll;
	rc = watch_nic(lc);
	if (rc != 0) {
		snprintf(why, why_len, "epoll: %s", strerror(-rc));
		goto close_nic;
	}
	/* What rn_nic_cq_create() asks the device for; what it made, which
	 * pick_cq() compares a new endpoint's need with before it adds a CQ. */
	lc->cq_size = rte_align32pow2(cfg->nic.cq_size);
	lc->max_cqs = cfg->nic.cqs_per_lcore;
	rc = rn_qp_table_create(RN_LCORE_QP_TABLE_ORDER, &lc->qps);
	if (rc == 0)
		rc = rn_lcore_cq_grow(lc);
	if (rc != 0) {
		snprintf(why, why_len, "completion queue: %s", strerror(-rc));
		goto free_table;
	}
	lc->cq_cqes = lc->cqs[0].cq.cqe_cnt;
	lc->tsc_hz = rte_get_tsc_hz();
	if (cfg->notify.enabled)
		open_notify_region(lc, &cfg->notify);
	rc = create_notify_rings(lc, &cfg->notify);
	if (rc != 0) {
		snprintf(why, why_len, "notification rings: %s", strerror(-rc));
		goto free_region;
	}
	rc = check_cq_room(lc, cfg, why, why_len);
	if (rc == 0) {
		rc = rn_lcore_xfer_init(lc);
		if (rc != 0)
			snprintf(why, why_len, "transfer ring: %s",
				 strerror(-rc));
	}
	if (rc != 0)
		goto free_region;
	return 0;

free_region:
	free_notify_rings(lc);
	rn_notify_region_destroy(lc->nic, &lc->notify);
	destroy_cqs(lc);
free_table:
	rn_qp_table_free(lc->qps);
	lc->qps = NULL;
close_nic:
	rn_nic_close(lc->nic);
	lc->nic = NULL;
close_epoll:
	close(lc->epoll_fd);
close_wake:
	close(lc->wake_fd);
free_ring:
	rte_ring_free(lc->cmd_ring);
	lc->cmd_ring = NULL;
	return rc;
}

void
rn_lcore_fini(struct rn_lcore *lc)
{
	if (lc->cmd_ring == NULL)
		return;
	/* Clients first: the SENDs that fail as their endpoints go are
	 * reported to nobody, whatever became of the regions. */
	rn_lcore_client_fini(lc);
	rn_lcore_ep_free_all(lc);
	rn_lcore_xfer_fini(lc);
	free_notify_rings(lc);
	rn_notify_region_destroy(lc->nic, &lc->notify);
	destroy_cqs(lc);
	rn_qp_table_free(lc->qps);
	rn_nic_close(lc->nic);
	lc->nic = NULL;
	close(lc->epoll_fd);
	close(lc->wake_fd);
	rte_ring_free(lc->cmd_ring);
	lc->cmd_ring = NULL;
}

int
rn_lcore_cmd_send(struct rn_lcore *lc, struct rn_lcore_cmd cmd)
{
	if (rte_ring_sp_enqueue_elem(lc->cmd_ring, &cmd, sizeof(cmd)) != 0)
		return -ENOBUFS;
	/* Enqueue before the wake-up: see lcore_idle.c. */
	if (lc->idle == RN_IDLE_ADAPTIVE)
		eventfd_write(lc->wake_fd, 1);
	return 0;
}

void
rn_lcore_stats_read(const struct rn_lcore *lc, struct rn_lcore_stats *out)
{
	const uint64_t *from = (const uint64_t *)&lc->stats;
	uint64_t *to = (uint64_t *)out;

	/* Every field is a single-writer uint64_t counter. */
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
	out->notify_sent += out->client_sent;
}
