/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The smallest application of librnotify, built by scripts/test-install.sh
 * against the installed rn_client.h and rnotify.pc only: attach to the
 * daemon at SOCKET as agent "installed", send one notification to AGENT on
 * NODE asking for its completion, and wait for its fate (a completion, or
 * a refusal when AGENT is not attached there).
 *   installed_client SOCKET NODE AGENT
 * Exits 0 when the send went and its fate came back.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <rn_client.h>

int
main(int argc, char **argv)
{
	struct rn_client *c;
	struct rn_client_completion done;
	struct rn_client_event ev;
	time_t deadline = time(NULL) + 30;
	int rc;

	if (argc != 4) {
		fprintf(stderr, "usage: installed_client SOCKET NODE AGENT\n");
		return 2;
	}
	rc = rn_client_attach(argv[1], "installed", &c);
	if (rc != 0) {
		fprintf(stderr, "attach %s: %s\n", argv[1], strerror(-rc));
		return 1;
	}
	while ((rc = rn_client_send(c, argv[2], argv[3], "hello", 5, "world",
				    5, 1, RN_CLIENT_WANT_COMPLETION)) ==
	       -EAGAIN && time(NULL) < deadline)
		rn_client_wait(c, 10);   /* the first send connects */
	if (rc != 0) {
		fprintf(stderr, "send to %s/%s: %s\n", argv[2], argv[3],
			strerror(-rc));
		rn_client_detach(c);
		return 1;
	}
	rc = -ETIMEDOUT;
	while (time(NULL) < deadline) {
		if (rn_client_completions(c, &done, 1) == 1) {
			printf("installed_client: sent, completion %d\n",
			       done.status);
			rc = done.status;
			break;
		}
		if (rn_client_events(c, &ev, 1) == 1 &&
		    ev.type == RN_CLIENT_EVENT_REFUSED) {
			printf("installed_client: sent, refused by %s: no "
			       "agent %s\n", ev.node, ev.agent);
			rc = 0;
			break;
		}
		if (rn_client_wait(c, 100) < 0)
			break;
	}
	rn_client_detach(c);
	return rc == 0 ? 0 : 1;
}
