/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <rte_cfgfile.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_lines_pvt.h"

/* rte_cfgfile reads lines into a buffer of this size and fails past it. */
#define CFGFILE_LINE_MAX (CFG_NAME_LEN + CFG_VALUE_LEN + 4)

static char *
strip(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

/* Like rte_cfgfile: the first ';' starts a comment unless escaped by '\'. */
static void
cut_comment(char *line)
{
	char *c = strchr(line, CFG_DEFAULT_COMMENT_CHARACTER);

	if (c != NULL && (c == line || c[-1] != '\\'))
		*c = '\0';
}

static int
fail(struct rn_config_error *err, const char *path, unsigned int line,
     const char *why)
{
	snprintf(err->text, sizeof(err->text), "%s:%u: %s", path, line, why);
	return -EINVAL;
}

static int
scan_line(char *text, const char *path, unsigned int lineno,
	  struct rn_config_lines *lines, struct rn_config_error *err)
{
	char *eq;

	cut_comment(text);
	text = strip(text);
	if (*text == '\0')
		return 0;
	if (*text == '[') {
		char *close = strchr(text, ']');

		if (close == NULL)
			return fail(err, path, lineno,
				    "section header without ']'");
		if (*strip(close + 1) != '\0')
			return fail(err, path, lineno,
				    "text after the section header's ']'");
		if (lines->n_sections == RN_CONFIG_MAX_SECTIONS)
			return fail(err, path, lineno, "too many sections");
		lines->section[lines->n_sections].line = lineno;
		lines->section[lines->n_sections].first_entry = lines->n_entries;
		lines->n_sections++;
		return 0;
	}
	eq = strchr(text, '=');
	if (eq == NULL)
		return fail(err, path, lineno,
			    "malformed line; allowed '[section]', "
			    "'key = value' or a ';' comment");
	*eq = '\0';
	if (lines->n_sections == 0)
		return fail(err, path, lineno,
			    "key outside any section; put it under a "
			    "[section] header");
	if (*strip(text) == '\0')
		return fail(err, path, lineno, "'=' without a key before it");
	if (strlen(strip(text)) >= CFG_NAME_LEN)
		return fail(err, path, lineno, "key longer than 63 characters");
	if (strlen(strip(eq + 1)) >= CFG_VALUE_LEN)
		return fail(err, path, lineno,
			    "value longer than 255 characters");
	if (lines->n_entries == RN_CONFIG_MAX_ENTRIES)
		return fail(err, path, lineno, "too many keys");
	lines->entry_line[lines->n_entries++] = lineno;
	return 0;
}

/* Name what a path is when it is not a regular file. */
static const char *
file_kind(mode_t mode)
{
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a regular file";
}

static int
read_fail(struct rn_config_error *err, const char *path, int rc,
	  const char *why)
{
	snprintf(err->text, sizeof(err->text),
		 "cannot read config file '%s': %s", path,
		 why != NULL ? why : strerror(-rc));
	return rc;
}

/*
 * Read all of path into text, once: a FIFO would block a second reader and
 * a device never ends, so only a regular file of at most
 * RN_CONFIG_FILE_MAX bytes is read. O_NONBLOCK keeps open() itself from
 * waiting for a FIFO's writer.
 */
int
rn_config_file_read(const char *path, struct rn_config_text *text,
		    struct rn_config_error *err)
{
	char why[128];
	struct stat st;
	size_t used = 0;
	int rc = 0;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);

	text->bytes = NULL;
	text->len = 0;
	if (fd < 0)
		return read_fail(err, path, -errno, NULL);
	if (fstat(fd, &st) != 0) {
		rc = read_fail(err, path, -errno, NULL);
		goto close_fd;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = read_fail(err, path, -EISDIR, NULL);
		goto close_fd;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, sizeof(why), "%s; " RN_CONFIG_FILE_ALLOWED,
			 file_kind(st.st_mode));
		rc = read_fail(err, path, -EINVAL, why);
		goto close_fd;
	}
	/* One byte more than allowed: a file that grew is caught too. */
	text->bytes = malloc(RN_CONFIG_FILE_MAX + 1);
	if (text->bytes == NULL) {
		rc = read_fail(err, path, -ENOMEM, NULL);
		goto close_fd;
	}
	while (used <= RN_CONFIG_FILE_MAX) {
		ssize_t n = read(fd, text->bytes + used,
				 RN_CONFIG_FILE_MAX + 1 - used);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = read_fail(err, path, -errno, NULL);
			goto free_bytes;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	if (used > RN_CONFIG_FILE_MAX) {
		snprintf(why, sizeof(why), "larger than %d bytes; "
			 RN_CONFIG_FILE_ALLOWED, RN_CONFIG_FILE_MAX);
		rc = read_fail(err, path, -EFBIG, why);
		goto free_bytes;
	}
	text->len = used;
	goto close_fd;
free_bytes:
	free(text->bytes);
	text->bytes = NULL;
close_fd:
	close(fd);
	return rc;
}

void
rn_config_file_free(struct rn_config_text *text)
{
	free(text->bytes);
	text->bytes = NULL;
	text->len = 0;
}

int
rn_config_lines_scan(const char *path, struct rn_config_text *text,
		     struct rn_config_lines *lines, struct rn_config_error *err)
{
	static const char bom[] = "\xef\xbb\xbf";
	char buf[CFGFILE_LINE_MAX];
	unsigned int lineno = 0;
	size_t at = 0;
	int rc = 0;

	lines->n_sections = 0;
	lines->n_entries = 0;
	/* Editors on some systems start UTF-8 files with a byte order mark;
	 * it carries nothing, and rte_cfgfile would take it for text. */
	if (text->len >= sizeof(bom) - 1 &&
	    memcmp(text->bytes, bom, sizeof(bom) - 1) == 0) {
		text->len -= sizeof(bom) - 1;
		memmove(text->bytes, text->bytes + sizeof(bom) - 1, text->len);
	}
	while (rc == 0 && at < text->len) {
		const char *start = text->bytes + at;
		const char *nl = memchr(start, '\n', text->len - at);
		size_t n = nl != NULL ? (size_t)(nl - start) :
					text->len - at;

		lineno++;
		at += n + 1;
		if (memchr(start, '\0', n) != NULL)
			return fail(err, path, lineno, "NUL byte in the line; "
				    "allowed text without NUL bytes");
		/* rte_cfgfile's fgets() takes the line and its newline into
		 * CFGFILE_LINE_MAX bytes with the terminating NUL. */
		if (n > sizeof(buf) - 2) {
			char why[64];

			snprintf(why, sizeof(why), "line longer than %zu "
				 "characters", sizeof(buf) - 2);
			return fail(err, path, lineno, why);
		}
		memcpy(buf, start, n);
		buf[n] = '\0';
		rc = scan_line(buf, path, lineno, lines, err);
	}
	return rc;
}
