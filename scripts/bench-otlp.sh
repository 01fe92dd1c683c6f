#!/usr/bin/env bash
# scripts/bench-otlp.sh: OTLP beside pprof for the same windows of a busy machine. While a
# loop compiles this project's report writers on every CPU, ./profile --agent writes each
# window as OTLP (-o) and pushes it as pprof to tests/receiver.py (Pyroscope's API) in the
# same run, so that both hold the same samples. For each window: the pprof as pushed
# (gzipped at zlib's fastest level) and the OTLP request gzipped the same way (as its push
# sends it), and their ratio; target: at most 1.2. Then two runs of one format each, whose
# PROFILE_DEBUG line says what rendering a window cost this thread's CPU; target for OTLP:
# at most 20 ms. Needs root, ./profile and g++. Not part of `make test`.
# Usage: scripts/bench-otlp.sh [WINDOWS] (default 4, of 15 s each)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
WINDOWS=${1:-4}
INTERVAL=15

if [ "$(id -u)" != 0 ]; then
	echo "bench-otlp: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
[ -x "$PROFILE" ] || { echo "bench-otlp: $PROFILE is missing (make)" >&2; exit 1; }
command -v g++ >/dev/null || { echo "bench-otlp: g++ is missing" >&2; exit 1; }

. "$ROOT/scripts/work-dir.sh"
work_dir profile-bench-otlp

mkdir "$TMP/paired" "$TMP/otlp" "$TMP/pprof"
start_receiver bench-otlp

# The busy machine: g++ on the report writers, again and again, one loop per CPU.
for cpu in $(seq 1 "$(nproc)"); do
	(while :; do g++ -std=c++20 -O1 -I. -Ibuild -c report/svg.cpp -o "$TMP/svg$cpu.o" 2>/dev/null; done) &
	BACKGROUND+=("$!")
done
sleep 5

seconds=$((WINDOWS * INTERVAL))
agent() { # OUTPUT-DIR SUFFIX [MORE OPTIONS...]
	local dir=$1 suffix=$2
	shift 2
	PROFILE_DEBUG=1 "$PROFILE" --agent --interval "$INTERVAL" -o "$dir/w-%H%M%S$suffix" "$@" "$seconds" \
		>/dev/null 2>"$dir.err"
}
echo "bench-otlp: $WINDOWS windows of $INTERVAL s, three runs, on $(nproc) CPUs compiling"
agent "$TMP/paired" .otlp --push "http://127.0.0.1:$port" --push-format pyroscope
agent "$TMP/otlp" .otlp
agent "$TMP/pprof" .pb.gz

python3 - "$TMP" <<'PY'
import glob, gzip, json, os, sys, zlib
tmp = sys.argv[1]
def gz(data):  # as report/gzip.cpp: one gzip member, zlib level 1
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    return z.compress(data) + z.flush()
otlp = sorted(glob.glob(tmp + "/paired/w-*.otlp"))
records = sorted(glob.glob(tmp + "/received/*.json"))
pushed = [(r[:-5] + ".body", json.load(open(r))) for r in records]
pprof = [(body, record) for body, record in pushed if record.get("api") == "pyroscope"]
if len(otlp) != len(pprof) or not otlp:
    sys.exit("bench-otlp: %d OTLP files but %d pushed pprof windows" % (len(otlp), len(pprof)))
print("%6s %10s %12s %12s %12s %8s" % ("window", "samples", "pprof_raw", "pprof_gz", "otlp_gz", "ratio"))
worst = 0
for i, (o, (p, record)) in enumerate(zip(otlp, pprof), 1):
    body = open(p, "rb").read()
    raw = gzip.decompress(body)
    o_gz = len(gz(open(o, "rb").read()))
    ratio = o_gz / len(body)
    worst = max(worst, ratio)
    samples = record.get("profile", {}).get("totals", [0])[0]
    print("%6d %10d %12d %12d %12d %8.3f" % (i, samples, len(raw), len(body), o_gz, ratio))
print("bench-otlp: OTLP after gzip is at most %.3f x the pprof of the same window (target 1.2)" % worst)
for name in ("paired", "otlp", "pprof"):
    for line in open(tmp + "/" + name + ".err"):
        if line.startswith("profile: reports: ") or line.startswith("profile: windows: "):
            print("bench-otlp: %s: %s" % (name, line[len("profile: "):].rstrip()))
PY
