#!/bin/bash
# Server CPU per request of two builds of koa-buffer, in alternating new
# processes: the measure behind the regression figures in
# docs/performance.md ("Regressions, in pairs of new processes").
#
# Each round starts one server of build A, then one of build B, each pinned
# to core 0, sends one request, waits 2 s, then runs wrk (core 1, br, 50
# connections) three times for 4 s, reading the server's user + system time
# from /proc around each run. A line per round: A's three figures, B's
# three, in µs of CPU per request. The summary is the median over rounds of
# runs 2 and 3. Why new processes and many of them: bench/README.md.
#
# Usage: bash bench/process-pairs.sh ROUNDS REF_A REF_B [hit|render]
#   REF: a git ref (built in a temporary folder by bench/lib/baseline.ts)
#        or "." for today's dist/ (npm run build first)
# Needs: Linux, taskset, wrk (apt-get install wrk).
set -euo pipefail
rounds=$1; ref_a=$2; ref_b=$3; mode=${4:-hit}
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in taskset wrk curl; do
  command -v $tool >/dev/null || { echo "process-pairs: $tool is missing (apt-get install $tool)" >&2; exit 2; }
done
package() {
  if [ "$1" = . ]; then echo "$root/dist/index.js"; return; fi
  local dir
  dir=$(cd "$root" && node --import tsx -e "import('./bench/lib/baseline.ts').then((m) => console.log(m.buildBaseline('$1')))" | tail -1)
  echo "$dir/dist/index.js"
}
entry_a=$(package "$ref_a"); entry_b=$(package "$ref_b")
one() {
  local port=$((20000 + RANDOM % 20000)) pid line="" t0 t1 out req
  taskset -c 0 node "$root/bench/lib/pair-server.mjs" "$1" $port $mode >/dev/null 2>&1 & pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null -H 'accept-encoding: br' http://127.0.0.1:$port/ && break; sleep 0.1; done
  sleep 2
  for _ in 1 2 3; do
    t0=$(awk '{print $14+$15}' /proc/$pid/stat)
    out=$(taskset -c 1 wrk -t1 -c50 -d4s -H 'accept-encoding: br' http://127.0.0.1:$port/)
    t1=$(awk '{print $14+$15}' /proc/$pid/stat)
    req=$(echo "$out" | awk '/requests in/{print $1}')
    line="$line $(awk -v a=$t0 -v b=$t1 -v q=$req -v hz=$(getconf CLK_TCK) 'BEGIN{printf "%.1f", (b-a)*1e6/hz/q}')"
  done
  kill -TERM $pid; wait $pid 2>/dev/null || true
  echo "$line"
}
results=$(mktemp)
trap 'rm -f "$results"' EXIT
echo "$mode: A = $ref_a, B = $ref_b, µs of server CPU per request, runs 1 2 3"
for i in $(seq "$rounds"); do
  echo "$i A:$(one "$entry_a")   B:$(one "$entry_b")" | tee -a "$results"
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n")
  .map((s) => s.match(/A:\s*([\d.]+) ([\d.]+) ([\d.]+)\s+B:\s*([\d.]+) ([\d.]+) ([\d.]+)/).slice(1).map(Number));
const med = (a) => { a = [...a].sort((x, y) => x - y); const m = a.length / 2; return a.length % 2 ? a[m | 0] : (a[m - 1] + a[m]) / 2; };
const a = rows.map((x) => (x[1] + x[2]) / 2), b = rows.map((x) => (x[4] + x[5]) / 2);
const pairs = rows.map((_, i) => b[i] / a[i]);
console.log(`median of runs 2 and 3: A ${med(a).toFixed(1)} µs, B ${med(b).toFixed(1)} µs, B/A ${(med(b) / med(a)).toFixed(3)}` +
  ` (median of rounds ${med(pairs).toFixed(3)}, ${Math.min(...pairs).toFixed(2)}–${Math.max(...pairs).toFixed(2)})`);
' "$results"
