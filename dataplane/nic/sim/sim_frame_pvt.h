/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_SIM_FRAME_PVT_H
#define RN_SIM_FRAME_PVT_H

/*
 * Frames on the software wire between two sim device contexts (a TCP stream).
 * One frame per packet of the path MTU, each with its PSN, as on IB.
 * Host byte order on both ends (the sim runs on one architecture).
 */

#include <assert.h>
#include <stdint.h>

#include "rn_sim.h"

enum sim_frame_type {
	SIM_FRAME_HELLO = 1,   /* first frame of a connection: who is calling */
	SIM_FRAME_REQUEST,     /* SEND, SEND_IMM, WRITE, WRITE_IMM, READ */
	SIM_FRAME_READ_RESP,   /* READ data; acknowledges everything before */
	SIM_FRAME_ACK,         /* everything up to psn executed */
	SIM_FRAME_RNR_NAK,     /* psn found no receive WQE: retry after timer */
	SIM_FRAME_NAK,         /* psn failed: syndrome for the requester */
};

struct sim_frame_hdr {
	uint32_t length;       /* payload bytes after this header */
	uint8_t type;          /* enum sim_frame_type */
	uint8_t opcode;        /* REQUEST: MLX5_OPCODE_* */
	uint8_t syndrome;      /* NAK: MLX5_CQE_SYNDROME_* for the requester */
	uint8_t rnr_timer;     /* RNR_NAK: the responder's min_rnr_timer */
	uint32_t dst_qpn;
	uint32_t src_qpn;
	uint32_t psn;          /* 24 bits */
	uint32_t imm;          /* as posted: bytes the sim passes on */
	uint64_t raddr;        /* WRITE, READ */
	uint32_t rkey;
	uint32_t dma_len;      /* WRITE, READ: bytes to move */
};

/* On the wire: a stranger's bytes in tests/nic/test_sim_wire.c too. */
static_assert(sizeof(struct sim_frame_hdr) == 40, "frame header size");

/*
 * HELLO payload: the caller's own listening address (its GID and LID), and
 * the token of the endpoint whose QPs the connection is for: the callee
 * takes the connection only if one of its connected QPs has that peer and
 * that token (rn_sim.h).
 */
struct sim_frame_hello {
	uint32_t ip;           /* network order */
	uint16_t port;         /* host order */
	uint16_t pad;
	uint8_t token[RN_NIC_TOKEN_SIZE];
};
static_assert(sizeof(struct sim_frame_hello) == 24, "HELLO payload size");

/* The largest frame the wire accepts, header included: a packet of the
 * largest path MTU. */
#define SIM_FRAME_MAX (sizeof(struct sim_frame_hdr) + RN_SIM_MTU)
/* A whole HELLO frame: all a connection may send before it is known. */
#define SIM_FRAME_HELLO_SIZE \
	(sizeof(struct sim_frame_hdr) + sizeof(struct sim_frame_hello))

#endif /* RN_SIM_FRAME_PVT_H */
