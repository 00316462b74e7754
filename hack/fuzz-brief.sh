#!/usr/bin/env bash
# Fuzzes every Fuzz target of the module for a short while (FUZZTIME, default 50000
# inputs each), so that `make test` feeds the parsers inputs beyond their seed corpora.
# The budget is a count, not a duration: Go up to 1.26 can fail a duration-bounded fuzz
# run that found nothing with "context deadline exceeded" when its workers are slow to
# stop (golang/go#75804), which a loaded CI machine makes likely. Go fuzzes one target
# of one package at a time, hence the loops. A failing input is written under the
# package's testdata/fuzz/ and the script exits non-zero.
# Usage: hack/fuzz-brief.sh [PACKAGE_PATTERN...]   (default ./...)
set -euo pipefail

fuzztime=${FUZZTIME:-50000x}
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- ./...

# Only packages whose test files mention a fuzz target are asked to list their tests:
# listing compiles the test binary.
packages=$(go list -f '{{$dir := .Dir}}{{range .TestGoFiles}}{{$dir}}/{{.}} {{end}}{{range .XTestGoFiles}}{{$dir}}/{{.}} {{end}}' "$@" \
  | xargs -r grep -l '^func Fuzz' \
  | xargs -r -n1 dirname | sort -u)

count=0
for dir in $packages; do
  for target in $(go test -list '^Fuzz' "$dir" | grep '^Fuzz' || true); do
    echo "fuzz ${dir#"$PWD"/} ${target} for ${fuzztime}"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$dir"
    count=$((count + 1))
  done
done
echo "fuzzed ${count} targets"
