/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef BENCH_TIME_H
#define BENCH_TIME_H

/* What the benchmarks share to time round trips and sort them. */

#include <stdint.h>
#include <time.h>

static inline uint64_t
rn_bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* qsort() order of uint64_t. */
static inline int
rn_bench_compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

#endif /* BENCH_TIME_H */
