#!/bin/sh
# Runs the benches docs/performance.md reports, each writing its results
# file under bench/results/ (replacing the one of the same bench and
# parameters), then regenerates docs/performance.md and its plots from
# every file there. About 15 minutes on 2 cores; run it on a quiet
# machine: each file records the load average at its start and end.
#
#   bench/run-all.sh
set -eu
cd "$(dirname "$0")"
cb="${TMPDIR:-/tmp}/coordbench-run-all"
go build -o "$cb" ./cmd/coordbench
r=results

# Crash failover beside hashicorp/raft (its defaults, and tuned to our budget).
"$cb" compare -n 5 -rounds 20 -raft-rounds 10 -results "$r"
# Crash failover and its messages against n, by algorithm.
for alg in bully ring peterson; do
  "$cb" failover -algorithm "$alg" -n 5 -rounds 20 -results "$r"
  "$cb" failover -algorithm "$alg" -n 20 -rounds 20 -results "$r"
  "$cb" failover -algorithm "$alg" -n 100 -rounds 10 -results "$r"
done
# Graceful hand-off (Resign).
"$cb" failover -mode resign -n 5 -rounds 20 -results "$r"
# What an idle cluster costs, and the heap per member.
for n in 5 20 100; do
  "$cb" idle -n "$n" -d 20s -results "$r"
done
"$cb" memory -n 100 -results "$r"

go run ./cmd/coordbench report
