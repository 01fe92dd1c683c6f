#!/usr/bin/env bash
# scripts/bench-debuginfod.sh: what fetching debug files from debuginfod costs and gains.
# Builds a program and 18 shared libraries, each burning CPU in a static function, strips
# them of every symbol and puts their debug files (objcopy --only-keep-debug), with libc's
# from libc6-dbg, in the directory of Debian's debuginfod started on loopback: a run of
# the program needs 20 debug files. Then, while it runs:
# - profile and perf record -g sample it at once; perf is given the same debug files (its
#   build-id cache), profile fetches them (with this machine's /usr/lib/debug switched
#   off: PROFILE_DEBUG_ROOT). Prints the share of user frames each names, and any frame
#   profile leaves as [file+0x...].
# - RUNS runs of profile from an empty cache: the fetch's time (PROFILE_DEBUG=1's account)
#   and the whole run's wall time against --no-debuginfod; then one from the full cache.
# - What each fault (404, another build's file, junk, a stall, a redirect loop, no server,
#   an unwritable cache) adds to a run with --debuginfod-timeout 2, and its one line.
# Needs root, ./profile, debuginfod, perf, libc6-dbg, python3. Takes about two minutes.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
RUNS=${RUNS:-3}
HZ=${HZ:-499}
LIBS=18

if [ "$(id -u)" != 0 ]; then
	echo "bench-debuginfod: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
for tool in debuginfod debuginfod-find perf gcc objcopy strip readelf; do
	command -v "$tool" >/dev/null || { echo "bench-debuginfod: $tool is missing (scripts/install-deps.sh --test)" >&2; exit 1; }
done
[ -x "$PROFILE" ] || { echo "bench-debuginfod: $PROFILE is not built (run: make)" >&2; exit 1; }
LIBC=$(ldd /bin/true | awk '/libc.so.6/ { print $3 }')
build_id() { readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3 }'; }
LIBC_ID=$(build_id "$LIBC")
LIBC_DEBUG=/usr/lib/debug/.build-id/${LIBC_ID:0:2}/${LIBC_ID:2}.debug
[ -r "$LIBC_DEBUG" ] || { echo "bench-debuginfod: $LIBC_DEBUG is missing (apt-get install libc6-dbg)" >&2; exit 1; }

. "$ROOT/scripts/work-dir.sh"
work_dir bench-debuginfod
log() { echo "bench-debuginfod: $*" >&2; }

# The program and its libraries, stripped; their debug files in served/.
mkdir -p "$TMP/bin" "$TMP/served"
CFLAGS="-O1 -g -fno-omit-frame-pointer -fno-inline -Wl,--build-id"
main_calls=""
main_decls=""
for i in $(seq 1 $LIBS); do
	cat >"$TMP/lib$i.c" <<-EOF
		static volatile unsigned long sink;
		__attribute__((noinline)) static void lib${i}_hot(void) { for (unsigned long i = 0; i < 20000; i++) sink += i; }
		void lib${i}_entry(void) { lib${i}_hot(); }
	EOF
	gcc $CFLAGS -shared -fPIC "$TMP/lib$i.c" -o "$TMP/bin/lib$i.so.full"
	main_decls="$main_decls void lib${i}_entry(void);"
	main_calls="$main_calls lib${i}_entry();"
done
cat >"$TMP/main.c" <<EOF
#include <stdlib.h>
#include <time.h>
$main_decls
static volatile unsigned long sink;
static int numbers[1024];
__attribute__((noinline)) static void main_hot(void) { for (unsigned long i = 0; i < 20000; i++) sink += i; }
static int compare(const void *a, const void *b) { return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }
__attribute__((noinline)) static void main_sort(void)
{
	unsigned seed = 1;
	for (int i = 0; i < 1024; i++) numbers[i] = (int)((seed = seed * 1103515245 + 12345) >> 8);
	qsort(numbers, 1024, sizeof(int), compare);
}
int main(int argc, char **argv)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double end = ts.tv_sec + atof(argv[1]);
	while (clock_gettime(CLOCK_MONOTONIC, &ts), ts.tv_sec < end) {
		main_hot(); main_sort(); $main_calls
	}
	return 0;
}
EOF
for i in $(seq 1 $LIBS); do
	objcopy --only-keep-debug "$TMP/bin/lib$i.so.full" "$TMP/served/lib$i.so.debug"
	strip --strip-all "$TMP/bin/lib$i.so.full" -o "$TMP/bin/lib$i.so"
done
gcc $CFLAGS "$TMP/main.c" -o "$TMP/bin/many.full" -L"$TMP/bin" $(for i in $(seq 1 $LIBS); do echo -n " -l:lib$i.so"; done) \
	-Wl,-rpath,"$TMP/bin"
objcopy --only-keep-debug "$TMP/bin/many.full" "$TMP/served/many.debug"
strip --strip-all "$TMP/bin/many.full" -o "$TMP/bin/many"
cp "$LIBC_DEBUG" "$TMP/served/libc.so.6.debug"
FILES=$(ls "$TMP/served" | wc -l)

# Debian's debuginfod over served/, on a port nothing uses.
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
debuginfod -F -t 0 -g 0 -p "$PORT" -d "$TMP/db.sqlite" "$TMP/served" >"$TMP/debuginfod.log" 2>&1 &
BACKGROUND+=("$!")
export DEBUGINFOD_URLS="http://127.0.0.1:$PORT"
for file in "$TMP"/served/*.debug; do
	id=$(build_id "$file")
	for try in $(seq 1 150); do
		rm -rf "$TMP/probe"
		DEBUGINFOD_CACHE_PATH="$TMP/probe" debuginfod-find debuginfo "$id" >/dev/null 2>&1 && break
		[ "$try" = 150 ] && { log "debuginfod does not serve $file"; cat "$TMP/debuginfod.log" >&2; exit 1; }
		sleep 0.2
	done
done
log "debuginfod on port $PORT serves $FILES debug files"

"$TMP/bin/many" 600 &
MANY=$!
BACKGROUND+=("$MANY")
sleep 0.5

# Names: profile and perf over the same seconds of the same process.
export PROFILE_DEBUG_ROOT="$TMP/no-debug-files"
mkdir -p "$TMP/perf-debug"
for file in "$TMP"/served/*.debug; do
	perf --buildid-dir "$TMP/perf-debug" buildid-cache -a "$file" 2>/dev/null
done
DEBUGINFOD_CACHE_PATH="$TMP/cache-names" PROFILE_DEBUG=1 "$PROFILE" -p "$MANY" -f "$HZ" --folded 5 \
	>"$TMP/profile.folded" 2>"$TMP/profile.err" &
PROFILE_PID=$!
perf --buildid-dir "$TMP/perf-debug" record -q -g -p "$MANY" -F "$HZ" -o "$TMP/perf.data" -- sleep 5 \
	>/dev/null 2>"$TMP/perf.err"
wait "$PROFILE_PID"
# Folded stacks' user frames: "NAMED TOTAL", each frame weighted by its samples.
named_frames() {
	awk '{
		count = $NF
		n = split(substr($0, 1, length($0) - length(count) - 1), frames, ";")
		for (i = 2; i <= n; i++) {
			total += count
			if (frames[i] !~ /^\[/)
				named += count
		}
	}
	END { printf "%d %d\n", named, total }' "$1"
}
ours=$(named_frames "$TMP/profile.folded")
"$PROFILE" --no-debuginfod -p "$MANY" -f "$HZ" --folded 2 >"$TMP/without.folded" 2>/dev/null
without=$(named_frames "$TMP/without.folded")
DEBUGINFOD_URLS= perf --buildid-dir "$TMP/perf-debug" script -i "$TMP/perf.data" -F ip,sym,dso \
	2>>"$TMP/perf.err" >"$TMP/perf.txt"
theirs=$(awk '/^\t/ || /^ / {
		if (length($1) == 16 && $1 ~ /^ffff/)
			next
		total++
		if ($2 != "[unknown]")
			named++
	}
	END { printf "%d %d\n", named, total }' "$TMP/perf.txt")
fraction() { awk -v n="$1" -v t="$2" 'BEGIN { printf "%.1f%%", t ? 100 * n / t : 0 }'; }
set -- $ours
echo "names: profile $(fraction "$1" "$2") of user frames named ($1 of $2 frame samples)"
set -- $without
echo "names: profile --no-debuginfod $(fraction "$1" "$2") ($1 of $2)"
set -- $theirs
echo "names: perf    $(fraction "$1" "$2") of user frames named ($1 of $2 frame samples)"
unnamed=$(awk '{ n = split($0, f, ";"); for (i = 2; i <= n; i++) if (f[i] ~ /^\[/) { sub(/ [0-9]+$/, "", f[i]); print f[i] } }' \
	"$TMP/profile.folded" | sort | uniq -c | sort -rn | head -5)
echo "names: profile's unnamed frames: ${unnamed:-none}"
grep '^profile: debuginfod:' "$TMP/profile.err" | sed 's/^/names: /' || true

# Time: the fetch of 20 files from an empty cache, RUNS times, and the whole run's wall
# time against --no-debuginfod.
wall() {
	local start end
	start=$(date +%s%N)
	"$@" >/dev/null 2>"$TMP/run.err"
	end=$(date +%s%N)
	echo $(((end - start) / 1000000))
}
for run in $(seq 1 "$RUNS"); do
	without=$(wall "$PROFILE" --no-debuginfod -p "$MANY" -f "$HZ" --folded 2)
	with=$(DEBUGINFOD_CACHE_PATH="$TMP/cache-$run" PROFILE_DEBUG=1 wall "$PROFILE" -p "$MANY" -f "$HZ" --folded 2)
	fetch=$(sed -n 's/^profile: debuginfod: \([0-9]*\) debug files asked for, \([0-9]*\) used; fetched in \([0-9.]*\) ms$/\1 asked, \2 used, \3 ms/p' "$TMP/run.err")
	echo "time: empty cache, run $run: fetch ${fetch:-?}; whole run $with ms against $without ms with --no-debuginfod"
done
fetch=$(DEBUGINFOD_CACHE_PATH="$TMP/cache-1" PROFILE_DEBUG=1 wall "$PROFILE" -p "$MANY" -f "$HZ" --folded 2 >/dev/null;
	sed -n 's/^profile: debuginfod: .* fetched in \([0-9.]*\) ms$/\1 ms/p' "$TMP/run.err")
echo "time: full cache: fetch ${fetch:-?}"

FAULT=""
# Faults: what a server gone wrong (tests/debuginfod_faults.py) adds to a run, with
# --debuginfod-timeout 2: the fetch's own time (PROFILE_DEBUG=1's account), the whole run
# against --no-debuginfod (on a busy machine mostly noise), and the one line.
touch "$TMP/a-file"
head -c 5000 /dev/urandom >"$TMP/junk"
for fault in 404 "file:$TMP/served/lib1.so.debug" "file:$TMP/junk" stall redirect down unwritable; do
	url=""
	cache="$TMP/fault-cache-$RANDOM"
	case "$fault" in
	down) url="http://127.0.0.1:$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')" ;;
	unwritable) cache="$TMP/a-file/cache" ;;
	esac
	if [ -z "$url" ]; then
		python3 tests/debuginfod_faults.py "${fault/unwritable/404}" >"$TMP/fault.port" &
		FAULT=$!
		BACKGROUND+=("$FAULT")
		for try in $(seq 1 50); do [ -s "$TMP/fault.port" ] && break; sleep 0.1; done
		url="http://127.0.0.1:$(awk '{ print $2 }' "$TMP/fault.port")"
	fi
	without=$(wall "$PROFILE" --no-debuginfod -p "$MANY" --folded 1)
	with=$(DEBUGINFOD_URLS="$url" DEBUGINFOD_CACHE_PATH="$cache" PROFILE_DEBUG=1 \
		wall "$PROFILE" -p "$MANY" --folded --debuginfod-timeout 2 1)
	fetch=$(sed -n 's/^profile: debuginfod: .* fetched in \([0-9.]*\) ms$/\1 ms/p' "$TMP/run.err")
	said=$(grep '^profile: debuginfod:' "$TMP/run.err" | grep -v 'fetched in')
	echo "fault ${fault#file:$TMP/}: fetch ${fetch:-?}; whole run $with ms against $without ms;" \
		"$(echo "$said" | grep -c .) line: $(echo "$said" | cut -c1-160)"
	if [ -n "${FAULT:-}" ]; then
		kill "$FAULT" 2>/dev/null || true
		wait "$FAULT" 2>/dev/null || true
	fi
	FAULT=""
	rm -f "$TMP/fault.port"
done
