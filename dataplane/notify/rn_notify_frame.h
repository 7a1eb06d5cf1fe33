/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_NOTIFY_FRAME_H
#define RN_NOTIFY_FRAME_H

/*
 * A notification on the wire, in one SEND (or one NOTIFY frame over TCP):
 *   u32 name_len | name | u32 msg_len | msg
 * lengths little endian, name and msg any bytes. The receiver accepts a
 * frame only when the lengths add up to exactly what arrived. That is the
 * node-level frame, of the embedded API (rn_notify.h).
 *
 * Client processes' notifications travel natively only, as agent frames
 * in plain SENDs (protocol version 8), which a first word of
 * RN_NOTIFY_KIND_MIN or more tells apart: a node-level frame's first word
 * is its name_len, less than a slot, and the node-level reader rejects
 * such a frame by its lengths. The receiver sends plain SENDs to the
 * client path by the completion's opcode (docs/notifications.md).
 *   AGENT    u32 kind | u8 dst_len | u8 src_len | u16 0 | u32 name_len |
 *            u32 msg_len | u64 cookie | dst | name | msg | src
 *            from agent src (the sending lcore writes it from the client's
 *            link: a client cannot forge it) to agent dst of the peer;
 *            cookie is the sender's, for a refusal to return.
 *   REFUSAL  the same header, its u16 the reason (enum rn_notify_refusal),
 *            name_len and msg_len 0: dst is the agent whose AGENT frame
 *            was refused, src the agent refused there, cookie the refused
 *            frame's.
 * Integers little endian, agents 1 to RN_NOTIFY_AGENT_MAX bytes; accepted
 * only when 24 + dst + src + name + msg is exactly what arrived.
 */

#include <errno.h>
#include <linux/types.h>
#include <rte_byteorder.h>
#include <rte_memcpy.h>
#include <stddef.h>
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

/* First words from here on name a frame kind, not a name_len. */
#define RN_NOTIFY_KIND_MIN 0xffffff00u
enum rn_notify_kind {
	RN_NOTIFY_KIND_AGENT = 0xffffff01u,
	RN_NOTIFY_KIND_REFUSAL = 0xffffff02u,
};
#define RN_NOTIFY_AGENT_MAX 128u       /* RN_CLIENT_AGENT_MAX */

/* Why a REFUSAL refused (protocol version 7). */
enum rn_notify_refusal {
	RN_NOTIFY_REFUSED_ABSENT = 0,  /* no such agent is attached there */
	RN_NOTIFY_REFUSED_BUSY = 1,    /* its client holds [client] hold_max
					* frames it has not taken */
};

/*
 * The 24 bytes that begin an agent frame (or a refusal). Then the
 * destination agent, name, msg, and the source agent last: the sender
 * holds the first three one after the other in its buffer (a client's
 * send buffer), and a receiving client's buffer takes the last three so
 * (struct rn_client_recv_hdr), one copy each way.
 */
struct rn_notify_agent_hdr {
	uint32_t kind;            /* enum rn_notify_kind */
	uint8_t dst_len;
	uint8_t src_len;
	uint16_t reason;          /* REFUSAL: enum rn_notify_refusal; AGENT 0 */
	uint32_t name_len;
	uint32_t msg_len;
	uint64_t cookie;
};
_Static_assert(sizeof(struct rn_notify_agent_hdr) == 24, "wire header");
_Static_assert(offsetof(struct rn_notify_agent_hdr, dst_len) == 4 &&
	       offsetof(struct rn_notify_agent_hdr, src_len) == 5 &&
	       offsetof(struct rn_notify_agent_hdr, reason) == 6 &&
	       offsetof(struct rn_notify_agent_hdr, name_len) == 8 &&
	       offsetof(struct rn_notify_agent_hdr, msg_len) == 12,
	       "rn_notify_agent_word() and _lens() lay the header out");

/* Bytes the agent frame takes; a refusal's with name_len = msg_len = 0. */
static inline uint64_t
rn_notify_agent_frame_size(uint32_t dst_len, uint32_t src_len,
			   uint32_t name_len, uint32_t msg_len)
{
	return sizeof(struct rn_notify_agent_hdr) + (uint64_t)dst_len +
	       src_len + name_len + msg_len;
}

/*
 * The agent header's first 8 bytes (kind, dst_len, src_len, reason) as
 * one word, in the CPU's order: a sender that keeps it at hand, less the
 * one length that changes, writes it in one store.
 */
static inline uint64_t
rn_notify_agent_word(uint32_t kind, uint8_t dst_len, uint8_t src_len,
		     uint16_t reason)
{
	return kind | (uint64_t)dst_len << 32 | (uint64_t)src_len << 40 |
	       (uint64_t)reason << 48;
}

/* The agent header's name_len and msg_len as one word, likewise. */
static inline uint64_t
rn_notify_agent_lens(uint32_t name_len, uint32_t msg_len)
{
	return name_len | (uint64_t)msg_len << 32;
}

/* rn_notify_copy() with 65 to 128 bytes inline too: an agent frame's
 * agent, name and msg often take that many. Apart, as the embedded API's
 * send path paid for the larger copy in spills. */
static __rte_always_inline void
rn_notify_copy_long(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	if (len > 64 && len <= 128) {
		rte_mov64(dst, src);
		rte_mov64(dst + len - 64, src + len - 64);
	} else {
		rn_notify_copy(dst, src, len);
	}
}

/* An agent frame's header from its words (rn_notify_agent_word(),
 * rn_notify_agent_lens()) and the cookie. */
static inline void
rn_notify_agent_hdr_put(uint8_t *dst, uint64_t word, uint64_t lens,
			uint64_t cookie)
{
	uint64_t w = rte_cpu_to_le_64(word);
	uint64_t l = rte_cpu_to_le_64(lens);
	uint64_t c = rte_cpu_to_le_64(cookie);

	memcpy(dst, &w, 8);
	memcpy(dst + 8, &l, 8);
	memcpy(dst + 16, &c, 8);
}

/*
 * Write an agent frame into dst, room for rn_notify_agent_frame_size()
 * bytes, from what a sender holds as a client's send buffer does: the
 * destination agent, name and msg one after the other (lead, lead_len
 * bytes), the source agent apart.
 */
static inline void
rn_notify_agent_frame_put(uint8_t *dst, uint64_t word, uint64_t lens,
			  uint64_t cookie, const void *lead, uint32_t lead_len,
			  const void *src_agent, uint8_t src_len)
{
	rn_notify_agent_hdr_put(dst, word, lens, cookie);
	dst += sizeof(struct rn_notify_agent_hdr);
	rn_notify_copy_long(dst, lead, lead_len);
	rn_notify_copy(dst + lead_len, src_agent, src_len);
}

/* Write an agent frame (or a refusal: name and msg empty) into dst, room
 * for rn_notify_agent_frame_size() bytes, from each of its parts. */
static inline void
rn_notify_agent_frame_write(uint8_t *dst, uint32_t kind, uint16_t reason,
			    uint64_t cookie,
			    const void *dst_agent, uint8_t dst_len,
			    const void *src_agent, uint8_t src_len,
			    uint32_t name_len, uint32_t msg_len,
			    const void *body)
{
	uint32_t body_len = name_len + msg_len;

	rn_notify_agent_hdr_put(dst, rn_notify_agent_word(kind, dst_len,
							  src_len, reason),
				rn_notify_agent_lens(name_len, msg_len), cookie);
	dst += sizeof(struct rn_notify_agent_hdr);
	rn_notify_copy(dst, dst_agent, dst_len);
	rn_notify_copy(dst + dst_len, body, body_len);
	rn_notify_copy(dst + dst_len + body_len, src_agent, src_len);
}

struct rn_notify_agent_view {
	uint32_t kind;            /* enum rn_notify_kind */
	uint8_t dst_len;
	uint8_t src_len;
	uint16_t reason;          /* REFUSAL: enum rn_notify_refusal */
	uint32_t name_len;
	uint32_t msg_len;
	uint64_t cookie;
	const uint8_t *dst;       /* then name, msg, src, one after the
				   * other */
	const uint8_t *name;      /* then msg, src */
	const uint8_t *src;
};

/*
 * Read the agent frame or refusal of len bytes at src (a frame the
 * node-level reader refused). Returns 0, or -EBADMSG when it is of no
 * kind known, its agents' lengths are out of range, an agent frame has a
 * reason, a refusal a reason unknown or a name or msg, or the lengths do
 * not add up to len exactly. Reads no byte past len.
 */
static inline int
rn_notify_agent_frame_read(const uint8_t *src, uint32_t len,
			   struct rn_notify_agent_view *out)
{
	struct rn_notify_agent_hdr h;

	if (len < sizeof(h))
		return -EBADMSG;
	memcpy(&h, src, sizeof(h));
	out->kind = rte_le_to_cpu_32(h.kind);
	out->reason = rte_le_to_cpu_16(h.reason);
	out->name_len = rte_le_to_cpu_32(h.name_len);
	out->msg_len = rte_le_to_cpu_32(h.msg_len);
	if ((out->kind == RN_NOTIFY_KIND_AGENT ? out->reason != 0 :
	     out->kind != RN_NOTIFY_KIND_REFUSAL || out->name_len != 0 ||
	     out->msg_len != 0 || out->reason > RN_NOTIFY_REFUSED_BUSY) ||
	    h.dst_len == 0 || h.dst_len > RN_NOTIFY_AGENT_MAX ||
	    h.src_len == 0 || h.src_len > RN_NOTIFY_AGENT_MAX ||
	    rn_notify_agent_frame_size(h.dst_len, h.src_len, out->name_len,
				       out->msg_len) != len)
		return -EBADMSG;
	out->dst_len = h.dst_len;
	out->src_len = h.src_len;
	out->cookie = rte_le_to_cpu_64(h.cookie);
	out->dst = src + sizeof(h);
	out->name = out->dst + h.dst_len;
	out->src = out->name + out->name_len + out->msg_len;
	return 0;
}

#endif /* RN_NOTIFY_FRAME_H */
