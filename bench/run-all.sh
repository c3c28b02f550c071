#!/bin/sh
# Runs the benches docs/performance.md reports, each writing its results
# file under bench/results/ (replacing the one of the same bench and
# parameters), then regenerates docs/performance.md and its plots from
# every file there. About 15 minutes on 2 cores; run it on a quiet
# machine: each file records the load average at its start and end. A
# bench that fails is reported and leaves its previous results file in
# place; the script then exits with status 1.
#
#   bench/run-all.sh
set -u
cd "$(dirname "$0")"
cb="${TMPDIR:-/tmp}/coordbench-run-all"
commit=$(git rev-parse --short=12 HEAD) || exit 1
[ -z "$(git status --porcelain --untracked-files=no)" ] || commit="$commit-dirty"
go build -ldflags "-X main.buildCommit=$commit" -o "$cb" ./cmd/coordbench || exit 1
r=results
failed=""
bench() {
  echo "== coordbench $*" >&2
  "$cb" "$@" -results "$r" || failed="$failed
  coordbench $*"
}

# Crash failover beside hashicorp/raft (its defaults, and tuned to our budget).
bench compare -n 5 -rounds 20 -raft-rounds 10
# Crash failover and its messages against n, by algorithm. 100 members
# start 10 ms apart, so that their joins do not all land at once.
for alg in bully ring peterson; do
  bench failover -algorithm "$alg" -n 5 -rounds 20
  bench failover -algorithm "$alg" -n 20 -rounds 20
  bench failover -algorithm "$alg" -n 100 -rounds 10 -stagger 10ms -timeout 2m
done
# Graceful hand-off (Resign).
bench failover -mode resign -n 5 -rounds 20
# What an idle cluster costs, and the heap per member.
bench idle -n 5 -d 20s
bench idle -n 20 -d 20s
bench idle -n 100 -d 20s -stagger 10ms
bench memory -n 100 -stagger 10ms
# Named elections on the simulator (virtual time), without and with the guard.
bench elections -n 20 -elections 1000 -rounds 20
bench elections -n 20 -elections 1000 -rounds 20 -quorum 20

go run ./cmd/coordbench report || exit 1
if [ -n "$failed" ]; then
  echo "failed (their previous results files, if any, are unchanged):$failed" >&2
  exit 1
fi
