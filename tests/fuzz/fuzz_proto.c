/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the control protocol decoder on arbitrary bytes, as a
 * connection would feed it (frame after frame). A decoded HELLO or ACCEPT
 * must encode back to bytes that decode to the same thing; a decoded
 * CHALLENGE, ANSWER or PROOF to the very bytes it came from (they have no
 * field the decoder lets vary).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rn_proto.h"

static void
check_round_trip(const struct rn_proto_frame *f)
{
	static uint8_t buf[RN_PROTO_HEADER_SIZE + RN_PROTO_MAX_PAYLOAD];
	struct rn_proto_frame again;
	char why[128];
	size_t used;
	size_t n = rn_proto_encode_hello(buf, sizeof(buf), f->type, &f->hello);

	if (n == 0 || rn_proto_decode(buf, n, &again, &used, why,
				      sizeof(why)) != 1 ||
	    used != n || memcmp(&again.hello, &f->hello, sizeof(f->hello)) != 0)
		abort();
}

static void
check_auth_bytes(const struct rn_proto_frame *f, const uint8_t *data,
		 size_t used)
{
	uint8_t buf[RN_PROTO_HEADER_SIZE + RN_PROTO_AUTH_MAX];
	size_t n = rn_proto_encode_auth(buf, sizeof(buf), f->type, &f->auth);

	if (n != used || memcmp(buf, data, n) != 0)
		abort();
}

/* A decoded descriptor request or answer encodes back to its bytes. */
static void
check_desc_bytes(const struct rn_proto_frame *f, const uint8_t *data,
		 size_t used)
{
	uint8_t buf[RN_PROTO_HEADER_SIZE + RN_PROTO_DESC_ANSWER_FIXED +
		    RN_PROTO_DESC_BLOB];
	size_t n = f->type == RN_PROTO_DESC_REQUEST ?
		rn_proto_encode_desc_request(buf, sizeof(buf),
					     f->desc_request.id,
					     f->desc_request.name) :
		rn_proto_encode_desc_answer(buf, sizeof(buf), f->desc_answer.id,
					    f->desc_answer.status,
					    f->desc_answer.blob,
					    f->desc_answer.blob_len);

	if (n != used || memcmp(buf, data, n) != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_proto_frame f;
	char why[128];

	while (size > 0) {
		size_t used = 0;
		int rc = rn_proto_decode(data, size, &f, &used, why, sizeof(why));

		if (rc <= 0)
			break;   /* more needed, or refused: the connection ends */
		if (used == 0 || used > size)
			abort();
		if (f.type == RN_PROTO_HELLO || f.type == RN_PROTO_ACCEPT)
			check_round_trip(&f);
		if (f.type == RN_PROTO_CHALLENGE || f.type == RN_PROTO_ANSWER ||
		    f.type == RN_PROTO_PROOF)
			check_auth_bytes(&f, data, used);
		if (f.type == RN_PROTO_DESC_REQUEST ||
		    f.type == RN_PROTO_DESC_ANSWER)
			check_desc_bytes(&f, data, used);
		data += used;
		size -= used;
	}
	return 0;
}
