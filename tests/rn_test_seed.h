/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef RN_TEST_SEED_H
#define RN_TEST_SEED_H

/* The seed of a unit test's random choices, shared by the cmocka tests. */

#include <stdio.h>
#include <stdlib.h>

/*
 * The seed of a test's random choices: RNOTIFY_TEST_SEED when set (to
 * replay a failure, or to try other choices), else the test's own fixed
 * one, so that a plain run is the same every time. Printed as a TAP
 * comment either way.
 */
static inline unsigned int
rn_test_seed(const char *test, unsigned int fixed)
{
	const char *env = getenv("RNOTIFY_TEST_SEED");
	unsigned int seed = env != NULL ? (unsigned int)strtoul(env, NULL, 0)
					: fixed;

	printf("# %s: random choices from seed %u (RNOTIFY_TEST_SEED=%u "
	       "replays them)\n", test, seed, seed);
	return seed;
}

#endif /* RN_TEST_SEED_H */
