/* SPDX-License-Identifier: BSD-3-Clause */
#include <string.h>
#include <time.h>

#include "nic_harness.h"

const struct rn_qp_caps rn_harness_caps = {
	.max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = RN_WR_MAX_SGE,
	.max_recv_sge = 4, .max_inline = 256,
};

uint64_t
rn_harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int
rn_harness_open(struct end *e, const char *listen, uint32_t cqe,
		const struct rn_qp_caps *caps)
{
	struct rn_nic_config cfg = { .provider = RN_NIC_SIM, .port = 1 };
	char why[128];
	int rc;

	memset(e, 0, sizeof(*e));
	rc = rn_nic_open(&cfg, listen != NULL ? listen : "127.0.0.1", &e->nic,
			 why, sizeof(why));
	if (rc == 0)
		rc = rn_qp_table_create(6, &e->qps);
	if (rc == 0)
		rc = rn_nic_cq_create(e->nic, cqe, e->qps, &e->cq);
	if (rc == 0)
		rc = rn_nic_qp_create(e->nic, &e->cq, &e->cq,
				      caps != NULL ? caps : &rn_harness_caps,
				      &e->qp);
	if (rc == 0)
		rc = e->nic->ops->query_addr(e->nic, &e->addr);
	return rc;
}

void
rn_harness_close(struct end *e)
{
	if (e->qp.priv != NULL)
		rn_nic_qp_destroy(e->nic, &e->qp);
	if (e->cq.priv != NULL)
		rn_nic_cq_destroy(e->nic, &e->cq);
	rn_qp_table_free(e->qps);
	if (e->nic != NULL)
		rn_nic_close(e->nic);
	memset(e, 0, sizeof(*e));
}

struct rn_qp_connect
rn_harness_connect_params(const struct end_info *peer)
{
	return (struct rn_qp_connect){
		.remote = peer->addr,
		.remote_qpn = peer->qpn,
		.remote_psn = 0x100,
		.local_psn = 0x100,
		/* The sim device only runs when its owner polls: a peer busy
		 * checking a megabyte under ASan must not look dead. */
		.timeout = 18,        /* 1.07 s */
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1,   /* 10 us */
		.access = RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_WRITE |
			  RN_ACCESS_REMOTE_READ,
	};
}

int
rn_harness_connect(struct end *e, const struct rn_qp_connect *conn)
{
	int rc = rn_nic_qp_modify(e->nic, &e->qp, RN_QP_INIT, NULL);

	if (rc == 0)
		rc = rn_nic_qp_modify(e->nic, &e->qp, RN_QP_RTR, conn);
	if (rc == 0)
		rc = rn_nic_qp_modify(e->nic, &e->qp, RN_QP_RTS, conn);
	return rc;
}

void
rn_harness_pair(struct end *a, struct end *b)
{
	struct end_info ia = { .addr = a->addr, .qpn = a->qp.qpn };
	struct end_info ib = { .addr = b->addr, .qpn = b->qp.qpn };
	struct rn_qp_connect ca = rn_harness_connect_params(&ib);
	struct rn_qp_connect cb = rn_harness_connect_params(&ia);

	rn_harness_connect(a, &ca);
	rn_harness_connect(b, &cb);
}

void
rn_harness_progress(struct end **ends)
{
	for (; *ends != NULL; ends++)
		rn_nic_progress((*ends)->nic);
}

unsigned int
rn_harness_wait(struct end **ends, struct end *e, struct rn_wc *wc,
		unsigned int want, int timeout_ms)
{
	uint64_t deadline = rn_harness_now_ms() + (uint64_t)timeout_ms;
	unsigned int got = 0;

	while (got < want && rn_harness_now_ms() < deadline) {
		rn_harness_progress(ends);
		got += rn_cq_poll(&e->cq, wc + got, want - got);
	}
	return got;
}

int
rn_harness_post(struct end *e, const struct rn_wr *wr)
{
	int rc = rn_sq_post(&e->qp.sq, wr);

	if (rc == 0)
		rn_sq_ring_doorbell(&e->qp.sq);
	return rc;
}

int
rn_harness_post_recv(struct end *e, void *buf, uint32_t len, uint32_t lkey,
		     uint64_t wr_id)
{
	struct rn_sge sge = { (uintptr_t)buf, len, lkey };
	int rc = rn_rq_post(&e->qp.rq, &sge, 1, wr_id);

	if (rc == 0)
		rn_rq_ring_doorbell(&e->qp.rq);
	return rc;
}
