#!/usr/bin/python3
"""scripts/ctest_junit_counts.py (scripts/test.sh's per-stage counts) on a real
ctest JUnit report: a small CMake project with a passing, a failing, a
GTest-style skipped, a SKIP_RETURN_CODE skipped and an unbuildable test
(missing executable). The unbuildable one counts as failed, not skipped;
a missing report is a one-line error with exit 2."""
import os
import subprocess
import tempfile

SOURCE = os.environ.get("K3_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
COUNTS = os.path.join(SOURCE, "scripts/ctest_junit_counts.py")

PROJECT = r'''cmake_minimum_required(VERSION 3.20)
project(junit_probe NONE)
enable_testing()
add_test(NAME passes COMMAND true)
add_test(NAME fails COMMAND false)
add_test(NAME gtest_skip COMMAND sh -c "echo '[  SKIPPED ] probe'")
set_tests_properties(gtest_skip PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
add_test(NAME code_skip COMMAND sh -c "exit 77")
set_tests_properties(code_skip PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME not_built COMMAND /nonexistent/k3_probe_tests)
'''

with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "CMakeLists.txt"), "w") as f:
        f.write(PROJECT)
    subprocess.run(["cmake", "-S", d, "-B", os.path.join(d, "b")], check=True, capture_output=True)
    junit = os.path.join(d, "junit.xml")
    ct = subprocess.run(["ctest", "--test-dir", os.path.join(d, "b"), "--output-junit", junit], capture_output=True)
    assert ct.returncode != 0, "ctest must fail on this project"
    r = subprocess.run(["/usr/bin/python3", COUNTS, junit], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "1 2 2\n", repr(r.stdout)  # passed failed skipped

    missing = os.path.join(d, "none.xml")
    r = subprocess.run(["/usr/bin/python3", COUNTS, missing], capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout)
    assert r.stderr.count("\n") == 1 and r.stderr.startswith(f"ctest_junit_counts: {missing}: "), r.stderr
print("ok")
