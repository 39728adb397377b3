#!/usr/bin/env bash
# The test command: setup (idempotent), then every test under Bazel, offline.
#   hack/test.sh                 # everything: bazel test //...
#   hack/test.sh //api/...       # some targets; any bazel test flags may follow
# Ends with a closing line counting test cases ("bazel: N passed, N failed"), and exits with
# Bazel's status (non-zero when a test failed or the build broke).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

hack/setup.sh || exit $?

targets=("$@")
if ((${#targets[@]} == 0)); then targets=(//...); fi

log=$(mktemp)
trap 'rm -f "$log"' EXIT
bazel test "${targets[@]}" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
python3 hack/test_summary.py "$log" || true
exit "$rc"
