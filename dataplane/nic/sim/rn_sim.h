/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_SIM_H
#define RN_SIM_H

/*
 * The software mlx5 device's own interface, beyond rn_nic.h: fault injection
 * and inspection for tests. The device's address is its wire listener: the
 * GID is the IPv4-mapped IPv6 address, the LID the TCP port.
 */

#include <stdbool.h>
#include <stdint.h>

#include "rn_nic.h"

/*
 * Limits of the device and its wire. A message travels as packets of the
 * path MTU (at most RN_SIM_MTU bytes, the device port's), one frame and
 * one PSN each, as on IB; a message is at most RN_SIM_MAX_MSG (larger:
 * LOCAL_LENGTH). So no frame carries more than RN_SIM_MTU (REQUEST,
 * READ_RESP) or anything at all (ACK, NAK, RNR NAK): a header that
 * announces more closes the connection before anything is allocated. The
 * bound follows RN_SIM_MTU; messages, and transfers cut into them, may
 * grow to RN_SIM_MAX_MSG without it. The project's largest message is a
 * notification slot (64 KiB); ConnectX allows 1 GiB.
 */
#define RN_SIM_MAX_MSG (1u << 20)             /* the sim's max_msg_sz */
#define RN_SIM_MTU 4096                       /* its port's MTU, bytes */
/* Inbound connections no QP has taken a frame from yet (strangers, or a
 * peer whose QP is not ready): the oldest is closed to make room. */
#define RN_SIM_WIRE_MAX_UNMATCHED 32
/* An accepted connection sends its HELLO by then, or is closed; as the
 * control port's default connect_timeout_ms. */
#define RN_SIM_WIRE_HELLO_TIMEOUT_MS 1000
/*
 * Who may connect: a HELLO names the caller's device and a token, and is
 * taken only when a QP of this device is connected (RTR or RTS) to that
 * device with that token (struct rn_nic_addr's token, which the control
 * plane derives per endpoint in its authenticated handshake). Frames then
 * reach only the QPs of that endpoint; a connection whose token no
 * connected QP has any longer (the endpoint closed) is closed within
 * RN_SIM_WIRE_SWEEP_MS. Refused connections are logged at most
 * RN_SIM_WIRE_REFUSALS_LOGGED_PER_S a second, with a count of the rest.
 */
#define RN_SIM_WIRE_SWEEP_MS 100
#define RN_SIM_WIRE_REFUSALS_LOGGED_PER_S 10

struct rn_sim_stats {
	uint64_t frames_sent;
	uint64_t frames_received;
	uint64_t dropped_no_qp;       /* no such QP, or not connected to sender */
	uint64_t dropped_out_of_order;/* PSN ahead of the expected one */
	uint64_t dropped_malformed;   /* lengths that do not add up */
	uint64_t dropped_place_changed; /* read to its place, which moved
					 * before it was all in */
	uint64_t duplicates;          /* PSN behind: re-acknowledged */
	uint64_t rnr_naks_sent;
	uint64_t retransmits;         /* go-back-N resends (RNR or timeout) */
	uint64_t rx_placed;           /* payloads read straight to their place */
	uint64_t rx_mispredicted;     /* a packet predicted was another frame */
	uint64_t tx_unlent;           /* bytes copied off a region that was
				       * deregistered while queued */
	uint64_t cq_overruns;
	/* Inbound wire connections closed: */
	uint64_t wires_bad_hello;     /* first frame not a well-formed HELLO */
	uint64_t wires_bad_token;     /* HELLO for no connected QP */
	uint64_t wires_stale;         /* no connected QP has its token now */
	uint64_t wires_oversize;      /* a frame announced more than its type
				       * carries (RN_SIM_MTU at most) */
	uint64_t wires_hello_timeout; /* no HELLO within the deadline */
	uint64_t wires_evicted;       /* oldest unmatched, to make room */
	/* System calls on the wires' sockets, and waits for room: */
	uint64_t tx_calls;            /* send and sendmsg */
	uint64_t rx_calls;            /* recv and recvmsg */
	uint64_t tx_full;             /* a socket took less than offered: its
				       * wire sent nothing more until epoll
				       * said it had room (EPOLLOUT) */
};

/*
 * One QP's counters (rn_sim_qp_stats()): the READ limits and the
 * hold-back fault at work. Counted from the QP's creation.
 */
struct rn_sim_qp_stats {
	uint32_t reads_outstanding;     /* READs sent, response not yet in */
	uint32_t reads_outstanding_max; /* the most at once */
	uint64_t read_waits;            /* the requester waited: READ limit */
	uint64_t fence_waits;           /* a fenced WQE waited for READs */
	uint64_t reads_refused;         /* responder: over max_dest_rd_atomic */
	uint64_t reads_region_gone;     /* responder: a READ's region went
					 * before its response was made */
	uint64_t frames_held;           /* requests held back by the fault */
	uint32_t frames_held_now;       /* of which not yet released */
};

/* Break every wire to remote and refuse new ones until restored. */
int rn_sim_wire_cut(struct rn_nic *nic, const struct rn_nic_addr *remote);
int rn_sim_wire_restore(struct rn_nic *nic, const struct rn_nic_addr *remote);

/* Hold every frame sent to remote for delay_us (0: no delay). */
int rn_sim_wire_delay(struct rn_nic *nic, const struct rn_nic_addr *remote,
		      uint32_t delay_us);

/*
 * The ordering fault: qp's request frames (SEND, WRITE, READ requests,
 * resends too) are held back on the QP, in order, while every other QP's
 * go on; replies it makes as responder are not held. rn_sim_qp_hold()
 * holds them until rn_sim_qp_release(), which lets them go in order on the
 * next progress; rn_sim_qp_delay() holds each for delay_us from the moment
 * it was made (0: off). The QP still runs its ACK timer: a hold longer
 * than its timeout makes it resend (the resends held too), and one longer
 * than all its retries fails it, TRANSPORT_RETRY_EXC. A QP that leaves RTS
 * drops what it held. Owning lcore only. Returns 0, or -EINVAL for a QP
 * not of the sim.
 */
int rn_sim_qp_hold(struct rn_qp *qp);
int rn_sim_qp_delay(struct rn_qp *qp, uint32_t delay_us);
int rn_sim_qp_release(struct rn_qp *qp);
void rn_sim_qp_stats(const struct rn_qp *qp, struct rn_sim_qp_stats *out);

/* A local fault: qp enters ERR and flushes its outstanding WQEs. */
int rn_sim_qp_fail(struct rn_nic *nic, struct rn_qp *qp);

enum rn_qp_state rn_sim_qp_state(const struct rn_qp *qp);
/* Send WQEs executed and not yet acknowledged (none once in ERR). */
uint32_t rn_sim_qp_inflight(const struct rn_qp *qp);
bool rn_sim_cq_in_error(const struct rn_cq *cq);
void rn_sim_stats(struct rn_nic *nic, struct rn_sim_stats *out);

/* Tests: raise the asynchronous event of a port going down, or (fatal)
 * of a CQ error, without stopping anything. */
void rn_sim_raise_event(struct rn_nic *nic, bool fatal);

/* Tests, on the lcore that owns cq: cq overruns, as if software had
 * fallen behind it. It stops for good (no CQE is written to it again),
 * the QPs completing to it fail, and the fatal event is raised. */
void rn_sim_overrun_cq(struct rn_cq *cq);

/* The listening port of nic's wire (its LID). */
uint16_t rn_sim_port(struct rn_nic *nic);

#endif /* RN_SIM_H */
