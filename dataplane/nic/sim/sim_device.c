/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The sim device context: the provider operations, and the progress loop
 * the owning lcore runs:
 *   1. read the wires and run the responder and completer on what arrived,
 *   2. for each QP, let the completer check the ACK timeout, then the
 *      requester resend or execute newly doorbelled WQEs,
 *   3. write out what was queued on the wires.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "sim_pvt.h"

static int
sim_open(const struct rn_nic_config *cfg, const char *listen,
	 struct rn_nic **out, char *why, size_t why_len)
{
	struct sim_ctx *ctx;
	int rc;

	(void)cfg;
	if (posix_memalign((void **)&ctx, RTE_CACHE_LINE_SIZE, sizeof(*ctx)) != 0)
		return -ENOMEM;
	memset(ctx, 0, sizeof(*ctx));
	ctx->listen_fd = -1;
	ctx->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->epoll_fd < 0) {
		rc = -errno;
		free(ctx);
		return rc;
	}
	rc = rn_sim_events_open(ctx);
	if (rc != 0) {
		close(ctx->epoll_fd);
		free(ctx);
		return rc;
	}
	rc = rn_sim_wire_listen(ctx, listen);
	if (rc != 0) {
		snprintf(why, why_len, "sim device: cannot listen on %s: %s%s",
			 listen, strerror(-rc), rc == -EAFNOSUPPORT ?
			 " (the sim's wire is IPv4 only)" : "");
		rn_sim_events_close(ctx);
		close(ctx->epoll_fd);
		free(ctx);
		return rc;
	}
	*out = &ctx->nic;
	return 0;
}

static void
sim_close(struct rn_nic *nic)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);

	rn_sim_wire_close_all(ctx);
	while (ctx->faults != NULL) {
		struct sim_fault *f = ctx->faults;

		ctx->faults = f->next;
		free(f);
	}
	while (ctx->live != NULL)
		rn_sim_qp_destroy(ctx, ctx->live);
	close(ctx->listen_fd);
	close(ctx->epoll_fd);
	rn_sim_events_close(ctx);
	free(ctx->scratch);
	free(ctx);
}

static int
sim_query_addr(struct rn_nic *nic, struct rn_nic_addr *out)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);

	memset(out, 0, sizeof(*out));
	/* ::ffff:a.b.c.d, as a RoCE v2 GID for an IPv4 address. */
	out->gid[10] = 0xff;
	out->gid[11] = 0xff;
	memcpy(&out->gid[12], &ctx->self.ip, sizeof(ctx->self.ip));
	out->lid = ctx->self.port;
	out->port = 1;
	out->mtu = IBV_MTU_4096;   /* RN_SIM_MTU */
	RTE_BUILD_BUG_ON(RN_SIM_MTU != 4096);
	return 0;
}

static int
sim_cq_create_op(struct rn_nic *nic, uint32_t cqe_cnt, struct rn_cq *cq)
{
	return rn_sim_cq_create(rn_sim_ctx_of(nic), cqe_cnt, cq);
}

static int
sim_cq_destroy_op(struct rn_nic *nic, struct rn_cq *cq)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);

	for (struct sim_qp *q = ctx->live; q != NULL; q = q->next)
		if (q->scq == cq->priv || q->rcq == cq->priv)
			return -EBUSY;
	rn_sim_cq_destroy(cq);
	return 0;
}

static int
sim_qp_create_op(struct rn_nic *nic, struct rn_cq *send_cq,
		 struct rn_cq *recv_cq, const struct rn_qp_caps *caps,
		 struct rn_qp *qp)
{
	return rn_sim_qp_create(rn_sim_ctx_of(nic), send_cq, recv_cq, caps, qp);
}

static int
sim_qp_modify_op(struct rn_nic *nic, struct rn_qp *qp, enum rn_qp_state state,
		 const struct rn_qp_connect *conn)
{
	return rn_sim_qp_modify(rn_sim_ctx_of(nic), qp->priv, state, conn);
}

static int
sim_qp_destroy_op(struct rn_nic *nic, struct rn_qp *qp)
{
	rn_sim_qp_destroy(rn_sim_ctx_of(nic), qp->priv);
	return 0;
}

/* A frame off the wire: a request for the responder, or a reply to one of
 * our requests for the completer. */
static bool
deliver(struct sim_ctx *ctx, struct sim_wire *wire,
	const struct sim_frame_hdr *h, const uint8_t *payload)
{
	if (h->type == SIM_FRAME_REQUEST)
		return rn_sim_responder_request(ctx, wire, h, payload);
	return rn_sim_completer_receive(ctx, wire, h, payload);
}

static bool
place(struct sim_ctx *ctx, struct sim_wire *wire, const struct sim_frame_hdr *h,
      struct sim_place *out)
{
	if (h->type == SIM_FRAME_REQUEST)
		return rn_sim_responder_place(ctx, wire, h, out);
	return rn_sim_completer_place(ctx, wire, h, out);
}

static const struct sim_rx_ops rx_ops = { .deliver = deliver, .place = place };

static unsigned int
sim_progress(struct rn_nic *nic)
{
	struct sim_ctx *ctx = rn_sim_ctx_of(nic);
	struct timespec ts;
	unsigned int work;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ctx->now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	work = rn_sim_wire_receive(ctx, &rx_ops);
	for (struct sim_qp *q = ctx->live; q != NULL; q = q->next) {
		rn_sim_completer_timeout(q);
		work += rn_sim_requester_run(q);
		if (q->resp_count > 0)
			work += rn_sim_responder_pump(q);
		rn_sim_responder_sent(q);   /* transmitted just below */
	}
	rn_sim_wire_transmit(ctx);
	return work;
}

static int
sim_wait_fds(struct rn_nic *nic, int *fds, int max)
{
	if (max < 1)
		return 0;
	fds[0] = rn_sim_ctx_of(nic)->epoll_fd;
	return 1;
}

const struct rn_nic_ops rn_nic_sim_ops = {
	.name = "sim",
	.open = sim_open,
	.close = sim_close,
	.query_addr = sim_query_addr,
	.mr_reg = rn_sim_mr_reg,
	.mr_reg_dmabuf = rn_sim_mr_reg_dmabuf,
	.mr_dereg = rn_sim_mr_dereg,
	.cq_create = sim_cq_create_op,
	.cq_destroy = sim_cq_destroy_op,
	.qp_create = sim_qp_create_op,
	.qp_modify = sim_qp_modify_op,
	.qp_destroy = sim_qp_destroy_op,
	.progress = sim_progress,
	.wait_fds = sim_wait_fds,
	.event_fd = rn_sim_event_fd,
	.take_event = rn_sim_event_take,
};

int
rn_sim_qp_fail(struct rn_nic *nic, struct rn_qp *qp)
{
	return rn_sim_qp_modify(rn_sim_ctx_of(nic), qp->priv, RN_QP_ERR, NULL);
}

enum rn_qp_state
rn_sim_qp_state(const struct rn_qp *qp)
{
	return ((const struct sim_qp *)qp->priv)->state;
}

static struct sim_qp *
sim_qp_of(struct rn_qp *qp)
{
	return qp->nic != NULL && qp->nic->provider == RN_NIC_SIM ? qp->priv :
								    NULL;
}

int
rn_sim_qp_hold(struct rn_qp *qp)
{
	struct sim_qp *sqp = sim_qp_of(qp);

	if (sqp == NULL)
		return -EINVAL;
	rn_sim_requester_hold(sqp, SIM_HOLD_ALL, 0);
	return 0;
}

int
rn_sim_qp_delay(struct rn_qp *qp, uint32_t delay_us)
{
	struct sim_qp *sqp = sim_qp_of(qp);

	if (sqp == NULL)
		return -EINVAL;
	rn_sim_requester_hold(sqp, delay_us != 0 ? SIM_HOLD_DELAY :
						   SIM_HOLD_OFF,
			      (uint64_t)delay_us * 1000);
	return 0;
}

int
rn_sim_qp_release(struct rn_qp *qp)
{
	struct sim_qp *sqp = sim_qp_of(qp);

	if (sqp == NULL)
		return -EINVAL;
	rn_sim_requester_hold(sqp, SIM_HOLD_OFF, 0);
	return 0;
}

void
rn_sim_qp_stats(const struct rn_qp *qp, struct rn_sim_qp_stats *out)
{
	const struct sim_qp *sqp = qp->priv;

	*out = sqp->stats;
	out->reads_outstanding = sqp->reads_out;
}

uint32_t
rn_sim_qp_inflight(const struct rn_qp *qp)
{
	return ((const struct sim_qp *)qp->priv)->inflight_count;
}

bool
rn_sim_cq_in_error(const struct rn_cq *cq)
{
	return ((const struct sim_cq *)cq->priv)->error;
}

void
rn_sim_stats(struct rn_nic *nic, struct rn_sim_stats *out)
{
	*out = rn_sim_ctx_of(nic)->stats;
}

uint16_t
rn_sim_port(struct rn_nic *nic)
{
	return rn_sim_ctx_of(nic)->self.port;
}
