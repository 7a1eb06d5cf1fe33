/* SPDX-License-Identifier: BSD-3-Clause */
#include <stdbool.h>
#include <string.h>

#include "proto_wire_pvt.h"
#include "rn_notify_frame.h"
#include "rn_proto.h"

static size_t
header(uint8_t *buf, size_t cap, uint8_t type, uint32_t payload)
{
	if (cap < RN_PROTO_HEADER_SIZE + (size_t)payload ||
	    payload > RN_PROTO_MAX_PAYLOAD)
		return 0;
	wire_put32(buf, RN_PROTO_MAGIC);
	buf[4] = RN_PROTO_VERSION;
	buf[5] = type;
	wire_put16(buf + 6, 0);
	wire_put32(buf + 8, payload);
	return RN_PROTO_HEADER_SIZE;
}

/* One QP record, RN_PROTO_QP_SIZE bytes. */
static void
put_qp(uint8_t *p, const struct rn_proto_qp *q)
{
	p[0] = q->kind;
	p[1] = p[2] = p[3] = 0;
	wire_put32(p + 4, q->qpn);
	wire_put32(p + 8, q->psn);
	wire_put32(p + 12, q->recv_depth);
	wire_put32(p + 16, q->slot_size);
	wire_put32(p + 20, q->credits);
}

size_t
rn_proto_encode_hello(uint8_t *buf, size_t cap, uint8_t type,
		      const struct rn_proto_hello *h)
{
	size_t name_len = strlen(h->name);
	uint32_t payload = (uint32_t)(RN_PROTO_HELLO_FIXED + name_len +
				      (size_t)h->n_qps * RN_PROTO_QP_SIZE);
	uint8_t *p;

	if ((type != RN_PROTO_HELLO && type != RN_PROTO_ACCEPT) ||
	    name_len == 0 || name_len > RN_PROTO_NAME_MAX || h->n_qps == 0 ||
	    h->n_qps > RN_PROTO_MAX_QPS || header(buf, cap, type, payload) == 0)
		return 0;
	p = buf + RN_PROTO_HEADER_SIZE;
	*p++ = (uint8_t)name_len;
	memcpy(p, h->name, name_len);
	p += name_len;
	wire_put64(p, h->session_id);
	wire_put32(p + 8, h->generation);
	wire_put32(p + 12, h->caps);
	memcpy(p + 16, h->gid, 16);
	wire_put16(p + 32, h->lid);
	p[34] = h->mtu;
	p[35] = h->n_qps;
	wire_put64(p + 36, h->probe_addr);
	wire_put32(p + 44, h->probe_rkey);
	p += 48;
	for (uint8_t i = 0; i < h->n_qps; i++, p += RN_PROTO_QP_SIZE)
		put_qp(p, &h->qps[i]);
	return RN_PROTO_HEADER_SIZE + payload;
}

size_t
rn_proto_encode_refuse(uint8_t *buf, size_t cap, uint16_t code,
		       const char *text)
{
	size_t n = strnlen(text, RN_PROTO_REASON_MAX);

	if (header(buf, cap, RN_PROTO_REFUSE, (uint32_t)(3 + n)) == 0)
		return 0;
	wire_put16(buf + RN_PROTO_HEADER_SIZE, code);
	buf[RN_PROTO_HEADER_SIZE + 2] = (uint8_t)n;
	memcpy(buf + RN_PROTO_HEADER_SIZE + 3, text, n);
	return RN_PROTO_HEADER_SIZE + 3 + n;
}

size_t
rn_proto_encode_ready(uint8_t *buf, size_t cap, uint32_t generation)
{
	if (header(buf, cap, RN_PROTO_READY, 4) == 0)
		return 0;
	wire_put32(buf + RN_PROTO_HEADER_SIZE, generation);
	return RN_PROTO_HEADER_SIZE + 4;
}

size_t
rn_proto_encode_heartbeat(uint8_t *buf, size_t cap)
{
	return header(buf, cap, RN_PROTO_HEARTBEAT, 0);
}

size_t
rn_proto_encode_close(uint8_t *buf, size_t cap, uint16_t reason)
{
	if (header(buf, cap, RN_PROTO_CLOSE, 2) == 0)
		return 0;
	wire_put16(buf + RN_PROTO_HEADER_SIZE, reason);
	return RN_PROTO_HEADER_SIZE + 2;
}

size_t
rn_proto_encode_notify(uint8_t *buf, size_t cap, uint32_t native_before,
		       const void *name, uint32_t name_len, const void *msg,
		       uint32_t msg_len)
{
	uint64_t payload = RN_PROTO_NOTIFY_HEAD +
			   rn_notify_frame_size(name_len, msg_len);
	uint8_t *p = buf + RN_PROTO_HEADER_SIZE;

	if (payload > RN_PROTO_MAX_PAYLOAD ||
	    header(buf, cap, RN_PROTO_NOTIFY, (uint32_t)payload) == 0)
		return 0;
	wire_put32(p, native_before);
	rn_notify_frame_write(p + RN_PROTO_NOTIFY_HEAD, name, name_len, msg,
			      msg_len);
	return RN_PROTO_HEADER_SIZE + (size_t)payload;
}

size_t
rn_proto_encode_notify_qp(uint8_t *buf, size_t cap, uint32_t generation,
			  uint8_t step, uint8_t reason, uint16_t offer,
			  const struct rn_proto_qp *qp)
{
	bool with_qp = step == RN_NOTIFY_QP_OFFER || step == RN_NOTIFY_QP_ACCEPT;
	uint32_t payload = RN_PROTO_NOTIFY_QP_FIXED +
			   (with_qp ? RN_PROTO_QP_SIZE : 0);
	uint8_t *p = buf + RN_PROTO_HEADER_SIZE;

	if (step < RN_NOTIFY_QP_OFFER || step > RN_NOTIFY_QP_CLOSED ||
	    (with_qp && qp == NULL) ||
	    header(buf, cap, RN_PROTO_NOTIFY_QP, payload) == 0)
		return 0;
	wire_put32(p, generation);
	p[4] = step;
	p[5] = step == RN_NOTIFY_QP_REFUSE ? reason : 0;
	wire_put16(p + 6, offer);
	if (with_qp)
		put_qp(p + RN_PROTO_NOTIFY_QP_FIXED, qp);
	return RN_PROTO_HEADER_SIZE + payload;
}

size_t
rn_proto_encode_auth(uint8_t *buf, size_t cap, uint8_t type,
		     const struct rn_proto_auth *a)
{
	size_t name_len = strlen(a->name);
	uint32_t payload = RN_PROTO_MAC_SIZE;
	uint8_t *p = buf + RN_PROTO_HEADER_SIZE;

	if (type != RN_PROTO_PROOF) {
		if (name_len == 0 || name_len > RN_PROTO_NAME_MAX ||
		    (type != RN_PROTO_CHALLENGE && type != RN_PROTO_ANSWER))
			return 0;
		payload = (uint32_t)(1 + name_len + 8 + RN_PROTO_NONCE_SIZE +
				     (type == RN_PROTO_ANSWER ?
				      RN_PROTO_MAC_SIZE : 0));
	}
	if (header(buf, cap, type, payload) == 0)
		return 0;
	if (type != RN_PROTO_PROOF) {
		*p++ = (uint8_t)name_len;
		memcpy(p, a->name, name_len);
		p += name_len;
		wire_put64(p, a->session_id);
		memcpy(p + 8, a->nonce, RN_PROTO_NONCE_SIZE);
		p += 8 + RN_PROTO_NONCE_SIZE;
	}
	if (type != RN_PROTO_CHALLENGE)
		memcpy(p, a->proof, RN_PROTO_MAC_SIZE);
	return RN_PROTO_HEADER_SIZE + payload;
}

size_t
rn_proto_encode_desc_request(uint8_t *buf, size_t cap, uint32_t id,
			     const char *name)
{
	size_t n = strnlen(name, RN_PROTO_DESC_NAME_MAX + 1);
	uint8_t *p = buf + RN_PROTO_HEADER_SIZE;

	if (!rn_proto_desc_name_valid(name, n) ||
	    header(buf, cap, RN_PROTO_DESC_REQUEST,
		   (uint32_t)(RN_PROTO_DESC_REQUEST_FIXED + n)) == 0)
		return 0;
	wire_put32(p, id);
	p[4] = (uint8_t)n;
	memcpy(p + RN_PROTO_DESC_REQUEST_FIXED, name, n);
	return RN_PROTO_HEADER_SIZE + RN_PROTO_DESC_REQUEST_FIXED + n;
}

size_t
rn_proto_encode_desc_answer(uint8_t *buf, size_t cap, uint32_t id,
			    uint16_t status, const void *blob,
			    uint16_t blob_len)
{
	uint8_t *p = buf + RN_PROTO_HEADER_SIZE;

	if ((status == RN_DESC_OK) != (blob_len == RN_PROTO_DESC_BLOB) ||
	    (status != RN_DESC_OK && blob_len != 0) ||
	    status > RN_DESC_UNAVAILABLE || (blob_len != 0 && blob == NULL) ||
	    header(buf, cap, RN_PROTO_DESC_ANSWER,
		   (uint32_t)RN_PROTO_DESC_ANSWER_FIXED + blob_len) == 0)
		return 0;
	wire_put32(p, id);
	wire_put16(p + 4, status);
	wire_put16(p + 6, blob_len);
	if (blob_len != 0)
		memcpy(p + RN_PROTO_DESC_ANSWER_FIXED, blob, blob_len);
	return RN_PROTO_HEADER_SIZE + RN_PROTO_DESC_ANSWER_FIXED + blob_len;
}
