/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the notification frame readers (node-level, then
 * agent frames and refusals, as the lcore tries them) on arbitrary bytes,
 * as a receive slot would hold them after a SEND of that length. A frame
 * either accepts must lie inside those bytes, add up to exactly their
 * length, and write back to the same bytes; no bytes are both kinds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rn_notify_frame.h"

#define SLOT_MAX 65536u   /* [notify] slot_size: the most a SEND can fill */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_notify_agent_view a;
	struct rn_notify_view v;
	uint8_t *again;

	if (size > SLOT_MAX)
		return 0;
	if (rn_notify_frame_read(data, (uint32_t)size, &v) != 0) {
		if (rn_notify_agent_frame_read(data, (uint32_t)size, &a) != 0)
			return 0;   /* refused: counted and reposted */
		if (a.dst != data + 24 || a.name != a.dst + a.dst_len ||
		    a.src != a.name + a.name_len + a.msg_len ||
		    rn_notify_agent_frame_size(a.dst_len, a.src_len,
					       a.name_len, a.msg_len) != size)
			abort();
		again = malloc(size);
		if (again == NULL)
			return 0;
		rn_notify_agent_frame_write(again, a.kind, a.reason, a.cookie,
					    a.dst,
					    a.dst_len, a.src, a.src_len,
					    a.name_len, a.msg_len, a.name);
		if (memcmp(again, data, size) != 0)
			abort();
		free(again);
		return 0;
	}
	if (rn_notify_agent_frame_read(data, (uint32_t)size, &a) == 0)
		abort();
	if (v.name != data + 4 || v.msg != data + 8 + v.name_len ||
	    rn_notify_frame_size(v.name_len, v.msg_len) != size)
		abort();
	again = malloc(size);
	if (again == NULL)
		return 0;
	rn_notify_frame_write(again, v.name, v.name_len, v.msg, v.msg_len);
	if (memcmp(again, data, size) != 0)
		abort();
	free(again);
	return 0;
}
