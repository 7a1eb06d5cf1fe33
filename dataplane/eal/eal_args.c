/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rn_eal.h"

void
rn_hugepages_probe(uint64_t need_bytes, struct rn_hugepages_probe *out)
{
	char line[128];
	FILE *f = fopen("/proc/meminfo", "r");
	uint64_t need_pages;

	memset(out, 0, sizeof(*out));
	if (f == NULL) {
		snprintf(out->reason, sizeof(out->reason),
			 "cannot read /proc/meminfo: %s", strerror(errno));
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		uint64_t kib;

		if (sscanf(line, "HugePages_Free: %" SCNu64, &out->free_pages) == 1)
			continue;
		if (sscanf(line, "Hugepagesize: %" SCNu64 " kB", &kib) == 1)
			out->page_size = kib * 1024;
	}
	fclose(f);
	if (out->page_size == 0) {
		snprintf(out->reason, sizeof(out->reason),
			 "the kernel has no hugepage support");
		return;
	}
	need_pages = (need_bytes + out->page_size - 1) / out->page_size;
	if (out->free_pages < need_pages) {
		snprintf(out->reason, sizeof(out->reason),
			 "%" PRIu64 " free %" PRIu64 " KiB hugepages, %" PRIu64
			 " needed (scripts/setup.sh reserves them)",
			 out->free_pages, out->page_size / 1024, need_pages);
		return;
	}
	if (geteuid() != 0) {
		snprintf(out->reason, sizeof(out->reason),
			 "hugepages need root");
		return;
	}
	out->usable = true;
}

/* Append one argument, copied into args->storage. */
static int
push(struct rn_eal_args *args, size_t *used, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int
push(struct rn_eal_args *args, size_t *used, const char *fmt, ...)
{
	char *dst = args->storage + *used;
	size_t room = sizeof(args->storage) - *used;
	va_list ap;
	int n;

	if (args->argc == RN_EAL_MAX_ARGS)
		return -E2BIG;
	va_start(ap, fmt);
	n = vsnprintf(dst, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room)
		return -E2BIG;
	args->argv[args->argc++] = dst;
	args->argv[args->argc] = NULL;
	*used += (size_t)n + 1;
	return 0;
}

static void
format_lcores(const struct rn_lcore_list *lcores, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < lcores->count && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u",
					 i == 0 ? "" : ",", lcores->ids[i]);
}

/* EAL's --lcores: each lcore on its CPU, "0@0,1@1,2@1". */
static void
format_lcore_cpus(const struct rn_dataplane_config *dp, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < dp->lcores.count && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u@%u",
					 i == 0 ? "" : ",", dp->lcores.ids[i],
					 dp->cpus.ids[i]);
}

int
rn_eal_args_build(const struct rn_config *cfg,
		  const struct rn_hugepages_probe *probe, const char *prog,
		  struct rn_eal_args *args, struct rn_config_error *err)
{
	const struct rn_dataplane_config *dp = &cfg->dataplane;
	char lcores[RN_CONFIG_MAX_LCORES * 10];
	size_t used = 0;
	int rc = 0;

	memset(args, 0, sizeof(*args));
	switch (dp->hugepages) {
	case RN_HUGEPAGES_ON:
		if (!probe->usable) {
			snprintf(err->text, sizeof(err->text),
				 "[dataplane] hugepages = on, but hugepages "
				 "cannot be used: %s", probe->reason);
			return -ENOMEM;
		}
		args->hugepages = true;
		break;
	case RN_HUGEPAGES_AUTO:
		args->hugepages = probe->usable;
		break;
	case RN_HUGEPAGES_OFF:
		args->hugepages = false;
		break;
	}
	rc |= push(args, &used, "%s", prog);
	if (dp->cpus.count == 0) {
		format_lcores(&dp->lcores, lcores, sizeof(lcores));
		rc |= push(args, &used, "-l");
	} else {
		format_lcore_cpus(dp, lcores, sizeof(lcores));
		rc |= push(args, &used, "--lcores");
	}
	rc |= push(args, &used, "%s", lcores);
	rc |= push(args, &used, "--main-lcore=%u", dp->lcores.ids[0]);
	rc |= push(args, &used, "--no-pci");
	rc |= push(args, &used, "--file-prefix=" RN_EAL_FILE_PREFIX "%s",
		   dp->name);
	rc |= push(args, &used, "-m");
	rc |= push(args, &used, "%u", dp->memory_mb);
	if (args->hugepages) {
		rc |= push(args, &used, "--in-memory");
	} else {
		/* --no-huge is incompatible with --in-memory; --no-shconf
		 * keeps two such processes from sharing a config file. */
		rc |= push(args, &used, "--no-huge");
		rc |= push(args, &used, "--no-shconf");
	}
	if (!cfg->telemetry.enabled)
		rc |= push(args, &used, "--no-telemetry");
	/* EAL's start-up chatter is not for operators; telemetry warns at
	 * every start that it has no legacy socket, which we never use. */
	rc |= push(args, &used, "--log-level=lib.eal:warning");
	rc |= push(args, &used, "--log-level=lib.telemetry:error");
	if (rc != 0) {
		snprintf(err->text, sizeof(err->text),
			 "EAL arguments do not fit in %zu bytes",
			 sizeof(args->storage));
		return -E2BIG;
	}
	return 0;
}
