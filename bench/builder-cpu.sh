#!/usr/bin/env bash
# bench/builder-cpu.sh: where a cold build's CPU goes. Used in place of the slipway binary by
# bench/build.sh; every `slipway builder` run is timed and its CPU split into the builder's own
# (user+sys), the slipway server's and the docker-registry's, with the whole machine's busy and
# idle core-seconds from /proc/stat; anything else is passed to the real binary. One line per
# builder run goes to CPU_LOG (default /tmp/builder-cpu.log):
#   REAL=/tmp/rel/slipway SLIPWAY=bench/builder-cpu.sh BENCH_ONLY=slipway bench/build.sh
#   SLIPWAY_COMPRESSION_LEVEL=1 ... (the same with another gzip level)
# Rows alternate gzip cold, gzip unchanged, zstd cold, zstd unchanged per round.
set -u
REAL=${REAL:-$(dirname "$0")/../build/slipway}
LOG=${CPU_LOG:-/tmp/builder-cpu.log}
[[ ${1:-} == builder ]] || exec "$REAL" "$@"

ticks() { [[ -n $1 ]] && awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
busy_idle() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }

srv=$(pgrep -f 'slipway server' | head -n 1)
reg=$(pgrep -x docker-registry | head -n 1)
s0=$(ticks "$srv") r0=$(ticks "$reg")
read -r b0 i0 < <(busy_idle)
t0=$(date +%s.%N)
times=$(mktemp)
/usr/bin/time -o "$times" -f '%U %S' "$REAL" "$@"
rc=$?
t1=$(date +%s.%N)
read -r b1 i1 < <(busy_idle)
s1=$(ticks "$srv") r1=$(ticks "$reg")
read -r bu bs <"$times"
rm -f "$times"
hz=$(getconf CLK_TCK)
awk -v t0="$t0" -v t1="$t1" -v b=$((b1 - b0)) -v i=$((i1 - i0)) -v s=$((s1 - s0)) \
    -v r=$((r1 - r0)) -v bu="$bu" -v bs="$bs" -v hz="$hz" -v lvl="${SLIPWAY_COMPRESSION_LEVEL:-default}" \
    'BEGIN { printf "level %s: wall %.3f s, machine busy %.2f idle %.2f core-s | builder %.2f+%.2f, server %.2f, registry %.2f CPU-s\n",
        lvl, t1 - t0, b / hz, i / hz, bu, bs, s / hz, r / hz }' >>"$LOG"
exit "$rc"
