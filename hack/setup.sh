#!/usr/bin/env bash
# Idempotent setup of a Debian 12 machine for this repository:
#   * Debian's Bazel 4.2.3 and the rule packages WORKSPACE points at (bazel-bootstrap,
#     bazel-rules-java, bazel-platforms), the container tools the image tests use
#     (docker-registry, skopeo, umoci, podman, runc), and gcc if missing; `apt-get update`
#     first whenever something is to be installed;
#   * the pinned Python packages (requirements.txt) in the python3 that Bazel will use
#     ($KOORD_PYTHON, else the first python3 on PATH); pip runs only when a pin is unmet;
#   * .bazelrc.user (gitignored) naming that interpreter, so Bazel uses it whatever PATH.
# Safe to run again and again; the test command (hack/test.sh) starts with it.
# `hack/setup.sh --python` does only the Python packages (what hack/local-up needs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON_ONLY=0
if [[ ${1:-} == --python ]]; then PYTHON_ONLY=1; fi

log() { echo "hack/setup.sh: $*" >&2; }

# --- Debian packages -------------------------------------------------------------------
APT_PACKAGES=(bazel-bootstrap bazel-rules-java bazel-platforms)
# Container images (hack/image): the registry, skopeo, umoci and podman (with runc: crun
# refuses these machines' hybrid cgroups) that the image tests drive.
APT_PACKAGES+=(docker-registry skopeo umoci podman runc)
# The chart renderer (hack/helm): Go's text/template with Debian's sprig, the YAML library Helm's
# toYaml uses and the JSON-schema validator of values.schema.json, built offline.
APT_PACKAGES+=(golang-go golang-github-masterminds-sprig-dev golang-github-ghodss-yaml-dev
  golang-github-xeipuuv-gojsonschema-dev)
# Bazel 4's Python rules resolve a C++ toolchain, which Bazel detects from the machine's gcc.
if ! command -v gcc >/dev/null; then APT_PACKAGES+=(gcc); fi
missing=()
if ((PYTHON_ONLY)); then APT_PACKAGES=(); fi
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if ((${#missing[@]})); then
  SUDO=()
  if [[ $(id -u) -ne 0 ]]; then SUDO=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  # A fresh machine's package lists may be missing or stale: refresh them before installing.
  log "apt-get update"
  "${SUDO[@]}" apt-get update -q
  log "installing ${missing[*]}"
  "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# --- Python packages -------------------------------------------------------------------
PYTHON=${KOORD_PYTHON:-$(command -v python3 || true)}
if [[ -z $PYTHON ]]; then
  log "no python3 on PATH (Python 3.11+ needed); set KOORD_PYTHON"
  exit 1
fi
# Resolve shims (pyenv) to the real interpreter, and check its version.
PYTHON=$("$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), sys.version; print(sys.executable)')

if ! "$PYTHON" - requirements.txt <<'PY'
import re
import sys
from importlib import metadata

def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()

unmet = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, _, version = line.partition("==")
    try:
        if metadata.version(norm(name)) != version:
            unmet.append(line)
    except metadata.PackageNotFoundError:
        unmet.append(line)
if unmet:
    print("hack/setup.sh: unmet pins: " + " ".join(unmet), file=sys.stderr)
    sys.exit(1)
PY
then
  log "pip install -r requirements.txt"
  "$PYTHON" -m pip install --disable-pip-version-check -q -r requirements.txt
fi

# --- Bazel's local settings ------------------------------------------------------------
want="# Written by hack/setup.sh: the interpreter Bazel's Python toolchain uses.
build --repo_env=KOORD_PYTHON=$PYTHON"
if [[ ! -f .bazelrc.user ]] || [[ $(cat .bazelrc.user) != "$want" ]]; then
  printf '%s\n' "$want" >.bazelrc.user
  log "wrote .bazelrc.user (KOORD_PYTHON=$PYTHON)"
fi

# Protobuf stubs for plain pytest runs (Bazel generates its own with a genrule).
"$PYTHON" -c 'import api.runtime.v1alpha1'

# The chart renderer for plain runs and hack/local-up (Bazel builds its own, //hack/helm:renderer).
if ((!PYTHON_ONLY)); then
  "$PYTHON" -m hack.helm.render --build >/dev/null
fi
