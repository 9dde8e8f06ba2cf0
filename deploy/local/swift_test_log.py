#!/usr/bin/env python3
"""Reads a swift-testing log for deploy/local/test, whose CI log may keep only its tail.

    swift_test_log.py unfinished LOG   the tests started and never finished (printed when a run
                                       passes its time limit, so a log cut short names what hung)
    swift_test_log.py failed LOG       each issue a test recorded, with its comment lines (`↳ …`),
                                       then the tests that failed (printed after a failed run)
"""
import re
import sys

STARTED = re.compile(r'◇ (Test|Suite) (".*?"|\S+) started\.')
FINISHED = re.compile(r'[✔✘➜↳] (Test|Suite) (".*?"|\S+)( with \d+ test(s| cases?)?( in \d+ suites?)?)? (passed|failed|skipped)')
ISSUE = re.compile(r"^✘ (Test|Suite) .* recorded an issue")
FAILED = re.compile(r'^✘ (Test|Suite) (".*?"|\S+) failed')
COMMENT = "↳ "
MOST_LINES = 80


def unfinished(lines):
    running = {}
    for number, line in enumerate(lines, 1):
        for match in STARTED.finditer(line):
            running[(match[1], match[2])] = number
        for match in FINISHED.finditer(line):
            running.pop((match[1], match[2]), None)
    running.pop(("Test", "run"), None)  # "◇ Test run started." is the whole run, not a test
    return sorted(running.items(), key=lambda item: item[1])


def failed(lines):
    """The issue lines, each followed by its comment lines, then the failed lines of tests and suites."""
    issues, failures, in_issue = [], [], False
    for line in lines:
        line = line.rstrip("\n")
        if ISSUE.match(line):
            issues.append(line)
            in_issue = True
        elif in_issue and line.startswith(COMMENT):
            issues.append(line)
        else:
            in_issue = False
            if FAILED.match(line):
                failures.append(line)
    return issues + failures


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("unfinished", "failed"):
        sys.exit("usage: swift_test_log.py unfinished|failed LOG")
    with open(sys.argv[2], encoding="utf-8", errors="replace") as log:
        lines = log.readlines()
    if sys.argv[1] == "failed":
        report = failed(lines)
        for line in report[:MOST_LINES]:
            print(f"  {line}")
        if len(report) > MOST_LINES:
            print(f"  … and {len(report) - MOST_LINES} more lines in {sys.argv[2]}")
        if not report:
            print("  (no test recorded an issue: the run itself failed; see the lines above)")
        return
    left = unfinished(lines)
    if not left:
        print("  (every test that started also finished)")
    for (kind, name), line in left:
        print(f"  {kind.lower()} {name} (started at line {line} of the log)")


if __name__ == "__main__":
    main()
