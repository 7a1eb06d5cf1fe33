/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sends: check the arguments, find the route (client_route.c), write each
 * notification into the send buffer of the ring position its entry will
 * take, enqueue the entries, then wake the lcore if it sleeps. No syscall
 * unless the lcore sleeps (one write to its eventfd then).
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "client_pvt.h"

/* Bytes a notification takes in a send buffer. */
static inline uint64_t
send_bytes(uint32_t agent_len, uint32_t name_len, uint32_t msg_len)
{
	return sizeof(struct rn_client_send_hdr) + (uint64_t)agent_len +
	       name_len + msg_len;
}

static inline void
write_buf(uint8_t *buf, uint32_t tag, uint32_t flags, const char *agent,
	  uint32_t agent_len, const struct rn_client_out *o)
{
	struct rn_client_send_hdr hdr = {
		.ep_tag = tag, .flags = flags, .name_len = o->name_len,
		.msg_len = o->msg_len, .agent_len = (uint8_t)agent_len };
	uint8_t *p = buf + sizeof(hdr);

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(p, agent, agent_len);
	p += agent_len;
	if (o->name_len != 0)
		memcpy(p, o->name, o->name_len);
	p += o->name_len;
	if (o->msg_len != 0)
		memcpy(p, o->msg, o->msg_len);
}

/* The checks that need no state: agent's length, the flags. The node is
 * checked by rn_client_route(). */
static inline int
check_args(const char *node, const char *agent, uint32_t flags,
	   uint32_t *agent_len)
{
	size_t a;

	if (node == NULL || agent == NULL ||
	    (flags & ~RN_CLIENT_WANT_COMPLETION) != 0)
		return -EINVAL;
	a = strnlen(agent, RN_CLIENT_AGENT_MAX + 1);
	if (a == 0 || a > RN_CLIENT_AGENT_MAX)
		return -EINVAL;
	*agent_len = (uint32_t)a;
	return 0;
}

int
rn_client_send_burst(struct rn_client *c, const char *node,
		     const char *agent, const struct rn_client_out *out,
		     unsigned int n, uint32_t flags)
{
	const struct rn_client_route *route;
	struct rn_client_entry e[RN_CLIENT_POLL_MAX];
	uint32_t agent_len, pos;
	struct rte_ring *ring;
	unsigned int fit, done = 0;
	int rc;

	rc = check_args(node, agent, flags, &agent_len);
	if (rc != 0)
		return rc;
	rc = rn_client_alive(c, false);
	if (rc != 0)
		return rc;
	if (n == 0)
		return 0;
	if (out == NULL)
		return -EINVAL;
	/* The ones that fit a buffer, up to the first that does not. */
	for (fit = 0; fit < n; fit++)
		if (send_bytes(agent_len, out[fit].name_len,
			       out[fit].msg_len) > c->buf_size ||
		    (out[fit].name_len != 0 && out[fit].name == NULL) ||
		    (out[fit].msg_len != 0 && out[fit].msg == NULL))
			break;
	if (fit == 0)
		return send_bytes(agent_len, out[0].name_len,
				  out[0].msg_len) > c->buf_size ? -EMSGSIZE :
		       -EINVAL;
	rc = rn_client_route(c, node, &route);
	if (rc != 0)
		return rc;
	ring = rn_client_submit_ring(c->region, route->lcore);
	while (done < fit) {
		unsigned int k = fit - done < RN_CLIENT_POLL_MAX ? fit - done :
				 RN_CLIENT_POLL_MAX;

		/* Take k positions (the producer side of the peek API; we
		 * are the ring's only producer), write their buffers, then
		 * their entries: a free position's buffer is ours, since the
		 * lcore finishes an entry only after it copied its buffer
		 * out. */
		k = rte_ring_enqueue_burst_elem_start(ring, k, NULL);
		if (k == 0)
			break;
		pos = ring->prod.head - k;
		for (unsigned int i = 0; i < k; i++) {
			const struct rn_client_out *o = &out[done + i];

			write_buf(rn_client_send_buf(c->region, route->lcore,
						     pos + i),
				  route->tag, flags, agent, agent_len, o);
			e[i] = (struct rn_client_entry){
				.type = RN_CLIENT_ENTRY_SEND,
				.ep_index = route->ep_index,
				.cookie = o->cookie };
		}
		/* Release: the buffers are written before the entries show. */
		rte_ring_enqueue_elem_finish(ring, e, sizeof(e[0]), k);
		done += k;
	}
	if (done == 0)
		return -EAGAIN;
	rn_client_wake_lcore(c, route->lcore);
	return (int)done;
}

int
rn_client_send(struct rn_client *c, const char *node, const char *agent,
	       const void *name, uint32_t name_len, const void *msg,
	       uint32_t msg_len, uint64_t cookie, uint32_t flags)
{
	const struct rn_client_out o = { .name = name, .msg = msg,
					 .name_len = name_len,
					 .msg_len = msg_len, .cookie = cookie };
	int rc = rn_client_send_burst(c, node, agent, &o, 1, flags);

	return rc > 0 ? 0 : rc;
}
