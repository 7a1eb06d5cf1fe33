/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_PROTO_WIRE_H
#define RN_PROTO_WIRE_H

/* Big-endian field access for the control protocol's codec. */

#include <rte_byteorder.h>
#include <stdint.h>
#include <string.h>

/* HELLO/ACCEPT payload without the name and the QP records. */
#define RN_PROTO_HELLO_FIXED (1 + 48)

static inline void
wire_put16(uint8_t *p, uint16_t v)
{
	v = rte_cpu_to_be_16(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
wire_put32(uint8_t *p, uint32_t v)
{
	v = rte_cpu_to_be_32(v);
	memcpy(p, &v, sizeof(v));
}

static inline void
wire_put64(uint8_t *p, uint64_t v)
{
	v = rte_cpu_to_be_64(v);
	memcpy(p, &v, sizeof(v));
}

static inline uint16_t
wire_get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_16(v);
}

static inline uint32_t
wire_get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_32(v);
}

static inline uint64_t
wire_get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return rte_be_to_cpu_64(v);
}

#endif /* RN_PROTO_WIRE_H */
