/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NIC_H
#define RN_NIC_H

/*
 * The NIC's control path: device, memory registration, CQs, QPs and their
 * state machine. Two providers implement it: "mlx5" (ConnectX through
 * rdma-core) and "sim" (the software mlx5 device). Both hand the data path
 * the same ring layout (rn_queues.h); nothing here runs per packet.
 *
 * A struct rn_nic is one device context, owned by one lcore: its CQs and QPs
 * are polled and posted by that lcore only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rn_config.h"
#include "rn_queues.h"

enum rn_qp_state {
	RN_QP_RESET,
	RN_QP_INIT,
	RN_QP_RTR,
	RN_QP_RTS,
	RN_QP_ERR,
};

/* Memory access rights, as in ibv_access_flags. */
enum rn_access {
	RN_ACCESS_LOCAL_WRITE = 1 << 0,
	RN_ACCESS_REMOTE_WRITE = 1 << 1,
	RN_ACCESS_REMOTE_READ = 1 << 2,
};

#define RN_ACCESS_ALL (RN_ACCESS_LOCAL_WRITE | RN_ACCESS_REMOTE_WRITE | \
		       RN_ACCESS_REMOTE_READ)

/* READs (RDMA READ requests) a QP may have outstanding, as requester and
 * as responder: what rn_qp_connect's 0 stands for, and the most asked. */
#define RN_QP_MAX_RD_ATOMIC 16

#define RN_NIC_TOKEN_SIZE 16

/* Where a peer reaches this device: what the handshake carries (gid, lid,
 * port, mtu), and with what. */
struct rn_nic_addr {
	uint8_t gid[16];
	uint16_t lid;
	uint8_t port;
	uint8_t mtu;            /* IBV_MTU_* of the active port */
	/* sim: what the wire connections between this peer's device and ours
	 * present (rn_sim.h); set by the control plane from the handshake,
	 * which never carries it. Hardware ignores it. */
	uint8_t token[RN_NIC_TOKEN_SIZE];
};

struct rn_mr {
	void *addr;
	size_t length;
	uint32_t lkey;
	uint32_t rkey;
	void *priv;
};

struct rn_qp_caps {
	uint32_t max_send_wr;   /* send WQEs (of one BB each) */
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
};

/* What RTR and RTS need from the peer and from policy (verbs semantics). */
struct rn_qp_connect {
	struct rn_nic_addr remote;
	uint32_t remote_qpn;
	uint32_t remote_psn;    /* the peer's first send PSN: our rq_psn */
	uint32_t local_psn;     /* our first send PSN */
	uint8_t timeout;        /* ACK timeout: 4.096 us * 2^timeout; 0 = none */
	uint8_t retry_cnt;      /* 0..7 transport retries (7 is not infinite) */
	uint8_t rnr_retry;      /* 0..7, 7 = retry forever */
	uint8_t min_rnr_timer;  /* IB encoding, 1..31 (0 = 655 ms) */
	uint32_t access;        /* enum rn_access for the peer */
	/* READs outstanding at most (0: RN_QP_MAX_RD_ATOMIC; a device
	 * allowing fewer caps it): as requester (RTS, max_rd_atomic: the
	 * QP waits before starting one more) and as responder (RTR,
	 * max_dest_rd_atomic: one more is refused, an invalid request).
	 * A requester's must not exceed its peer's responder's. */
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
};

struct rn_nic;

struct rn_nic_ops {
	const char *name;
	int (*open)(const struct rn_nic_config *cfg, const char *listen,
		    struct rn_nic **out, char *why, size_t why_len);
	void (*close)(struct rn_nic *nic);
	int (*query_addr)(struct rn_nic *nic, struct rn_nic_addr *out);
	/* [addr, addr + length) known by iova (rn_nic_mr_reg_iova()). */
	int (*mr_reg)(struct rn_nic *nic, void *addr, size_t length,
		      uint64_t iova, uint32_t access, struct rn_mr *mr);
	int (*mr_reg_dmabuf)(struct rn_nic *nic, uint64_t offset,
			     size_t length, uint64_t iova, int fd,
			     uint32_t access, struct rn_mr *mr);
	int (*mr_dereg)(struct rn_nic *nic, struct rn_mr *mr);
	int (*cq_create)(struct rn_nic *nic, uint32_t min_cqe, struct rn_cq *cq);
	int (*cq_destroy)(struct rn_nic *nic, struct rn_cq *cq);
	int (*qp_create)(struct rn_nic *nic, struct rn_cq *send_cq,
			 struct rn_cq *recv_cq, const struct rn_qp_caps *caps,
			 struct rn_qp *qp);
	int (*qp_modify)(struct rn_nic *nic, struct rn_qp *qp,
			 enum rn_qp_state state,
			 const struct rn_qp_connect *conn);
	int (*qp_destroy)(struct rn_nic *nic, struct rn_qp *qp);
	/* Device work done by the owning lcore (sim); NULL for hardware. */
	unsigned int (*progress)(struct rn_nic *nic);
	/* Descriptors a sleeping lcore must wake on; returns their count. */
	int (*wait_fds)(struct rn_nic *nic, int *fds, int max);
	/*
	 * Asynchronous device events (a port down, a CQ overrun, a fatal
	 * device error), which no CQE reports: a descriptor that is readable
	 * while one is pending, and one taken, from any thread: 1 with a line
	 * for the log and *fatal when the context's queues stopped with it,
	 * 0 when none is pending, -errno when they cannot be read (the device
	 * is gone). Both or neither (NULL: no events).
	 */
	int (*event_fd)(struct rn_nic *nic);
	int (*take_event)(struct rn_nic *nic, char *text, size_t len,
			  bool *fatal);
};

/* A QPN no QP has (24 bits): what scrubbed CQEs carry. */
#define RN_QPN_STALE 0xffffff

/* Every provider's context starts with this. */
struct rn_nic {
	const struct rn_nic_ops *ops;
	enum rn_nic_provider provider;
};

extern const struct rn_nic_ops rn_nic_sim_ops;
extern const struct rn_nic_ops rn_nic_mlx5_ops;

/*
 * Open a device context of cfg->provider. listen is the address the sim
 * device's wire listens on (the control plane's address); mlx5 ignores it.
 * On failure why holds one line for the operator.
 * Returns 0, -ENODEV (no RDMA device, or none of that name), -ENETDOWN
 * (port not active), -EAFNOSUPPORT (sim: listen is not IPv4), -ENOMEM, or
 * another -errno of the device.
 */
int rn_nic_open(const struct rn_nic_config *cfg, const char *listen,
		struct rn_nic **out, char *why, size_t why_len);
void rn_nic_close(struct rn_nic *nic);

/*
 * Register [addr, addr + length) of this process for access (enum
 * rn_access; local read is always granted): mr->lkey goes in this
 * context's data segments, mr->rkey to the peer for its WRITEs and READs
 * (rkey == lkey on the sim). mlx5: ibv_reg_mr, which pins the pages.
 * Control path; the owning lcore must not have WQEs using mr in flight
 * when it is deregistered (the device would fail them: LOCAL_PROT, or
 * REMOTE_ACCESS at the peer).
 * Returns 0, -EINVAL (length 0, an unknown access bit, or REMOTE_WRITE
 * without LOCAL_WRITE, which ibv_reg_mr refuses too), -ENOSPC (sim: its
 * table of SIM_MAX_MRS is full), -ENOMEM, -EFAULT (mlx5: the range is not
 * mapped), -EPERM (mlx5: over RLIMIT_MEMLOCK) or another -errno of the
 * device.
 */
int rn_nic_mr_reg(struct rn_nic *nic, void *addr, size_t length,
		  uint32_t access, struct rn_mr *mr);

/*
 * As rn_nic_mr_reg(), but the device and peers know the region by iova:
 * mr->addr is iova, and a data segment or a peer's raddr names the byte at
 * addr + k by iova + k. rnotifyd registers a client's memory so, mapped at
 * its own address and known by the client's (docs/transfers.md). mlx5:
 * ibv_reg_mr_iova. rn_nic_mr_reg() is this with iova = addr.
 */
int rn_nic_mr_reg_iova(struct rn_nic *nic, void *addr, size_t length,
		       uint64_t iova, uint32_t access, struct rn_mr *mr);

/*
 * Register length bytes at offset of the dma-buf fd (GPU memory its driver
 * exported), known to the device and peers by iova: mr->addr is iova, and
 * a data segment or a peer's raddr names bytes of it by iova + offset in
 * it. mlx5: ibv_reg_dmabuf_mr. Same errors as rn_nic_mr_reg(), and
 * -EOPNOTSUPP on the sim (no device memory behind a software NIC) or a
 * kernel without dma-buf support, -EBADF for a bad fd.
 */
int rn_nic_mr_reg_dmabuf(struct rn_nic *nic, uint64_t offset, size_t length,
			 uint64_t iova, int fd, uint32_t access,
			 struct rn_mr *mr);

/* Deregister mr; its keys no longer match. Returns 0, -EINVAL (not a live
 * registration of nic), or -errno of the device. */
int rn_nic_mr_dereg(struct rn_nic *nic, struct rn_mr *mr);

/*
 * Create a CQ of at least min_cqe entries (rounded up to a power of two),
 * polled with rn_cq_poll() against qps.
 */
int rn_nic_cq_create(struct rn_nic *nic, uint32_t min_cqe,
		     struct rn_qp_table *qps, struct rn_cq *cq);
int rn_nic_cq_destroy(struct rn_nic *nic, struct rn_cq *cq);

/*
 * The most CQEs a QP created with caps can have outstanding: one per send
 * BB it may have in use (every WQE takes at least one; rn_nic_qp_create()
 * caps the BBs in use at this, whatever the device's ring) plus one per
 * receive WQE. Reserve this much room on its CQs.
 */
uint32_t rn_qp_cqes(const struct rn_qp_caps *caps);

/* Create an RC QP in RESET, its software rings ready for the data path. */
int rn_nic_qp_create(struct rn_nic *nic, struct rn_cq *send_cq,
		     struct rn_cq *recv_cq, const struct rn_qp_caps *caps,
		     struct rn_qp *qp);

/*
 * Move qp to state. RTR needs conn (remote address, QPN, PSNs, RNR timer),
 * RTS needs conn (local PSN, timeout, retries); INIT, ERR and RESET ignore
 * it. RESET also zeroes the rings' counters on both sides. Returns 0,
 * -EINVAL for a transition the QP state machine forbids, or -errno.
 */
int rn_nic_qp_modify(struct rn_nic *nic, struct rn_qp *qp,
		     enum rn_qp_state state, const struct rn_qp_connect *conn);
int rn_nic_qp_destroy(struct rn_nic *nic, struct rn_qp *qp);

static inline unsigned int
rn_nic_progress(struct rn_nic *nic)
{
	return nic->ops->progress != NULL ? nic->ops->progress(nic) : 0;
}

const char *rn_qp_state_name(enum rn_qp_state state);

/* QP table for a set of CQs: 2^order buckets. */
int rn_qp_table_create(unsigned int order, struct rn_qp_table **out);
void rn_qp_table_free(struct rn_qp_table *t);
void rn_qp_table_add(struct rn_qp_table *t, struct rn_qp *qp);
void rn_qp_table_remove(struct rn_qp_table *t, struct rn_qp *qp);

#endif /* RN_NIC_H */
