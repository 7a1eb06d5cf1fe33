/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The decoder trusts nothing: every length is checked against what is
 * there before it is used, and a frame's payload must be used up exactly.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "proto_wire_pvt.h"
#include "rn_notify_frame.h"
#include "rn_proto.h"

__attribute__((format(printf, 3, 4))) static int
bad(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return -EPROTO;
}

static bool
name_valid(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z') ||
		      (p[i] >= '0' && p[i] <= '9') || p[i] == '_' || p[i] == '-'))
			return false;
	return n > 0 && n <= RN_PROTO_NAME_MAX;
}

/*
 * One QP record into *q: 0, or -EPROTO when its reserved bytes are set or
 * its QPN or PSN is over 24 bits.
 */
static int
get_qp(const uint8_t *p, unsigned int i, struct rn_proto_qp *q, char *why,
       size_t why_len)
{
	q->kind = p[0];
	q->qpn = wire_get32(p + 4);
	q->psn = wire_get32(p + 8);
	q->recv_depth = wire_get32(p + 12);
	q->slot_size = wire_get32(p + 16);
	q->credits = wire_get32(p + 20);
	if (p[1] != 0 || p[2] != 0 || p[3] != 0)
		return bad(why, why_len, "QP %u: reserved bytes set", i);
	if (q->qpn > 0xffffff || q->psn > 0xffffff)
		return bad(why, why_len, "QP %u: QPN or PSN over 24 bits", i);
	return 0;
}

/* A notify QP's receive depth, slot size and credits add up. */
static bool
notify_qp_valid(const struct rn_proto_qp *q)
{
	return q->kind == RN_PROTO_QP_NOTIFY && q->recv_depth != 0 &&
	       q->slot_size >= 64 && q->credits <= q->recv_depth;
}

static int
decode_qps(const uint8_t *p, struct rn_proto_hello *h, char *why,
	   size_t why_len)
{
	unsigned int notify = 0;

	for (uint8_t i = 0; i < h->n_qps; i++, p += RN_PROTO_QP_SIZE) {
		struct rn_proto_qp *q = &h->qps[i];

		if (get_qp(p, i, q, why, why_len) != 0)
			return -EPROTO;
		if (q->kind == RN_PROTO_QP_NOTIFY) {
			if (++notify > 1 || !(h->caps & RN_CAP_NATIVE_NOTIFY) ||
			    !notify_qp_valid(q))
				return bad(why, why_len, "QP %u: notify QP "
					   "fields do not add up", i);
		} else if (q->kind != RN_PROTO_QP_DATA || q->recv_depth != 0 ||
			   q->slot_size != 0 || q->credits != 0) {
			return bad(why, why_len, "QP %u: unknown kind %u", i,
				   q->kind);
		}
	}
	if ((h->caps & RN_CAP_NATIVE_NOTIFY) && notify == 0)
		return bad(why, why_len, "native notify without a notify QP");
	return 0;
}

static int
decode_hello(const uint8_t *p, uint32_t len, struct rn_proto_hello *h,
	     char *why, size_t why_len)
{
	uint8_t name_len;

	if (len < 1)
		return bad(why, why_len, "hello: empty");
	name_len = p[0];
	if (len < 1u + name_len + (RN_PROTO_HELLO_FIXED - 1))
		return bad(why, why_len, "hello: %u bytes, too short", len);
	if (!name_valid(p + 1, name_len))
		return bad(why, why_len, "hello: node name is not valid");
	memset(h, 0, sizeof(*h));
	memcpy(h->name, p + 1, name_len);
	p += 1 + name_len;
	h->session_id = wire_get64(p);
	h->generation = wire_get32(p + 8);
	h->caps = wire_get32(p + 12);
	memcpy(h->gid, p + 16, 16);
	h->lid = wire_get16(p + 32);
	h->mtu = p[34];
	h->n_qps = p[35];
	h->probe_addr = wire_get64(p + 36);
	h->probe_rkey = wire_get32(p + 44);
	if (h->n_qps == 0 || h->n_qps > RN_PROTO_MAX_QPS)
		return bad(why, why_len, "hello: %u QPs; allowed 1..%d",
			   h->n_qps, RN_PROTO_MAX_QPS);
	if (len != RN_PROTO_HELLO_FIXED + name_len +
		   (uint32_t)h->n_qps * RN_PROTO_QP_SIZE)
		return bad(why, why_len, "hello: length %u does not match "
			   "%u QPs", len, h->n_qps);
	if (h->mtu < 1 || h->mtu > 5)
		return bad(why, why_len, "hello: MTU code %u; allowed 1..5",
			   h->mtu);
	return decode_qps(p + 48, h, why, why_len);
}

static int
decode_notify_qp(const uint8_t *p, uint32_t len, struct rn_proto_frame *f,
		 char *why, size_t why_len)
{
	uint8_t step;
	bool with_qp;

	if (len < RN_PROTO_NOTIFY_QP_FIXED)
		return bad(why, why_len, "notify QP: length %u", len);
	step = p[4];
	with_qp = step == RN_NOTIFY_QP_OFFER || step == RN_NOTIFY_QP_ACCEPT;
	if (step < RN_NOTIFY_QP_OFFER || step > RN_NOTIFY_QP_CLOSED)
		return bad(why, why_len, "notify QP: unknown step %u", step);
	if (len != RN_PROTO_NOTIFY_QP_FIXED + (with_qp ? RN_PROTO_QP_SIZE : 0))
		return bad(why, why_len, "notify QP: length %u for step %u",
			   len, step);
	if ((step == RN_NOTIFY_QP_REFUSE) != (p[5] != 0))
		return bad(why, why_len, "notify QP: reason byte %u for step %u",
			   p[5], step);
	f->notify_qp.generation = wire_get32(p);
	f->notify_qp.step = step;
	f->notify_qp.reason = p[5];
	f->notify_qp.offer = wire_get16(p + 6);
	memset(&f->notify_qp.qp, 0, sizeof(f->notify_qp.qp));
	if (!with_qp)
		return 0;
	if (get_qp(p + RN_PROTO_NOTIFY_QP_FIXED, 0, &f->notify_qp.qp, why,
		   why_len) != 0)
		return -EPROTO;
	if (!notify_qp_valid(&f->notify_qp.qp))
		return bad(why, why_len, "notify QP: fields do not add up");
	return 0;
}

bool
rn_proto_desc_name_valid(const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		char ch = name[i];

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' ||
		      ch == '.' || ch == ':' || ch == '/'))
			return false;
	}
	return len > 0 && len <= RN_PROTO_DESC_NAME_MAX;
}

/* DESC_REQUEST: id, then a name of exactly the length it gives. */
static int
decode_desc_request(const uint8_t *p, uint32_t len, struct rn_proto_frame *f,
		    char *why, size_t why_len)
{
	if (len < RN_PROTO_DESC_REQUEST_FIXED ||
	    len != RN_PROTO_DESC_REQUEST_FIXED + (uint32_t)p[4])
		return bad(why, why_len, "descriptor request: length %u", len);
	if (!rn_proto_desc_name_valid((const char *)p +
				      RN_PROTO_DESC_REQUEST_FIXED, p[4]))
		return bad(why, why_len, "descriptor request: the name is not "
			   "valid");
	f->desc_request.id = wire_get32(p);
	memcpy(f->desc_request.name, p + RN_PROTO_DESC_REQUEST_FIXED, p[4]);
	f->desc_request.name[p[4]] = '\0';
	return 0;
}

/* DESC_ANSWER: a blob of exactly RN_PROTO_DESC_BLOB bytes with OK, none
 * with any other status. */
static int
decode_desc_answer(const uint8_t *p, uint32_t len, struct rn_proto_frame *f,
		   char *why, size_t why_len)
{
	uint16_t status, blob_len;

	if (len < RN_PROTO_DESC_ANSWER_FIXED)
		return bad(why, why_len, "descriptor answer: length %u", len);
	status = wire_get16(p + 4);
	blob_len = wire_get16(p + 6);
	if (status > RN_DESC_UNAVAILABLE)
		return bad(why, why_len, "descriptor answer: unknown status %u",
			   status);
	if (blob_len != (status == RN_DESC_OK ? RN_PROTO_DESC_BLOB : 0) ||
	    len != RN_PROTO_DESC_ANSWER_FIXED + (uint32_t)blob_len)
		return bad(why, why_len, "descriptor answer: %u blob bytes in "
			   "%u for status %u", blob_len, len, status);
	f->desc_answer.id = wire_get32(p);
	f->desc_answer.status = status;
	f->desc_answer.blob_len = blob_len;
	f->desc_answer.blob = blob_len != 0 ? p + RN_PROTO_DESC_ANSWER_FIXED :
					      NULL;
	return 0;
}

/* CHALLENGE and ANSWER: name, session, nonce, and ANSWER's proof. */
static int
decode_auth(const uint8_t *p, uint32_t len, uint8_t type,
	    struct rn_proto_auth *a, char *why, size_t why_len)
{
	uint32_t tail = RN_PROTO_MAC_SIZE;

	memset(a, 0, sizeof(*a));
	if (type != RN_PROTO_PROOF) {
		tail = 8 + RN_PROTO_NONCE_SIZE +
		       (type == RN_PROTO_ANSWER ? RN_PROTO_MAC_SIZE : 0);
		if (len < 1 || len != 1u + p[0] + tail)
			return bad(why, why_len, "%s: length %u",
				   rn_proto_type_name(type), len);
		if (!name_valid(p + 1, p[0]))
			return bad(why, why_len, "%s: node name is not valid",
				   rn_proto_type_name(type));
		memcpy(a->name, p + 1, p[0]);
		p += 1 + p[0];
		a->session_id = wire_get64(p);
		memcpy(a->nonce, p + 8, RN_PROTO_NONCE_SIZE);
		p += 8 + RN_PROTO_NONCE_SIZE;
	} else if (len != tail) {
		return bad(why, why_len, "PROOF: length %u", len);
	}
	if (type != RN_PROTO_CHALLENGE)
		memcpy(a->proof, p, RN_PROTO_MAC_SIZE);
	return 0;
}

static int
decode_payload(const uint8_t *p, uint32_t len, struct rn_proto_frame *f,
	       char *why, size_t why_len)
{
	switch (f->type) {
	case RN_PROTO_HELLO:
	case RN_PROTO_ACCEPT:
		return decode_hello(p, len, &f->hello, why, why_len);
	case RN_PROTO_REFUSE:
		if (len < 3 || len != 3u + p[2] || p[2] > RN_PROTO_REASON_MAX)
			return bad(why, why_len, "refuse: length %u", len);
		for (uint8_t i = 0; i < p[2]; i++)
			if (p[3 + i] < 0x20 || p[3 + i] > 0x7e)
				return bad(why, why_len, "refuse: text byte "
					   "0x%02x is not printable", p[3 + i]);
		f->refuse.code = wire_get16(p);
		memcpy(f->refuse.text, p + 3, p[2]);
		f->refuse.text[p[2]] = '\0';
		return 0;
	case RN_PROTO_NOTIFY_QP:
		return decode_notify_qp(p, len, f, why, why_len);
	case RN_PROTO_CHALLENGE:
	case RN_PROTO_ANSWER:
	case RN_PROTO_PROOF:
		return decode_auth(p, len, f->type, &f->auth, why, why_len);
	case RN_PROTO_DESC_REQUEST:
		return decode_desc_request(p, len, f, why, why_len);
	case RN_PROTO_DESC_ANSWER:
		return decode_desc_answer(p, len, f, why, why_len);
	case RN_PROTO_READY:
		if (len != 4)
			return bad(why, why_len, "ready: length %u", len);
		f->ready_generation = wire_get32(p);
		return 0;
	case RN_PROTO_HEARTBEAT:
		return len == 0 ? 0 : bad(why, why_len, "heartbeat: length %u",
					  len);
	case RN_PROTO_CLOSE:
		if (len != 2)
			return bad(why, why_len, "close: length %u", len);
		f->close_reason = wire_get16(p);
		return 0;
	case RN_PROTO_NOTIFY: {
		/* Where it stands among the native ones, then the same frame
		 * as a native notification's SEND. */
		struct rn_notify_view v;

		if (len < RN_PROTO_NOTIFY_HEAD)
			return bad(why, why_len, "notify: length %u", len);
		f->notify.native_before = wire_get32(p);
		if (rn_notify_frame_read(p + RN_PROTO_NOTIFY_HEAD,
					 len - RN_PROTO_NOTIFY_HEAD, &v) != 0)
			return bad(why, why_len, "notify: name and msg lengths "
				   "do not add up to %u", len - RN_PROTO_NOTIFY_HEAD);
		f->notify.name = v.name;
		f->notify.name_len = v.name_len;
		f->notify.msg = v.msg;
		f->notify.msg_len = v.msg_len;
		return 0;
	}
	}
	return bad(why, why_len, "unknown frame type %u", f->type);
}

int
rn_proto_decode(const uint8_t *buf, size_t len, struct rn_proto_frame *f,
		size_t *frame_len, char *why, size_t why_len)
{
	uint32_t magic, payload;
	int rc;

	if (len < RN_PROTO_HEADER_SIZE)
		return 0;
	magic = wire_get32(buf);
	if (magic != RN_PROTO_MAGIC)
		return bad(why, why_len, "wrong magic 0x%08x", magic);
	if (buf[4] != RN_PROTO_VERSION) {
		snprintf(why, why_len, "protocol version %u; this side speaks %u",
			 buf[4], RN_PROTO_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (wire_get16(buf + 6) != 0)
		return bad(why, why_len, "unknown flags 0x%04x",
			   wire_get16(buf + 6));
	payload = wire_get32(buf + 8);
	if (payload > RN_PROTO_MAX_PAYLOAD)
		return bad(why, why_len, "frame of %u bytes; at most %u",
			   payload, RN_PROTO_MAX_PAYLOAD);
	f->type = buf[5];
	if (f->type < RN_PROTO_HELLO || f->type > RN_PROTO_TYPE_LAST)
		return bad(why, why_len, "unknown frame type %u", f->type);
	if (len < RN_PROTO_HEADER_SIZE + (size_t)payload)
		return 0;
	rc = decode_payload(buf + RN_PROTO_HEADER_SIZE, payload, f, why,
			    why_len);
	if (rc != 0)
		return rc;
	*frame_len = RN_PROTO_HEADER_SIZE + payload;
	return 1;
}

const char *
rn_proto_type_name(uint8_t type)
{
	static const char *const names[] = {
		[RN_PROTO_HELLO] = "HELLO", [RN_PROTO_ACCEPT] = "ACCEPT",
		[RN_PROTO_REFUSE] = "REFUSE", [RN_PROTO_READY] = "READY",
		[RN_PROTO_HEARTBEAT] = "HEARTBEAT", [RN_PROTO_CLOSE] = "CLOSE",
		[RN_PROTO_NOTIFY] = "NOTIFY", [RN_PROTO_NOTIFY_QP] = "NOTIFY_QP",
		[RN_PROTO_CHALLENGE] = "CHALLENGE", [RN_PROTO_ANSWER] = "ANSWER",
		[RN_PROTO_PROOF] = "PROOF",
		[RN_PROTO_DESC_REQUEST] = "DESC_REQUEST",
		[RN_PROTO_DESC_ANSWER] = "DESC_ANSWER",
	};

	return type < sizeof(names) / sizeof(names[0]) && names[type] != NULL ?
		       names[type] : "unknown";
}

const char *
rn_proto_refusal_name(uint16_t code)
{
	static const char *const names[] = {
		[RN_REFUSE_VERSION] = "version", [RN_REFUSE_CAPABILITY] = "capability",
		[RN_REFUSE_DUPLICATE] = "duplicate", [RN_REFUSE_NAME] = "name",
		[RN_REFUSE_RESOURCES] = "resources", [RN_REFUSE_PROTOCOL] = "protocol",
		[RN_REFUSE_AUTH] = "authentication",
	};

	return code < sizeof(names) / sizeof(names[0]) && names[code] != NULL ?
		       names[code] : "unknown";
}
