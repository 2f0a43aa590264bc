#!/usr/bin/python3
"""Counts a ctest JUnit report (ctest --output-junit FILE): prints
`PASSED FAILED SKIPPED` (one line, three integers) for scripts/test.sh's
summary. A test ctest did not run (not built, a failed fixture) counts as
failed: the summary must not call a suite green because part of it is missing.
Exit 2 with a one-line error when the file is missing or not a ctest report.
  scripts/ctest_junit_counts.py FILE"""
import sys
import xml.etree.ElementTree as ET


def counts(path):
    root = ET.parse(path).getroot()
    if root.tag != "testsuite":
        raise ValueError(f"root element is <{root.tag}>, not <testsuite>")
    passed = failed = skipped = 0
    for case in root.iter("testcase"):
        status = case.get("status", "")
        skip = case.find("skipped")
        # ctest marks a test's own skip (SKIP_REGULAR_EXPRESSION, e.g. GTest's
        # "[  SKIPPED ]", or SKIP_RETURN_CODE) and a test it could not start
        # ("Unable to find executable") alike as notrun + <skipped>; only the first is a skip.
        own_skip = skip is not None and skip.get("message", "").startswith(("SKIP_REGULAR_EXPRESSION", "SKIP_RETURN_CODE"))
        if status == "run" and case.find("failure") is None and case.find("error") is None:
            passed += 1
        elif own_skip or status == "disabled":
            skipped += 1
        else:
            failed += 1
    return passed, failed, skipped


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ctest_junit_counts.py FILE")
    try:
        print(*counts(sys.argv[1]))
    except (OSError, ET.ParseError, ValueError) as e:
        print(f"ctest_junit_counts: {sys.argv[1]}: {e}", file=sys.stderr)
        sys.exit(2)
