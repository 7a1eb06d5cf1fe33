/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_FRAME_H
#define RN_NOTIFY_FRAME_H

/*
 * A notification on the wire, in one SEND (or one NOTIFY frame over TCP):
 *   u32 name_len | name | u32 msg_len | msg
 * lengths little endian, name and msg any bytes. The receiver accepts a
 * frame only when the lengths add up to exactly what arrived.
 */

#include <errno.h>
#include <linux/types.h>
#include <rte_byteorder.h>
#include <rte_memcpy.h>
#include <stdint.h>
#include <string.h>

#define RN_NOTIFY_OVERHEAD 8u   /* the two length words */

/* Bytes the frame of (name_len, msg_len) takes. */
static inline uint64_t
rn_notify_frame_size(uint32_t name_len, uint32_t msg_len)
{
	return RN_NOTIFY_OVERHEAD + (uint64_t)name_len + msg_len;
}

/* Copy len bytes, w <= len <= 2 * w, as two overlapping words of w. */
static inline void
rn_notify_copy_ends(uint8_t *dst, const uint8_t *src, uint32_t len, size_t w)
{
	uint64_t head, tail;

	memcpy(&head, src, w);
	memcpy(&tail, src + len - w, w);
	memcpy(dst, &head, w);
	memcpy(dst + len - w, &tail, w);
}

/*
 * memcpy() for what is often short (a name, a small msg): up to 64 bytes
 * inline, in overlapping blocks from both ends, a call beyond. For those
 * few bytes the call, and the registers it makes the caller save, cost
 * more than the copy (docs/performance.md). The shortest are tested for
 * first: names are.
 */
static inline void
rn_notify_copy(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	if (len < 16) {
		if (len >= 8) {
			rn_notify_copy_ends(dst, src, len, 8);
		} else if (len >= 4) {
			rn_notify_copy_ends(dst, src, len, 4);
		} else {
			for (uint32_t i = 0; i < len; i++)
				dst[i] = src[i];
		}
	} else if (len <= 64) {
		rte_mov16(dst, src);
		if (len > 32) {
			rte_mov16(dst + 16, src + 16);
			rte_mov16(dst + len - 32, src + len - 32);
		}
		rte_mov16(dst + len - 16, src + len - 16);
	} else {
		memcpy(dst, src, len);
	}
}

/* Write the frame into dst (room for rn_notify_frame_size() bytes). */
static inline void
rn_notify_frame_write(uint8_t *dst, const void *name, uint32_t name_len,
		      const void *msg, uint32_t msg_len)
{
	uint32_t n = rte_cpu_to_le_32(name_len);
	uint32_t m = rte_cpu_to_le_32(msg_len);

	memcpy(dst, &n, 4);
	rn_notify_copy(dst + 4, name, name_len);
	memcpy(dst + 4 + name_len, &m, 4);
	rn_notify_copy(dst + 8 + name_len, msg, msg_len);
}

/*
 * The SEND_IMM's immediate: a count (dataplane/api/notify_order_pvt.h), on
 * the wire little endian as the lengths, so that neither side swaps bytes
 * on x86 or arm64 (protocol version 3). The WQE carries its 4 bytes as
 * they are; the verbs type them __be32, only a container here.
 */
static inline __be32
rn_notify_imm(uint32_t count)
{
	uint32_t le = rte_cpu_to_le_32(count);
	__be32 imm;

	memcpy(&imm, &le, sizeof(imm));
	return imm;
}

static inline uint32_t
rn_notify_imm_count(__be32 imm)
{
	uint32_t le;

	memcpy(&le, &imm, sizeof(le));
	return rte_le_to_cpu_32(le);
}

struct rn_notify_view {
	const uint8_t *name;
	uint32_t name_len;
	const uint8_t *msg;
	uint32_t msg_len;
};

/*
 * Read the frame of len bytes at src. Returns 0, or -EBADMSG when the
 * lengths do not add up to len exactly.
 */
static inline int
rn_notify_frame_read(const uint8_t *src, uint32_t len,
		     struct rn_notify_view *out)
{
	uint32_t name_len, msg_len;

	if (len < RN_NOTIFY_OVERHEAD)
		return -EBADMSG;
	memcpy(&name_len, src, 4);
	name_len = rte_le_to_cpu_32(name_len);
	if (name_len > len - RN_NOTIFY_OVERHEAD)
		return -EBADMSG;
	memcpy(&msg_len, src + 4 + name_len, 4);
	msg_len = rte_le_to_cpu_32(msg_len);
	if (rn_notify_frame_size(name_len, msg_len) != len)
		return -EBADMSG;
	out->name = src + 4;
	out->name_len = name_len;
	out->msg = src + 8 + name_len;
	out->msg_len = msg_len;
	return 0;
}

#endif /* RN_NOTIFY_FRAME_H */
