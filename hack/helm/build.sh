#!/usr/bin/env bash
# Builds the chart renderer offline from Debian's Go packages (hack/setup.sh installs them):
#   hack/helm/build.sh OUT
# golang-github-masterminds-sprig-dev installs sprig v3 and semver v3 without the /v3 in their
# import paths, so a small GOPATH overlay in a temp dir adds the module-style paths.
set -euo pipefail
out=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
gocode=/usr/share/gocode/src
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for mod in sprig semver; do
  mkdir -p "$tmp/gopath/src/github.com/Masterminds/$mod"
  ln -s "$gocode/github.com/Masterminds/$mod" "$tmp/gopath/src/github.com/Masterminds/$mod/v3"
done
mkdir -p "$tmp/build"
cp "$src"/*.go "$tmp/build/"
case $out in /*) ;; *) out=$PWD/$out ;; esac
cd "$tmp/build"
GOPATH="$tmp/gopath:/usr/share/gocode" GO111MODULE=off GOFLAGS= GOPROXY=off \
  GOCACHE="${KOORD_GOCACHE:-$tmp/cache}" CGO_ENABLED=0 \
  go build -trimpath -o "$out.tmp" .
mv "$out.tmp" "$out"
