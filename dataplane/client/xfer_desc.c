/* SPDX-License-Identifier: BSD-3-Clause */
/* The descriptor's wire form (rn_xfer_desc.h). */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "rn_xfer_desc.h"

#define DESC_MAGIC 0x44584e52u   /* "RNXD" */
#define DESC_VERSION 1

struct desc_wire {
	uint32_t magic;
	uint16_t version;
	uint16_t n_keys;
	char node[32];
	uint64_t session_id;
	uint64_t addr;
	uint64_t length;
	struct rn_xfer_key keys[RN_XFER_MAX_KEYS];
} __attribute__((packed));
_Static_assert(sizeof(struct desc_wire) == RN_XFER_DESC_SIZE, "size");

int
rn_xfer_desc_encode(const struct rn_xfer_remote *r, void *buf, size_t len)
{
	struct desc_wire d = { .magic = htole32(DESC_MAGIC),
			       .version = htole16(DESC_VERSION),
			       .n_keys = htole16((uint16_t)r->n_keys),
			       .session_id = htole64(r->session_id),
			       .addr = htole64(r->addr),
			       .length = htole64(r->length) };

	if (len < sizeof(d))
		return -ENOSPC;
	if (r->n_keys == 0 || r->n_keys > RN_XFER_MAX_KEYS)
		return -EINVAL;
	memcpy(d.node, r->node, sizeof(d.node));
	d.node[sizeof(d.node) - 1] = '\0';
	for (uint32_t i = 0; i < r->n_keys; i++) {
		d.keys[i].lcore = htole32(r->keys[i].lcore);
		d.keys[i].rkey = htole32(r->keys[i].rkey);
	}
	memcpy(buf, &d, sizeof(d));
	return (int)sizeof(d);
}

int
rn_xfer_desc_decode(const void *buf, size_t len, struct rn_xfer_remote *out)
{
	struct desc_wire d;

	if (len < sizeof(d))
		return -EBADMSG;
	memcpy(&d, buf, sizeof(d));
	if (le32toh(d.magic) != DESC_MAGIC ||
	    le16toh(d.version) != DESC_VERSION || le16toh(d.n_keys) == 0 ||
	    le16toh(d.n_keys) > RN_XFER_MAX_KEYS ||
	    memchr(d.node, '\0', sizeof(d.node)) == NULL ||
	    le64toh(d.addr) + le64toh(d.length) < le64toh(d.addr))
		return -EBADMSG;
	memset(out, 0, sizeof(*out));
	memcpy(out->node, d.node, sizeof(d.node));
	out->session_id = le64toh(d.session_id);
	out->addr = le64toh(d.addr);
	out->length = le64toh(d.length);
	out->n_keys = le16toh(d.n_keys);
	for (uint32_t i = 0; i < out->n_keys; i++)
		out->keys[i] = (struct rn_xfer_key){
			.lcore = le32toh(d.keys[i].lcore),
			.rkey = le32toh(d.keys[i].rkey) };
	return 0;
}
