#!/usr/bin/env python3
"""Lists the tests a swift-testing log shows as started and never finished.

deploy/local/test prints this when a `swift test` run passes its time limit, so a CI log that was
cut short still names the tests that hung.
    unfinished_tests.py LOG
"""
import re
import sys

STARTED = re.compile(r'◇ (Test|Suite) (".*?"|\S+) started\.')
FINISHED = re.compile(r'[✔✘➜↳] (Test|Suite) (".*?"|\S+)( with \d+ test(s| cases?)?( in \d+ suites?)?)? (passed|failed|skipped)')


def unfinished(lines):
    running = {}
    for number, line in enumerate(lines, 1):
        for match in STARTED.finditer(line):
            running[(match[1], match[2])] = number
        for match in FINISHED.finditer(line):
            running.pop((match[1], match[2]), None)
    return sorted(running.items(), key=lambda item: item[1])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: unfinished_tests.py LOG")
    with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
        left = unfinished(log)
    if not left:
        print("  (every test that started also finished)")
    for (kind, name), line in left:
        print(f"  {kind.lower()} {name} (started at line {line} of the log)")


if __name__ == "__main__":
    main()
