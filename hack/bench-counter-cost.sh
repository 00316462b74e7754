#!/usr/bin/env bash
# What logbench_counter costs the server it counts in: two servers of one PostgreSQL side
# by side, one with the counter in shared_preload_libraries and one without, run the same
# pgbench (select-only, prepared, scale 1, Unix socket) in turns, and the script prints per
# configuration the median TPS of each, their ratio, and the lowest and highest ratio of a
# pair of neighbouring runs, which tells noise from cost. Configurations: statement
# logging off (log_statement=none) and on (log_statement=all to a csvlog file, the worst
# case for the hook: one call per record), at each client count.
#
#   hack/bench-counter-cost.sh                       # 5-s runs, 5 repeats: about 7 minutes
#   DURATION=10 REPEATS=6 CLIENTS="1 2 4" hack/bench-counter-cost.sh
#   PG_BINS="/usr/lib/postgresql/15/bin" hack/bench-counter-cost.sh
#
# PostgreSQL: Debian's 15 and the tests' 18 (hack/install-postgresql.sh), the majors
# `make logbench-counter` builds the counter for. Each repeat runs every configuration on
# both servers, the server that goes first alternating from one repeat to the next.
# Every run has an application_name of its own; at the end the counter's records for
# each run with statement logging on must equal the rows of its csvlog file with that
# name, or the script fails.
set -euo pipefail

cd "$(dirname "$0")/.."
DURATION=${DURATION:-5}
REPEATS=${REPEATS:-5}
CLIENTS=${CLIENTS:-"1 2"}
if [[ -z "${PG_BINS:-}" ]]; then
  PG_BINS="/usr/lib/postgresql/15/bin $(hack/install-postgresql.sh)"
fi

make --no-print-directory logbench-counter >/dev/null

work=$(mktemp -d)
chmod 755 "$work"
data_dirs=()
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  local dir
  for dir in "${data_dirs[@]}"; do
    if [[ -f $dir/postmaster.pid ]]; then
      kill -INT "$(head -n 1 "$dir/postmaster.pid")" 2>/dev/null || true
    fi
  done
  for dir in "${data_dirs[@]}"; do
    while [[ -f $dir/postmaster.pid ]]; do sleep 0.2; done
  done
  rm -rf "$work"
}
trap cleanup EXIT

# as_owner runs a command as the servers' owner: initdb and postgres refuse root, so
# under root they run as the OS user postgres, as localpg's do.
as_owner() {
  if ((EUID == 0)); then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

median() {
  sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# start_server BIN DIR PORT [LIBRARY] initialises and starts a server in DIR, listening on
# its Unix socket only, writing csvlog to DIR/log/postgresql.csv, with the counter's
# library preloaded when given, and the pgbench tables at scale 1.
start_server() {
  local bin=$1 dir=$2 port=$3 library=${4:-}
  mkdir -p "$dir"
  if ((EUID == 0)); then
    chown postgres: "$dir"
  fi
  as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync >/dev/null
  data_dirs+=("$dir/data")
  {
    echo "listen_addresses = ''"
    echo "unix_socket_directories = '$dir'"
    echo "port = $port"
    echo "logging_collector = on"
    echo "log_destination = 'csvlog'"
    echo "log_directory = '$dir/log'"
    echo "log_filename = 'postgresql'"
    echo "log_rotation_size = 0"
    echo "log_rotation_age = 0"
    echo "autovacuum = off"
    echo "checkpoint_timeout = '1h'"
    if [[ -n $library ]]; then
      echo "shared_preload_libraries = '$library'"
    fi
  } | as_owner tee -a "$dir/data/postgresql.conf" >/dev/null
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w start >/dev/null
  as_owner "$bin/pgbench" -i -q -s 1 -h "$dir" -p "$port" postgres >/dev/null 2>&1
}

# tps BIN DIR PORT CLIENTS NAME LOG_STATEMENT runs pgbench and prints its TPS.
tps() {
  local bin=$1 dir=$2 port=$3 clients=$4 name=$5 log_statement=$6
  PGAPPNAME=$name PGOPTIONS="-c log_statement=$log_statement" as_owner "$bin/pgbench" -n -S -M prepared \
    -c "$clients" -j "$clients" -T "$DURATION" -h "$dir" -p "$port" postgres 2>/dev/null |
    sed -n -E 's/^tps = ([0-9.]+) .*/\1/p'
}

# csvlog_records FILE prints, for each application_name, the records of a csvlog file
# (a record may hold quoted newlines).
csvlog_records() {
  python3 -c '
import collections, csv, sys
counts = collections.Counter(row[22] for row in csv.reader(open(sys.argv[1], newline="")))
for name, n in sorted(counts.items()):
    print(name, n)
' "$1"
}

printf '%-8s %-7s %7s %9s %12s %10s %7s %17s\n' \
  server logging clients runs without_tps with_tps ratio pair_ratio_range
failed=0
port=54400
for bin in $PG_BINS; do
  major=$("$bin/pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
  version=$("$bin/pg_config" --version | awk '{ print $2 }')
  library=$work/pg$major/logbench_counter.so
  mkdir -p "$work/pg$major"
  cp "bin/logbench_counter/pg$major/logbench_counter.so" "$library"
  chmod 755 "$work/pg$major"
  without=$work/pg$major/without with=$work/pg$major/with
  start_server "$bin" "$without" $((port += 1))
  without_port=$port
  start_server "$bin" "$with" $((port += 1)) "$library"
  with_port=$port
  # The counter's functions, from the extension's script, in the schema it uses.
  {
    echo 'CREATE SCHEMA logbench_counter; SET search_path = logbench_counter;'
    grep -v '^\\echo' logbench_counter/countersql/logbench_counter--1.0.sql | sed "s|MODULE_PATHNAME|$library|"
  } | as_owner "$bin/psql" -q -X -v ON_ERROR_STOP=1 -h "$with" -p "$with_port" postgres >/dev/null

  declare -A results=()
  tagged=()
  for ((repeat = 1; repeat <= REPEATS; repeat++)); do
    for log_statement in none all; do
      for clients in $CLIENTS; do
        order="without with"
        if ((repeat % 2 == 0)); then
          order="with without"
        fi
        for side in $order; do
          name=lbcost_${major}_${log_statement}_${clients}_${repeat}_${side}
          if [[ $side == with ]]; then
            result=$(tps "$bin" "$with" "$with_port" "$clients" "$name" "$log_statement")
            if [[ $log_statement == all ]]; then
              tagged+=("$name")
            fi
          else
            result=$(tps "$bin" "$without" "$without_port" "$clients" "$name" "$log_statement")
          fi
          results[$log_statement / $clients / $side]+="$result "
        done
      done
    done
  done

  for log_statement in none all; do
    for clients in $CLIENTS; do
      read -r -a a <<<"${results[$log_statement / $clients / without]}"
      read -r -a b <<<"${results[$log_statement / $clients / with]}"
      without_median=$(printf '%s\n' "${a[@]}" | median)
      with_median=$(printf '%s\n' "${b[@]}" | median)
      pair_ratios=$(for ((i = 0; i < ${#a[@]}; i++)); do echo "${b[i]} / ${a[i]}"; done | awk '{ print $1 / $3 }' | sort -g)
      printf '%-8s %-7s %7d %9d %12.1f %10.1f %7.3f %17s\n' "$version" "$log_statement" "$clients" "${#a[@]}" \
        "$without_median" "$with_median" "$(awk -v b="$with_median" -v a="$without_median" 'BEGIN { print b / a }')" \
        "$(echo "$pair_ratios" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "[%.3f, %.3f]", lo, hi }')"
    done
  done

  # The counter against the csvlog file: read once every run's backends have exited,
  # the file once the server has stopped (its logging collector has written it all).
  sleep 1
  as_owner "$bin/psql" -X -A -t -F ' ' -h "$with" -p "$with_port" postgres \
    -c "SELECT application_name, sum(records) FROM logbench_counter.records() WHERE application_name LIKE 'lbcost%' GROUP BY 1" \
    >"$work/pg$major/counted"
  as_owner "$bin/pg_ctl" -D "$with/data" -w stop >/dev/null
  csvlog_records "$with/log/postgresql.csv" >"$work/pg$major/logged"
  matched=0
  for name in "${tagged[@]}"; do
    counted=$(awk -v n="$name" '$1 == n { print $2 }' "$work/pg$major/counted")
    logged=$(awk -v n="$name" '$1 == n { print $2 }' "$work/pg$major/logged")
    if [[ -z $counted || $counted != "$logged" ]]; then
      echo "$version $name: counter ${counted:-none}, csvlog ${logged:-none}" >&2
      failed=1
    else
      matched=$((matched + 1))
      total=$((${total:-0} + counted))
    fi
  done
  echo "$version: counter = csvlog records for $matched of ${#tagged[@]} runs with log_statement=all (${total:-0} records)"
  total=0
  unset results
done
echo "ratio: median TPS with the counter / without; pair_ratio_range: lowest and highest ratio of two neighbouring runs"
echo "runs of ${DURATION} s, select-only, prepared, scale 1, Unix socket; $(nproc) cores, load average $(cut -d ' ' -f 1-3 /proc/loadavg)"
exit "$failed"
