/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The handshake's proofs: HMAC-SHA256, keyed with the shared secret, over
 * a byte string that names everything both sides said in the challenge
 * exchange (docs/protocol.md, "Authentication"). The cryptography is
 * OpenSSL's; this file only lays out the bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "proto_wire_pvt.h"
#include "rn_proto.h"

#define PROOF_LABEL_SIZE 6    /* "caller", "callee" or "simwir" */
#define PROOF_MSG_MAX (4 + 1 + PROOF_LABEL_SIZE + \
		       2 * (1 + RN_PROTO_NAME_MAX) + 2 * 8 + \
		       2 * RN_PROTO_NONCE_SIZE)

static uint8_t *
put_name(uint8_t *p, const char *name, size_t n)
{
	*p++ = (uint8_t)n;
	memcpy(p, name, n);
	return p + n;
}

int
rn_proto_proof(const uint8_t *key, size_t key_len, enum rn_proto_role role,
	       const struct rn_proto_transcript *t,
	       uint8_t mac[RN_PROTO_MAC_SIZE])
{
	uint8_t msg[PROOF_MSG_MAX], *p = msg;
	size_t caller_len = strnlen(t->caller, RN_PROTO_NAME_MAX + 1);
	size_t callee_len = strnlen(t->callee, RN_PROTO_NAME_MAX + 1);
	unsigned int mac_len = 0;

	if (key_len == 0 || key_len > RN_PROTO_SECRET_MAX || caller_len == 0 ||
	    caller_len > RN_PROTO_NAME_MAX || callee_len == 0 ||
	    callee_len > RN_PROTO_NAME_MAX ||
	    role < RN_PROTO_ROLE_CALLER || role > RN_PROTO_ROLE_WIRE)
		return -EINVAL;
	wire_put32(p, RN_PROTO_MAGIC);
	p[4] = RN_PROTO_VERSION;
	memcpy(p + 5, role == RN_PROTO_ROLE_CALLER ? "caller" :
		      role == RN_PROTO_ROLE_CALLEE ? "callee" : "simwir",
	       PROOF_LABEL_SIZE);
	p += 5 + PROOF_LABEL_SIZE;
	p = put_name(p, t->caller, caller_len);
	p = put_name(p, t->callee, callee_len);
	wire_put64(p, t->caller_session);
	wire_put64(p + 8, t->callee_session);
	memcpy(p + 16, t->caller_nonce, RN_PROTO_NONCE_SIZE);
	memcpy(p + 16 + RN_PROTO_NONCE_SIZE, t->callee_nonce,
	       RN_PROTO_NONCE_SIZE);
	p += 16 + 2 * RN_PROTO_NONCE_SIZE;
	if (HMAC(EVP_sha256(), key, (int)key_len, msg, (size_t)(p - msg), mac,
		 &mac_len) == NULL || mac_len != RN_PROTO_MAC_SIZE)
		return -EIO;
	return 0;
}

int
rn_proto_wire_token(const uint8_t *key, size_t key_len,
		    const struct rn_proto_transcript *t,
		    uint8_t token[RN_PROTO_TOKEN_SIZE])
{
	uint8_t mac[RN_PROTO_MAC_SIZE];
	int rc = rn_proto_proof(key, key_len, RN_PROTO_ROLE_WIRE, t, mac);

	if (rc == 0)
		memcpy(token, mac, RN_PROTO_TOKEN_SIZE);
	OPENSSL_cleanse(mac, sizeof(mac));
	return rc;
}

bool
rn_proto_proof_equal(const uint8_t *a, const uint8_t *b)
{
	return CRYPTO_memcmp(a, b, RN_PROTO_MAC_SIZE) == 0;
}

int
rn_proto_nonce(uint8_t nonce[RN_PROTO_NONCE_SIZE])
{
	return RAND_bytes(nonce, RN_PROTO_NONCE_SIZE) == 1 ? 0 : -EIO;
}
