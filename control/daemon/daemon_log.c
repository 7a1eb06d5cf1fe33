/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The daemon's log stream: stderr, each line prefixed with the UTC time it
 * was written, "2026-01-31T12:34:56.789Z ". A supervisor's journal adds its
 * own time, but a log redirected to a file or read from a pipe has no other.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "daemon_pvt.h"

/* "YYYY-MM-DDTHH:MM:SS.mmmZ " */
#define STAMP_LEN 25
/* Written to stderr in pieces of at most this, with one write() each. */
#define CHUNK 4096

struct log_stream {
	bool line_start;   /* the next byte starts a line */
};

static size_t
stamp(char *out)
{
	struct timespec now;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	n = strftime(out, STAMP_LEN + 1, "%Y-%m-%dT%H:%M:%S", &tm);
	n += (size_t)snprintf(out + n, STAMP_LEN + 1 - n, ".%03ldZ ",
			      now.tv_nsec / 1000000);
	return n;
}

/* A log line that cannot be written is lost; the writer never waits on a
 * retry loop for it (EINTR aside). */
static void
put(const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		buf += n;
		len -= (size_t)n;
	}
}

/* stdio calls this with the stream locked: one writer at a time. */
static ssize_t
log_write(void *cookie, const char *buf, size_t len)
{
	struct log_stream *ls = cookie;
	char out[CHUNK];
	size_t used = 0;

	for (size_t i = 0; i < len; i++) {
		if (ls->line_start) {
			if (used + STAMP_LEN > sizeof(out)) {
				put(out, used);
				used = 0;
			}
			used += stamp(out + used);
			ls->line_start = false;
		}
		if (used == sizeof(out)) {
			put(out, used);
			used = 0;
		}
		out[used++] = buf[i];
		ls->line_start = buf[i] == '\n';
	}
	put(out, used);
	return (ssize_t)len;
}

static int
log_close(void *cookie)
{
	free(cookie);
	return 0;
}

FILE *
rn_daemon_log_open(void)
{
	static const cookie_io_functions_t io = {
		.write = log_write,
		.close = log_close,
	};
	struct log_stream *ls = malloc(sizeof(*ls));
	FILE *f;

	if (ls == NULL)
		return NULL;
	ls->line_start = true;
	f = fopencookie(ls, "w", io);
	if (f == NULL)
		free(ls);
	return f;
}
