#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Per-call inclusive instruction counts from a callgrind output file.

Usage: callgrind-calls.py CALLGRIND_OUT FUNCTION...
Prints, for each FUNCTION (exact name), the calls made to it, their summed
inclusive cost and the cost per call, from the file's "calls=" records.
Exits 1 when a FUNCTION was never called."""

import re
import sys

CALLEE = re.compile(r"^cfn=\((\d+)\)(?: (.*))?$")
FUNCTION = re.compile(r"^c?fn=\((\d+)\) (.*)$")


def totals(path):
    names, calls, cost = {}, {}, {}
    callee, counting = None, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            named = FUNCTION.match(line)
            if named:                 # first use of an id names it
                names[named.group(1)] = named.group(2)
            target = CALLEE.match(line)
            if target:
                callee = target.group(1)
            elif line.startswith("calls="):
                counting = int(line[6:].split()[0])
            elif counting is not None:
                # The line after calls= holds the call's inclusive cost.
                fields = line.split()
                calls[callee] = calls.get(callee, 0) + counting
                cost[callee] = cost.get(callee, 0) + int(fields[1])
                counting = None
    by_name = {}
    for fid, n in calls.items():
        name = names.get(fid, fid)
        c, k = by_name.get(name, (0, 0))
        by_name[name] = (c + n, k + cost[fid])
    return by_name


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    found = totals(sys.argv[1])
    missing = False
    for name in sys.argv[2:]:
        n, c = found.get(name, (0, 0))
        if n == 0:
            print(f"{name}: never called", file=sys.stderr)
            missing = True
            continue
        print(f"{name} {n} {c} {c / n:.1f}")
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
