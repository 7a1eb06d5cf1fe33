/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * From a node name to where its sends go: the endpoint (index and tag in
 * the status page) and the lcore whose submit ring takes them. The status
 * page is the truth; c->routes remembers where a name was found, so that a
 * send reads one entry of the page (under its seqlock) rather than
 * searching. A name the page lacks, or an endpoint never used (IDLE), is
 * asked of the daemon with RESOLVE, which also starts connecting it.
 */
#include <errno.h>
#include <string.h>

#include "client_pvt.h"

/* What one read of a status page entry saw, consistent. */
struct ep_view {
	uint32_t tag;
	uint16_t lcore;
	uint8_t state;
	char name[RN_CLIENT_NODE_MAX + 1];
};

/*
 * Read ep under its seqlock (an rte_seqcount_t on the writer's side; its
 * read side, written out here because DPDK 22.11 marks it experimental):
 * the control thread makes seq odd, writes, makes it even again
 * (release); we read seq (acquire), the fields, then seq again after an
 * acquire fence: the same even value means the fields are of one write. with_name: copy the name too (searching), or not
 * (checking a remembered route by its tag, which is new for every peer).
 */
static inline void
ep_read(const struct rn_client_status_ep *ep, struct ep_view *v,
	bool with_name)
{
	uint32_t seq;

	for (;;) {
		seq = __atomic_load_n(&ep->seq, __ATOMIC_ACQUIRE);
		if (seq & 1) {
			__builtin_ia32_pause();
			continue;
		}
		v->tag = __atomic_load_n(&ep->tag, __ATOMIC_RELAXED);
		v->lcore = __atomic_load_n(&ep->lcore, __ATOMIC_RELAXED);
		v->state = __atomic_load_n(&ep->state, __ATOMIC_RELAXED);
		if (with_name) {
			for (unsigned int i = 0; i < sizeof(v->name); i++)
				v->name[i] = __atomic_load_n(&ep->name[i],
							     __ATOMIC_RELAXED);
			v->name[RN_CLIENT_NODE_MAX] = '\0';
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&ep->seq, __ATOMIC_RELAXED) == seq)
			return;
	}
}

/* FNV-1a of the name, folded onto the route table. */
static uint32_t
route_slot(const char *node, uint32_t len)
{
	uint32_t h = 2166136261u;

	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)node[i]) * 16777619u;
	return (h ^ (h >> 16)) & (RN_CLIENT_ROUTES - 1);
}

static bool
route_is(const struct rn_client_route *r, const char *node, uint32_t len)
{
	return r->name_len == len && memcmp(r->name, node, len) == 0;
}

/* The state of a route's endpoint as a send sees it: 0 (native) or the
 * send's error; -ESTALE when the entry is no longer this node's. */
static inline int
state_rc(const struct rn_client *c, const struct ep_view *v, uint32_t tag)
{
	if (v->tag != tag || v->tag == 0)
		return -ESTALE;
	if (v->lcore >= c->n_lcores)
		return -ENOENT;   /* not a ring of ours: not reachable */
	switch (v->state) {
	case RN_CLIENT_EP_NATIVE:
		return 0;
	case RN_CLIENT_EP_IDLE:
		return -EINPROGRESS;   /* ask the daemon to connect */
	case RN_CLIENT_EP_CONNECTING:
		return -EAGAIN;
	case RN_CLIENT_EP_NO_NATIVE:
		return -ENOTSUP;
	case RN_CLIENT_EP_DOWN:
		return -ENOTCONN;
	default:
		return -ESTALE;
	}
}

/* Search the page for node; 0 and the route filled, or -ENOENT. */
static int
page_find(const struct rn_client *c, const char *node, uint32_t len,
	  struct rn_client_route *r)
{
	uint32_t n = __atomic_load_n(&c->page->n_endpoints, __ATOMIC_ACQUIRE);
	struct ep_view v;

	if (n > RN_CLIENT_STATUS_ENDPOINTS)
		n = RN_CLIENT_STATUS_ENDPOINTS;
	for (uint32_t i = 0; i < n; i++) {
		/* A cheap look at the first byte before a whole read. */
		if (__atomic_load_n(&c->page->ep[i].name[0],
				    __ATOMIC_RELAXED) != node[0])
			continue;
		ep_read(&c->page->ep[i], &v, true);
		if (v.tag != 0 && strlen(v.name) == len &&
		    memcmp(v.name, node, len) == 0) {
			r->ep_index = (uint16_t)i;
			r->lcore = v.lcore;
			r->tag = v.tag;
			return 0;
		}
	}
	return -ENOENT;
}

/* RESOLVE node with the daemon: 0 and r filled, or its error. */
static int
resolve(struct rn_client *c, const char *node, uint32_t len,
	struct rn_client_route *r)
{
	struct rn_client_resolved got;
	int rc = rn_client_request(c, RN_CLIENT_MSG_RESOLVE, node, len, &got,
				   sizeof(got), NULL);

	if (rc != 0)
		return rc;
	if (got.ep_index >= RN_CLIENT_STATUS_ENDPOINTS || got.tag == 0)
		return -ENOENT;
	r->ep_index = got.ep_index;
	r->lcore = got.lcore;
	r->tag = got.tag;
	return 0;
}

static inline int
check(const struct rn_client *c, const struct rn_client_route *r)
{
	struct ep_view v;

	ep_read(&c->page->ep[r->ep_index], &v, false);
	return state_rc(c, &v, r->tag);
}

int
rn_client_route(struct rn_client *c, const char *node,
		const struct rn_client_route **out)
{
	const struct rn_client_route *last = c->last;
	struct rn_client_route *r;
	size_t n;
	uint32_t len;
	int rc;

	/* The node of the last send: no length, no hash (a send stream
	 * mostly goes to one node). Equal to a stored name: valid too. */
	if (last != NULL &&
	    strncmp(node, last->name, RN_CLIENT_NODE_MAX + 1) == 0) {
		rc = check(c, last);
		if (__builtin_expect(rc == 0, 1)) {
			*out = last;
			return 0;
		}
	}
	n = strnlen(node, RN_CLIENT_NODE_MAX + 1);
	if (n == 0 || n > RN_CLIENT_NODE_MAX)
		return -EINVAL;
	len = (uint32_t)n;
	r = &c->routes[route_slot(node, len)];
	if (route_is(r, node, len)) {
		rc = check(c, r);
		if (__builtin_expect(rc == 0, 1)) {
			c->last = r;
			*out = r;
			return 0;
		}
		if (rc != -ESTALE && rc != -EINPROGRESS)
			return rc;
	}
	/* Not remembered, or changed: look again, in the page first. */
	if (c->last == r)
		c->last = NULL;
	memset(r, 0, sizeof(*r));
	rc = page_find(c, node, len, r);
	if (rc == 0)
		rc = check(c, r);
	if (rc == -ENOENT || rc == -ESTALE || rc == -EINPROGRESS) {
		rc = resolve(c, node, len, r);
		if (rc != 0) {
			memset(r, 0, sizeof(*r));
			return rc;
		}
		rc = check(c, r);
		if (rc == -EINPROGRESS)
			rc = -EAGAIN;   /* RESOLVE started connecting */
		else if (rc == -ESTALE)
			rc = -EAGAIN;   /* changed meanwhile: try again */
	}
	memcpy(r->name, node, len);
	r->name[len] = '\0';
	r->name_len = (uint8_t)len;
	if (rc == 0) {
		c->last = r;
		*out = r;
	}
	return rc;
}

void
rn_client_route_forget(struct rn_client *c, const char *node, uint32_t len)
{
	struct rn_client_route *r = &c->routes[route_slot(node, len)];

	if (route_is(r, node, len)) {
		if (c->last == r)
			c->last = NULL;
		memset(r, 0, sizeof(*r));
	}
}
