/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_XFER_DESC_H
#define RN_XFER_DESC_H

/*
 * A registered region's descriptor as it travels between nodes (192
 * bytes, little-endian; docs/transfers.md has the table): what an exporter
 * writes, what an importer reads. Shared by the embedded API, the daemon's
 * client server, the lcores (which read the descriptors a client names in
 * its batches) and librnotify, so it needs nothing but libc.
 */

#include <stddef.h>
#include <stdint.h>

#define RN_XFER_DESC_SIZE 192
#define RN_XFER_MAX_KEYS 16

/* One rkey of an exported region: that of the exporting node's lcore. */
struct rn_xfer_key {
	uint32_t lcore;
	uint32_t rkey;
};

/* A region of a node, as its descriptor names it. */
struct rn_xfer_remote {
	char node[32];            /* NUL-terminated */
	uint64_t session_id;      /* the node's incarnation that exported it */
	uint64_t addr;            /* the exporter's address of its first byte */
	uint64_t length;
	uint32_t n_keys;          /* 1 .. RN_XFER_MAX_KEYS */
	struct rn_xfer_key keys[RN_XFER_MAX_KEYS];
};

/* Write r's descriptor into buf. Returns RN_XFER_DESC_SIZE, or -ENOSPC
 * (len too small), -EINVAL (n_keys 0 or over RN_XFER_MAX_KEYS). */
int rn_xfer_desc_encode(const struct rn_xfer_remote *r, void *buf,
			size_t len);

/* Read the descriptor in buf[0..len) into *out. Returns 0, or -EBADMSG:
 * too short, another magic or version, no key or too many, a node name
 * without its NUL, or a range that wraps. */
int rn_xfer_desc_decode(const void *buf, size_t len,
			struct rn_xfer_remote *out);

#endif /* RN_XFER_DESC_H */
