/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TEST_NIC_HARNESS_H
#define RN_TEST_NIC_HARNESS_H

/*
 * Test harness for the NIC layer (rn_harness_*): an end is a sim device
 * context with one CQ and one RC QP, connected to another end in this
 * process or another; helpers progress devices and poll completions with a
 * deadline.
 */

#include "rn_cq.h"
#include "rn_nic.h"
#include "rn_rq.h"
#include "rn_sim.h"
#include "rn_sq.h"

struct end {
	struct rn_nic *nic;
	struct rn_qp_table *qps;
	struct rn_cq cq;
	struct rn_qp qp;
	struct rn_nic_addr addr;
};

/* What one side tells the other to connect (the control plane's job). */
struct end_info {
	struct rn_nic_addr addr;
	uint32_t qpn;
	uint64_t buf_addr;
	uint32_t rkey;
};

extern const struct rn_qp_caps rn_harness_caps;

/* Open a sim context on listen (NULL: 127.0.0.1) with a CQ and a QP. */
int rn_harness_open(struct end *e, const char *listen, uint32_t cqe,
		    const struct rn_qp_caps *caps);
void rn_harness_close(struct end *e);

/* The default connection parameters; tests change fields. */
struct rn_qp_connect rn_harness_connect_params(const struct end_info *peer);

/* RESET/INIT -> RTR -> RTS toward peer. Returns 0 or a negative errno. */
int rn_harness_connect(struct end *e, const struct rn_qp_connect *conn);

/* Connect a and b to each other with the default parameters. */
void rn_harness_pair(struct end *a, struct end *b);

/* Progress every end in ends (NULL-terminated) once. */
void rn_harness_progress(struct end **ends);

/*
 * Progress ends and poll e's CQ until want completions are in wc or
 * timeout_ms pass. Returns the number polled.
 */
unsigned int rn_harness_wait(struct end **ends, struct end *e, struct rn_wc *wc,
			     unsigned int want, int timeout_ms);

/* Post one WR and ring the doorbell; returns rn_sq_post's result. */
int rn_harness_post(struct end *e, const struct rn_wr *wr);
int rn_harness_post_recv(struct end *e, void *buf, uint32_t len, uint32_t lkey,
			 uint64_t wr_id);

/* CLOCK_MONOTONIC in milliseconds, for the tests' deadlines. */
uint64_t rn_harness_now_ms(void);

#endif /* RN_TEST_NIC_HARNESS_H */
