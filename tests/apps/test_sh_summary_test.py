#!/usr/bin/python3
"""scripts/test.sh's closing summary, run for real on a stand-in project: a
temporary tree holding the real scripts/test.sh and ctest_junit_counts.py, a
small CMake project with ctest tests in place of k3kit's, and stubs for the
dependency install and the fuzz run. Checks the one line per stage with its
counts, "not run" for the stages after a failed one, "skipped" for
K3_SKIP_*, and the exit status (non-zero when any stage failed)."""
import os
import shutil
import subprocess
import tempfile

SOURCE = os.environ.get("K3_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "../.."))
TMP = os.environ.get("K3_TEST_TMP", tempfile.gettempdir())

PROJECT = r'''cmake_minimum_required(VERSION 3.20)
project(stand_in NONE)
option(K3_WERROR "" OFF)
option(K3_SANITIZE "" OFF)
option(K3_BUILD_BENCH "" ON)
enable_testing()
add_test(NAME a COMMAND true)
add_test(NAME b COMMAND true)
add_test(NAME skipped COMMAND sh -c "echo '[  SKIPPED ] here'")
set_tests_properties(skipped PROPERTIES SKIP_REGULAR_EXPRESSION "\\[  SKIPPED \\]")
if(DEFINED ENV{STAND_IN_FAIL})
  add_test(NAME broken COMMAND false)
endif()
'''
FUZZ = '''#!/usr/bin/env bash
echo "fuzz one_fuzz: ${1}s+, 100 executions, cov: 5, corpus 3 inputs, exit 0"
echo "fuzz two_fuzz: ${1}s+, 90 executions, cov: 4, corpus 2 inputs, exit 0"
'''


def stand_in(d):
    os.makedirs(os.path.join(d, "scripts"))
    for name in ("test.sh", "ctest_junit_counts.py", "configure_release.sh"):
        shutil.copy(os.path.join(SOURCE, "scripts", name), os.path.join(d, "scripts", name))
    with open(os.path.join(d, "CMakeLists.txt"), "w") as f:
        f.write(PROJECT)
    with open(os.path.join(d, "scripts/install_deps.sh"), "w") as f:
        f.write("#!/usr/bin/env bash\nexit 0\n")
    with open(os.path.join(d, "scripts/fuzz_run.sh"), "w") as f:
        f.write(FUZZ)


def run(d, **env):
    e = dict(os.environ, K3_FUZZ_SECONDS="1", **env)
    for k in ("K3_SKIP_ASAN", "K3_SKIP_FUZZ", "STAND_IN_FAIL"):
        if k not in env:
            e.pop(k, None)
    r = subprocess.run(["bash", os.path.join(d, "scripts/test.sh")], capture_output=True, text=True, env=e, timeout=300)
    summary = r.stdout[r.stdout.index("== scripts/test.sh summary\n"):].splitlines()[1:]
    return r.returncode, summary


with tempfile.TemporaryDirectory(dir=TMP) as d:
    stand_in(d)
    code, summary = run(d)
    assert code == 0, (code, summary)
    assert summary == [
        "Release suite:             passed (3 tests: 2 passed, 0 failed, 1 skipped)",
        "fuzz:                      passed (2 targets: 2 passed, 0 failed, 1 s each)",
        "sanitizers (ASan+UBSan):   passed (3 tests: 2 passed, 0 failed, 1 skipped)",
    ], summary

    code, summary = run(d, K3_SKIP_FUZZ="1", K3_SKIP_ASAN="1")
    assert code == 0, (code, summary)
    assert summary[1:] == ["fuzz:                      skipped (K3_SKIP_FUZZ=1)",
                           "sanitizers (ASan+UBSan):   skipped (K3_SKIP_ASAN=1)"], summary

with tempfile.TemporaryDirectory(dir=TMP) as d:
    stand_in(d)
    code, summary = run(d, STAND_IN_FAIL="1")
    assert code != 0, summary
    assert summary == [
        "Release suite:             FAILED (4 tests: 2 passed, 1 failed, 1 skipped; ctest exit 8)",
        "fuzz:                      not run (Release suite failed)",
        "sanitizers (ASan+UBSan):   not run (Release suite failed)",
    ], summary
print("ok")
