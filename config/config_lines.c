/* SPDX-License-Identifier: BSD-3-Clause */
#include <ctype.h>
#include <errno.h>
#include <rte_cfgfile.h>
#include <stdio.h>
#include <string.h>

#include "config_lines.h"

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

int
rn_config_lines_scan(const char *path, struct rn_config_lines *lines,
		     struct rn_config_error *err)
{
	char buf[CFGFILE_LINE_MAX];
	unsigned int lineno = 0;
	int rc = 0;
	FILE *f = fopen(path, "r");

	if (f == NULL) {
		rc = -errno;
		snprintf(err->text, sizeof(err->text),
			 "cannot read config file '%s': %s", path,
			 strerror(errno));
		return rc;
	}
	lines->n_sections = 0;
	lines->n_entries = 0;
	errno = 0;
	while (rc == 0 && fgets(buf, sizeof(buf), f) != NULL) {
		size_t n = strlen(buf);

		lineno++;
		if (n >= sizeof(buf) - 1 && buf[n - 1] != '\n')
			rc = fail(err, path, lineno,
				  "line longer than 322 characters");
		else
			rc = scan_line(buf, path, lineno, lines, err);
	}
	if (rc == 0 && ferror(f)) {
		rc = errno != 0 ? -errno : -EIO;
		snprintf(err->text, sizeof(err->text),
			 "cannot read config file '%s': %s", path, strerror(-rc));
	}
	fclose(f);
	return rc;
}
