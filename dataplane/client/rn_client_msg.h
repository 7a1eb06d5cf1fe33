/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_CLIENT_MSG_H
#define RN_CLIENT_MSG_H

/*
 * The attach protocol on the daemon's Unix socket (SOCK_SEQPACKET: one
 * message per request or reply, descriptors with SCM_RIGHTS). The client
 * asks, the daemon answers each request in order with one reply of the
 * same type | RN_CLIENT_MSG_REPLY. The first request is ATTACH; the socket
 * then stays open for the client's life: its close is how the daemon
 * learns that the client is gone (kill -9 included), and how the client
 * learns that the daemon is. docs/client.md describes every message.
 */

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include "rn_client.h"

#define RN_CLIENT_PROTO_VERSION 2u
#define RN_CLIENT_MSG_REPLY 0x8000u
#define RN_CLIENT_MSG_MAX 512u     /* bytes of any request or reply */

enum rn_client_msg_type {
	/* body: the agent name (len bytes). Reply: struct
	 * rn_client_attached and descriptors, in this order: the region
	 * memfd, the status page memfd, the client's eventfd (daemon ->
	 * client), then one wake eventfd per lcore (client -> lcore). */
	RN_CLIENT_MSG_ATTACH = 1,
	/* body: a node name. The daemon starts connecting the endpoint
	 * when it is idle. Reply: struct rn_client_resolved. */
	RN_CLIENT_MSG_RESOLVE,
	/* body: struct rn_client_peer. Reply: status only. */
	RN_CLIENT_MSG_PEER_ADD,
	/* body: a node name. Reply: status only. */
	RN_CLIENT_MSG_PEER_REMOVE,
	/* no body. Reply: status only; then the daemon closes the socket. */
	RN_CLIENT_MSG_DETACH,
	/* body: struct rn_client_reg_req; descriptors: its n_pieces fds,
	 * in order. The daemon maps host memory, every lcore registers it.
	 * Reply: struct rn_client_registered. */
	RN_CLIENT_MSG_REG,
	/* body: uint32_t region. Reply: status only, once no batch uses it
	 * and every lcore deregistered it; the daemon unmaps it. */
	RN_CLIENT_MSG_DEREG,
	/* body: struct rn_client_publish_req. Reply: status only. */
	RN_CLIENT_MSG_PUBLISH,
	/* body: struct rn_client_fetch_req. Reply: the descriptor
	 * (RN_CLIENT_DESC_SIZE bytes), or status only. */
	RN_CLIENT_MSG_FETCH,
};

struct rn_client_msg_hdr {
	uint16_t type;            /* enum rn_client_msg_type [| REPLY] */
	uint16_t version;         /* RN_CLIENT_PROTO_VERSION */
	int32_t status;           /* replies: 0 or -errno (rn_client.h's) */
	uint32_t len;             /* bytes of body after this header */
	uint32_t pad;
};

struct rn_client_attached {
	uint64_t region_size;     /* bytes to map: the memfd's size, which may
				   * be more than the region's own (hugepage
				   * rounding); the region's header says that */
	uint32_t n_lcores;
	uint32_t ring_size;
	uint32_t buf_size;
	uint32_t client_id;       /* the daemon's, for its logs and telemetry */
	char node[RN_CLIENT_NODE_MAX + 1];  /* the daemon's [node] name */
};

struct rn_client_resolved {
	uint16_t ep_index;        /* into the status page's ep[] */
	uint16_t lcore;
	uint32_t tag;
};

struct rn_client_peer {
	char name[RN_CLIENT_NODE_MAX + 1];
	char address[64];         /* IPv4 or IPv6 literal, NUL-terminated */
	uint16_t port;
	uint16_t pad[3];
};

struct rn_client_reg_req {
	uint64_t addr;            /* the client's address of the region */
	uint32_t access;          /* RN_CLIENT_LOCAL_WRITE | ... */
	uint32_t flags;           /* RN_CLIENT_REG_DMABUF */
	uint32_t n_pieces;        /* 1 .. RN_CLIENT_REG_MAX_PIECES */
	uint32_t pad;
	struct {
		uint64_t offset;  /* in its fd */
		uint64_t length;
	} piece[RN_CLIENT_REG_MAX_PIECES];
};

struct rn_client_registered {
	uint32_t region;          /* 0 .. RN_CLIENT_MAX_REGIONS - 1 */
	uint32_t pad;
	uint8_t desc[RN_CLIENT_DESC_SIZE];   /* its descriptor */
};

struct rn_client_publish_req {
	uint32_t region;
	char name[RN_CLIENT_PUBLISH_NAME_MAX + 1];   /* "": withdraw */
};

struct rn_client_fetch_req {
	char node[RN_CLIENT_NODE_MAX + 1];
	char name[RN_CLIENT_PUBLISH_NAME_MAX + 1];
	uint32_t timeout_ms;
};

_Static_assert(sizeof(struct rn_client_msg_hdr) +
	       sizeof(struct rn_client_reg_req) <= RN_CLIENT_MSG_MAX &&
	       sizeof(struct rn_client_msg_hdr) +
	       sizeof(struct rn_client_registered) <= RN_CLIENT_MSG_MAX,
	       "a message");

/* Put n_fds descriptors into msg as one SCM_RIGHTS message, in ctl: a
 * buffer of CMSG_SPACE(sizeof(int) * n_fds) bytes at least, aligned for
 * struct cmsghdr. Both ends send descriptors so (ATTACH's reply, REG). */
static inline void
rn_client_msg_put_fds(struct msghdr *msg, void *ctl, const int *fds,
		      unsigned int n_fds)
{
	struct cmsghdr *cm;

	msg->msg_control = ctl;
	msg->msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
	cm = CMSG_FIRSTHDR(msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * n_fds);
}

#endif /* RN_CLIENT_MSG_H */
