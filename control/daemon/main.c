/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rnotifyd [-c FILE]          run the dataplane on FILE
 * rnotifyd --check-config FILE  validate FILE, print the effective config
 *
 * Exit codes: 0 success, 1 start-up failed, 2 bad usage or configuration.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_config.h"
#include "rn_daemon.h"
#include "rn_version.h"

#define EXIT_BAD_INPUT 2
#define DEFAULT_CONFIG RN_DEFAULT_CONFIG  /* where meson installs it */

static void
usage(FILE *out)
{
	fprintf(out,
		"usage: rnotifyd [-c FILE]\n"
		"       rnotifyd --check-config FILE\n"
		"  -c, --config FILE    configuration (default " DEFAULT_CONFIG ")\n"
		"      --check-config FILE\n"
		"                       validate FILE and print the effective\n"
		"                       configuration, then exit\n"
		"  -V, --version        print the version\n"
		"  -h, --help           this text\n"
		"Environment: " RN_ENV_NOTIFY_ENABLED " and "
		RN_ENV_NOTIFY_OOB_FALLBACK " override [notify] enabled and\n"
		"oob_fallback (0, 1, true, false, on, off).\n");
}

static struct rn_daemon daemon_state;

int
main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check-config", required_argument, NULL, 'C' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_CONFIG;
	struct rn_config_error err;
	bool check = false;
	int opt;

	while ((opt = getopt_long(argc, argv, "c:Vh", options, NULL)) != -1) {
		switch (opt) {
		case 'c':
			path = optarg;
			break;
		case 'C':
			path = optarg;
			check = true;
			break;
		case 'V':
			printf("rnotifyd %s\n", RN_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_BAD_INPUT;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "rnotifyd: unexpected argument '%s'\n",
			argv[optind]);
		usage(stderr);
		return EXIT_BAD_INPUT;
	}
	if (rn_config_load(path, &daemon_state.cfg, &err) != 0) {
		fprintf(stderr, "rnotifyd: %s\n", err.text);
		return EXIT_BAD_INPUT;
	}
	if (check) {
		if (rn_config_listen_unprotected(&daemon_state.cfg))
			fprintf(stderr, "rnotifyd: warning: %s: [control] "
				"listen = %s with no secret_file: any process "
				"that reaches it can pose as a peer "
				"(docs/security.md)\n", path,
				daemon_state.cfg.control.listen);
		printf("; %s: valid; effective configuration:\n", path);
		return rn_config_print(&daemon_state.cfg, stdout) == 0 ?
			       0 : 1;
	}
	snprintf(daemon_state.config_path, sizeof(daemon_state.config_path),
		 "%s", path);
	return rn_daemon_run(&daemon_state, argv[0]);
}
