/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "mlx5" provider: a ConnectX NIC through rdma-core. Device, port and
 * GID, protection domain, a thread domain per context (one lcore's doorbell
 * needs no lock), memory registration. Queues are in mlx5_queues.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlx5_pvt.h"

/* Pick cfg->device, or the first mlx5 device when it says "auto". */
static struct ibv_device *
find_device(struct ibv_device **list, int n, const char *want)
{
	for (int i = 0; i < n; i++) {
		if (!mlx5dv_is_supported(list[i]))
			continue;
		if (strcmp(want, "auto") == 0 ||
		    strcmp(ibv_get_device_name(list[i]), want) == 0)
			return list[i];
	}
	return NULL;
}

/*
 * On Ethernet, the GID at [nic] gid_index must be a RoCE v2 entry (UDP/IP,
 * routable; RoCE v1 frames are not) and populated. Index 0 is often the
 * RoCE v1 fe80:: entry: with it, or with a peer on the other type, packets
 * are dropped and the QPs fail much later, retries exhausted. Names the
 * RoCE v2 entries the port has.
 */
static int
check_gid(struct mlx5_ctx *ctx, const struct rn_nic_config *cfg,
	  const struct ibv_port_attr *port, char *why, size_t why_len)
{
	static const uint8_t unset[sizeof(union ibv_gid)];
	struct ibv_gid_entry e;
	char v2[96] = "";
	size_t used = 0;

	if (port->link_layer != IBV_LINK_LAYER_ETHERNET)
		return 0;
	if (ibv_query_gid_ex(ctx->verbs, cfg->port, cfg->gid_index, &e, 0) == 0 &&
	    e.gid_type == IBV_GID_TYPE_ROCE_V2 &&
	    memcmp(e.gid.raw, unset, sizeof(unset)) != 0)
		return 0;
	for (int i = 0; i < port->gid_tbl_len && used + 8 < sizeof(v2); i++)
		if (ibv_query_gid_ex(ctx->verbs, cfg->port, (uint32_t)i, &e,
				     0) == 0 &&
		    e.gid_type == IBV_GID_TYPE_ROCE_V2)
			used += (size_t)snprintf(v2 + used, sizeof(v2) - used,
						 "%s%d", used != 0 ? " " : "", i);
	snprintf(why, why_len, "%s port %u: [nic] gid_index = %u is not a "
		 "populated RoCE v2 GID (RoCE v1 does not route); RoCE v2 "
		 "entries: %s (show_gids lists them)",
		 ibv_get_device_name(ctx->verbs->device), cfg->port,
		 cfg->gid_index, used != 0 ? v2 : "none");
	return -EINVAL;
}

/* At most RN_QP_MAX_RD_ATOMIC READs in flight per QP, within what the
 * device allows. */
static int
read_limits(struct mlx5_ctx *ctx)
{
	struct ibv_device_attr attr;
	int rc = ibv_query_device(ctx->verbs, &attr);

	if (rc != 0)
		return -rc;   /* ibv_query_device returns the errno */
	ctx->max_rd_atomic = (uint8_t)RTE_MIN(RN_QP_MAX_RD_ATOMIC,
					      attr.max_qp_init_rd_atom);
	ctx->max_dest_rd_atomic = (uint8_t)RTE_MIN(RN_QP_MAX_RD_ATOMIC,
						   attr.max_qp_rd_atom);
	return 0;
}

static int
open_port(struct mlx5_ctx *ctx, const struct rn_nic_config *cfg, char *why,
	  size_t why_len)
{
	struct ibv_port_attr port;
	int rc = ibv_query_port(ctx->verbs, (uint8_t)cfg->port, &port);

	if (rc != 0)
		return -rc;   /* ibv_query_port returns the errno */
	if (port.state != IBV_PORT_ACTIVE) {
		snprintf(why, why_len, "%s port %u is not active",
			 ibv_get_device_name(ctx->verbs->device), cfg->port);
		return -ENETDOWN;
	}
	rc = check_gid(ctx, cfg, &port, why, why_len);
	if (rc != 0)
		return rc;
	if (ibv_query_gid(ctx->verbs, (uint8_t)cfg->port, (int)cfg->gid_index,
			  &ctx->gid) != 0)
		return -errno;
	ctx->port = (uint8_t)cfg->port;
	ctx->gid_index = (uint8_t)cfg->gid_index;
	ctx->traffic_class = (uint8_t)cfg->traffic_class;
	ctx->service_level = (uint8_t)cfg->service_level;
	ctx->lid = port.lid;
	ctx->mtu = port.active_mtu;
	return 0;
}

static int
mlx5_open(const struct rn_nic_config *cfg, const char *listen,
	  struct rn_nic **out, char *why, size_t why_len)
{
	struct ibv_parent_domain_init_attr pd_attr = { 0 };
	struct ibv_td_init_attr td_attr = { 0 };
	struct ibv_device **list;
	struct ibv_device *dev;
	struct mlx5_ctx *ctx;
	int n = 0, rc;

	(void)listen;
	/* With no RDMA subsystem at all, the list is NULL (errno ENOSYS). */
	list = ibv_get_device_list(&n);
	if (list == NULL || n == 0) {
		if (list != NULL)
			ibv_free_device_list(list);
		snprintf(why, why_len,
			 "no RDMA device found; set [nic] provider = sim");
		return -ENODEV;
	}
	dev = find_device(list, n, cfg->device);
	if (dev == NULL) {
		snprintf(why, why_len, "no mlx5 device named '%s'; set [nic] "
			 "device = auto or a name from ibv_devices", cfg->device);
		ibv_free_device_list(list);
		return -ENODEV;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (ctx == NULL) {
		ibv_free_device_list(list);
		return -ENOMEM;
	}
	ctx->verbs = ibv_open_device(dev);
	ibv_free_device_list(list);
	if (ctx->verbs == NULL) {
		rc = -errno;
		goto free_ctx;
	}
	rc = open_port(ctx, cfg, why, why_len);
	if (rc == 0)
		rc = read_limits(ctx);
	/* Async events are taken without blocking (mlx5_take_event). */
	if (rc == 0 && fcntl(ctx->verbs->async_fd, F_SETFL,
			     fcntl(ctx->verbs->async_fd, F_GETFL) |
			     O_NONBLOCK) != 0)
		rc = -errno;
	if (rc != 0)
		goto close_device;
	ctx->pd = ibv_alloc_pd(ctx->verbs);
	if (ctx->pd == NULL) {
		rc = -errno;
		goto close_device;
	}
	ctx->td = ibv_alloc_td(ctx->verbs, &td_attr);
	if (ctx->td == NULL) {
		rc = -errno;
		goto dealloc_pd;
	}
	pd_attr.pd = ctx->pd;
	pd_attr.td = ctx->td;
	ctx->parent = ibv_alloc_parent_domain(ctx->verbs, &pd_attr);
	if (ctx->parent == NULL) {
		rc = -errno;
		goto dealloc_td;
	}
	*out = &ctx->nic;
	return 0;

dealloc_td:
	ibv_dealloc_td(ctx->td);
dealloc_pd:
	ibv_dealloc_pd(ctx->pd);
close_device:
	ibv_close_device(ctx->verbs);
free_ctx:
	free(ctx);
	return rc;
}

static void
mlx5_close(struct rn_nic *nic)
{
	struct mlx5_ctx *ctx = mlx5_ctx_of(nic);

	ibv_dealloc_pd(ctx->parent);
	ibv_dealloc_td(ctx->td);
	ibv_dealloc_pd(ctx->pd);
	ibv_close_device(ctx->verbs);
	free(ctx);
}

static int
mlx5_query_addr(struct rn_nic *nic, struct rn_nic_addr *out)
{
	struct mlx5_ctx *ctx = mlx5_ctx_of(nic);

	memset(out, 0, sizeof(*out));
	memcpy(out->gid, ctx->gid.raw, sizeof(out->gid));
	out->lid = ctx->lid;
	out->port = ctx->port;
	out->mtu = (uint8_t)ctx->mtu;
	return 0;
}

int
rn_mlx5_access(uint32_t access)
{
	return ((access & RN_ACCESS_LOCAL_WRITE) ? IBV_ACCESS_LOCAL_WRITE : 0) |
	       ((access & RN_ACCESS_REMOTE_WRITE) ? IBV_ACCESS_REMOTE_WRITE : 0) |
	       ((access & RN_ACCESS_REMOTE_READ) ? IBV_ACCESS_REMOTE_READ : 0);
}

static void
fill_mr(struct ibv_mr *m, struct rn_mr *mr)
{
	*mr = (struct rn_mr){ .addr = m->addr, .length = m->length,
			      .lkey = m->lkey, .rkey = m->rkey, .priv = m };
}

static int
mlx5_mr_reg(struct rn_nic *nic, void *addr, size_t length, uint64_t iova,
	    uint32_t access, struct rn_mr *mr)
{
	struct ibv_mr *m = ibv_reg_mr_iova(mlx5_ctx_of(nic)->pd, addr, length,
					   iova, rn_mlx5_access(access));

	if (m == NULL)
		return -errno;
	fill_mr(m, mr);
	/* libibverbs leaves the local address in ibv_mr.addr; the device
	 * and the peers know the region by iova. */
	mr->addr = (void *)(uintptr_t)iova;
	return 0;
}

/* GPU memory exported by its driver as a dma-buf (e.g. cuMemGetHandle). */
static int
mlx5_mr_reg_dmabuf(struct rn_nic *nic, uint64_t offset, size_t length,
		   uint64_t iova, int fd, uint32_t access, struct rn_mr *mr)
{
	struct ibv_mr *m = ibv_reg_dmabuf_mr(mlx5_ctx_of(nic)->pd, offset,
					     length, iova, fd,
					     rn_mlx5_access(access));

	if (m == NULL)
		return -errno;
	fill_mr(m, mr);
	/* libibverbs leaves the dma-buf offset in ibv_mr.addr; the device
	 * and the peers know the region by iova. */
	mr->addr = (void *)(uintptr_t)iova;
	return 0;
}

static int
mlx5_mr_dereg(struct rn_nic *nic, struct rn_mr *mr)
{
	int rc;

	(void)nic;
	rc = ibv_dereg_mr(mr->priv);   /* returns the errno */
	if (rc == 0)
		mr->priv = NULL;
	return -rc;
}

static int
mlx5_event_fd(struct rn_nic *nic)
{
	return mlx5_ctx_of(nic)->verbs->async_fd;
}

/* What an event is about: its port, QP or CQ. */
static void
describe(const struct ibv_async_event *ev, char *text, size_t len)
{
	const char *what = ibv_event_type_str(ev->event_type);

	switch (ev->event_type) {
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_GID_CHANGE:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
		snprintf(text, len, "%s, port %d", what, ev->element.port_num);
		return;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		snprintf(text, len, "%s, QP 0x%x", what, ev->element.qp->qp_num);
		return;
	default:
		snprintf(text, len, "%s", what);
	}
}

/*
 * A CQ overrun stops the CQ without a CQE, and a fatal device error every
 * queue: the worker's endpoints stall. A QP's own errors also complete its
 * WQEs in error, which fails its endpoint as usual.
 */
static int
mlx5_take_event(struct rn_nic *nic, char *text, size_t len, bool *fatal)
{
	struct ibv_async_event ev;

	if (ibv_get_async_event(mlx5_ctx_of(nic)->verbs, &ev) != 0)
		return errno == EAGAIN ? 0 : -errno;
	describe(&ev, text, len);
	*fatal = ev.event_type == IBV_EVENT_CQ_ERR ||
		 ev.event_type == IBV_EVENT_DEVICE_FATAL;
	ibv_ack_async_event(&ev);
	return 1;
}

const struct rn_nic_ops rn_nic_mlx5_ops = {
	.name = "mlx5",
	.open = mlx5_open,
	.close = mlx5_close,
	.query_addr = mlx5_query_addr,
	.mr_reg = mlx5_mr_reg,
	.mr_reg_dmabuf = mlx5_mr_reg_dmabuf,
	.mr_dereg = mlx5_mr_dereg,
	.cq_create = rn_mlx5_cq_create,
	.cq_destroy = rn_mlx5_cq_destroy,
	.qp_create = rn_mlx5_qp_create,
	.qp_modify = rn_mlx5_qp_modify,
	.qp_destroy = rn_mlx5_qp_destroy,
	.progress = NULL,        /* the NIC runs itself */
	.wait_fds = NULL,        /* hardware lcores poll: [dataplane] idle = busy */
	.event_fd = mlx5_event_fd,
	.take_event = mlx5_take_event,
};
