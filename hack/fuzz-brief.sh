#!/usr/bin/env bash
# Fuzzes every Fuzz target of the module for a short while (FUZZTIME, default 50000
# inputs each), so that `make test` feeds the parsers inputs beyond their seed corpora.
# The budget is a count, not a duration: Go up to 1.26 can fail a duration-bounded fuzz
# run that found nothing with "context deadline exceeded" when its workers are slow to
# stop (golang/go#75804), which a loaded CI machine makes likely. Go fuzzes one target
# of one package at a time, hence the loops. A failing input is written under the
# package's testdata/fuzz/ and the script exits non-zero. Go minimizes every input that
# widens coverage for up to a minute by default, which stalled a target whose inputs
# render a whole report for most of its run: a count bounds it.
# Usage: hack/fuzz-brief.sh [PACKAGE_PATTERN...]   (default ./...)
set -euo pipefail

fuzztime=${FUZZTIME:-50000x}
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- ./...

# The fuzz targets are read from the test files go list gives each package (those its
# build constraints keep): listing them with go test -list would compile and link one
# more test binary per package.
# shellcheck disable=SC2016 # go list's template, not the shell's expansions
test_files='{{$dir := .Dir}}{{$dir}}{{range .TestGoFiles}} {{$dir}}/{{.}}{{end}}{{range .XTestGoFiles}} {{$dir}}/{{.}}{{end}}'
count=0
while read -r dir rest; do
  [ -n "$rest" ] || continue
  read -ra files <<<"$rest"
  while read -r target; do
    echo "fuzz ${dir#"$PWD"/} ${target} for ${fuzztime}"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 1000x "$dir" </dev/null
    count=$((count + 1))
  done < <(grep -ho '^func Fuzz[A-Za-z0-9_]*(' "${files[@]}" | sed 's/^func //; s/($//' | sort -u)
done < <(go list -f "$test_files" "$@")
echo "fuzzed ${count} targets"
