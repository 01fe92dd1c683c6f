#!/usr/bin/env bash
# scripts/bench-unwind.sh: whole-machine stacks on a machine busy with short-lived
# processes, profile against perf --call-graph dwarf in the same run. Two shells loop a
# compile (gcc -O2 -c of C, g++ -O1 -c of C++, a link) while `profile -F 99 -U --folded`
# and `perf record -a -F 99 --call-graph dwarf,16384` sample the whole machine side by
# side; then, per compiler process (cc1, cc1plus, as, ld), the share of samples whose
# stack reaches the process root (_start) and the median user depth, for each. Run twice:
# with an empty unwind-table cache, and with the cache the first run left. Also prints
# profile's own account of how user stacks were walked and its in-kernel ns per sample there.
# Then the in-kernel cost per sample on a 26-frame stack built with frame pointers
# (build/workloads/stacks), against bpftrace's frame-pointer ustack, -U, in both attach
# orders, for --unwind auto and --unwind fp; and the time beyond sampling of a one-second
# run and of 40 live processes (scripts/bench-start.sh).
# Needs root, ./profile, build/workloads (make workloads), perf, bpftrace, gcc and g++.
# Takes about four minutes.
# Usage: scripts/bench-unwind.sh [SECONDS]   (default 10)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
SECONDS_RUN=${1:-10}

if [ "$(id -u)" != 0 ]; then
	echo "bench-unwind: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
WORKLOADS=${WORKLOADS:-$ROOT/build/workloads}
for tool in perf bpftrace bpftool gcc g++ "$PROFILE" "$WORKLOADS/stacks"; do
	command -v "$tool" >/dev/null || { echo "bench-unwind: $tool is missing" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/profile-bench-unwind.XXXXXX)
# The table cache the runs use: the bench's own (PROFILE_CACHE_DIR to name another), emptied
# for the first run; never the machine's /var/cache/profile, which other runs share.
CACHE=${PROFILE_CACHE_DIR:-$TMP/cache}
mkdir -p -m 700 "$CACHE"
export CACHE_DIRECTORY=$CACHE
LOOPS=()
STATS_WAS=$(cat /proc/sys/kernel/bpf_stats_enabled)
cleanup() {
	echo "$STATS_WAS" > /proc/sys/kernel/bpf_stats_enabled
	for pid in "${LOOPS[@]}"; do kill -TERM -- -"$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT

# The compile loop's sources: a few hundred lines each, nothing the compilers find trivial.
{
	echo '#include <stdio.h>'
	echo '#include <stdlib.h>'
	echo '#include <string.h>'
	for i in $(seq 1 60); do
		cat <<EOF
struct node$i { int key; double weight; struct node$i *left, *right; };
static struct node$i *insert$i(struct node$i *t, int key, double w)
{
	if (!t) { t = calloc(1, sizeof(*t)); t->key = key; t->weight = w; return t; }
	if (key < t->key) t->left = insert$i(t->left, key, w * 1.5 + $i);
	else t->right = insert$i(t->right, key, w / 2.0 - $i);
	return t;
}
double walk$i(struct node$i *t) { return t ? t->weight * t->key + walk$i(t->left) - walk$i(t->right) : 0.0; }
EOF
	done
	echo 'int main(int argc, char **argv) { double s = 0;'
	for i in $(seq 1 60); do echo "  { struct node$i *t = 0; for (int k = 0; k < argc * 100; k++) t = insert$i(t, k * 7919 % 1000, k); s += walk$i(t); }"; done
	echo '  printf("%f\n", s); return 0; }'
} > "$TMP/loop.c"
{
	echo '#include <map>'
	echo '#include <string>'
	echo '#include <vector>'
	echo '#include <algorithm>'
	echo '#include <memory>'
	for i in $(seq 1 25); do
		cat <<EOF
template <typename T> struct Box$i { std::vector<T> items; std::map<std::string, T> named;
	T sum() const { T s{}; for (const T &x : items) s += x; for (const auto &[k, v] : named) s += v; return s; }
	void sort() { std::sort(items.begin(), items.end()); }
};
double use$i(int n) { Box$i<double> b; for (int k = 0; k < n; k++) { b.items.push_back(k * $i.5); b.named[std::to_string(k)] = k; } b.sort(); return b.sum(); }
EOF
	done
} > "$TMP/loop.cpp"

compile_loop() {
	while :; do
		gcc -O2 -c "$TMP/loop.c" -o "$TMP/loop$1.o"
		g++ -O1 -c "$TMP/loop.cpp" -o "$TMP/loopxx$1.o"
		gcc "$TMP/loop$1.o" -o "$TMP/loop$1"
	done
}

# A stack reaches its root when its outermost frame is _start, or the frame above it is libc's
# __libc_start_* or ld.so's _dl_start (a stripped program's _start, and ld.so's, may have no
# name, in perf's stacks as in ours).
# Per comm: samples, rooted samples, and the user depths, from folded lines.
roots_folded() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); c = f[1]
		all[c] += n; if (f[2] == "_start" || f[2] ~ /^__libc_start/ || f[3] ~ /^(__libc_start|_dl_start$)/) rooted[c] += n
		for (i = 0; i < n; i++) depth[c] = depth[c] " " (k - 1) }
		END { for (c in all) print c, all[c], rooted[c] + 0, depth[c] }' "$1"
}
# The same from perf script: a sample's header line, then its frames, leaf first.
roots_perf_script() {
	awk 'function done() { if (sample) { all[c]++; if (last == "_start" || last ~ /^__libc_start/ || before ~ /^(__libc_start|_dl_start$)/) rooted[c]++; depth[c] = depth[c] " " d } sample = 0 }
		/^[^ \t]/ { done(); sample = 1; c = $1; last = ""; before = ""; d = 0; next }
		NF >= 2 && sample { before = last; last = $2; sub(/\+0x[0-9a-f]+$/, "", last); if ($1 ~ /^[0-9a-f]+$/ && $1 !~ /^ffff/) d++ }
		END { done(); for (c in all) print c, all[c], rooted[c] + 0, depth[c] }' "$1"
}
. "$ROOT/scripts/bpf-stats.sh"
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "-" }'; }

run() {
	local label=$1
	"$PROFILE" -F 99 -U --folded "$SECONDS_RUN" > "$TMP/$label.folded" 2> "$TMP/$label.err" &
	local ours=$!
	local prog
	prog=$(prog_of "$ours")
	local before after
	before=$(prog_stats "$prog")
	perf record -q -a -F 99 -e cpu-clock --call-graph dwarf,16384 -o "$TMP/$label.data" -- sleep "$SECONDS_RUN" \
		> /dev/null 2>&1 &
	local theirs=$!
	sleep $((SECONDS_RUN - 1))
	after=$(prog_stats "$prog" || echo "$before")
	wait "$ours" "$theirs" || true
	perf script -i "$TMP/$label.data" > "$TMP/$label.script" 2> "$TMP/$label.script-err" || true
	roots_folded "$TMP/$label.folded" > "$TMP/$label.ours"
	roots_perf_script "$TMP/$label.script" > "$TMP/$label.perf"
	echo "### $label cache"
	echo
	echo "| process | samples: profile | perf | reaches its root: profile | perf | median user depth: profile | perf |"
	echo "|---|---|---|---|---|---|---|"
	for comm in cc1 cc1plus as ld; do
		local o p
		o=$(awk -v c="$comm" '$1 == c' "$TMP/$label.ours")
		p=$(awk -v c="$comm" '$1 == c' "$TMP/$label.perf")
		printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$comm" \
			"$(echo "$o" | awk '{ print $2 + 0 }')" "$(echo "$p" | awk '{ print $2 + 0 }')" \
			"$(echo "$o" | awk '{ printf "%.1f %%", $2 ? 100 * $3 / $2 : 0 }')" \
			"$(echo "$p" | awk '{ printf "%.1f %%", $2 ? 100 * $3 / $2 : 0 }')" \
			"$(echo "$o" | cut -d' ' -f4- | median)" "$(echo "$p" | cut -d' ' -f4- | median)"
	done
	echo
	grep -E '^profile: (user stacks|[0-9]+ unwind tables|[0-9]+ samples)' "$TMP/$label.err" | sed 's/^/    /' || true
	echo "    in-kernel cost: $(per_sample "$before" "$after") ns per sample"
	echo
}

setsid bash -c "$(declare -f compile_loop); TMP=$TMP; compile_loop 1" > /dev/null 2>&1 &
LOOPS+=($!)
setsid bash -c "$(declare -f compile_loop); TMP=$TMP; compile_loop 2" > /dev/null 2>&1 &
LOOPS+=($!)
sleep 1

echo 1 > /proc/sys/kernel/bpf_stats_enabled
rm -rf "$CACHE/unwind"
run empty
run warm

# ---- In-kernel cost per sample, both attached at once, in both orders ----
# Ours at 997 Hz against bpftrace's 999 Hz, so that the two timers' phases sweep past each
# other; whichever is attached first still measures differently, hence both orders and
# their geometric mean.
for pid in "${LOOPS[@]}"; do kill -TERM -- -"$pid" 2>/dev/null || true; done
LOOPS=()
setsid "$WORKLOADS/stacks" 88 120 > /dev/null 2>&1 &
LOOPS+=($!)
STACKS=$!
sleep 0.5
cost_pair() {
	local first=$1 mode=$2 ours peer ours_prog peer_prog o0 p0 o1 p1
	local program="profile:hz:999 /pid == $STACKS/ { @[ustack, comm, pid] = count(); }"
	start_ours() { "$PROFILE" -f 997 -U --unwind "$mode" -p "$STACKS" > /dev/null 2>&1 & ours=$!; ours_prog=$(prog_of "$ours"); }
	start_peer() { bpftrace -e "$program" > /dev/null 2>&1 & peer=$!; peer_prog=$(prog_of "$peer"); }
	if [ "$first" = profile ]; then start_ours; start_peer; else start_peer; start_ours; fi
	sleep 2
	o0=$(prog_stats "$ours_prog"); p0=$(prog_stats "$peer_prog")
	sleep 6
	o1=$(prog_stats "$ours_prog"); p1=$(prog_stats "$peer_prog")
	kill -INT "$ours" "$peer" 2>/dev/null
	# bpftrace has been seen to hang on SIGINT: 10 s, then it is killed.
	for _ in $(seq 1 50); do kill -0 "$peer" 2>/dev/null || break; sleep 0.2; done
	kill -KILL "$peer" 2>/dev/null || true
	wait "$ours" "$peer" 2>/dev/null || true
	echo "$(per_sample "$o0" "$o1") $(per_sample "$p0" "$p1")"
}
echo "### in-kernel ns per sample, -U, a 26-frame frame-pointer stack (build/workloads/stacks 88)"
echo
echo "| walk | profile first: profile | bpftrace | bpftrace first: profile | bpftrace | geometric mean ratio |"
echo "|---|---|---|---|---|---|"
for mode in auto fp; do
	read -r a1 b1 < <(cost_pair profile "$mode")
	read -r a2 b2 < <(cost_pair bpftrace "$mode")
	echo "| --unwind $mode | $a1 | $b1 | $a2 | $b2 | $(awk -v a1="$a1" -v b1="$b1" -v a2="$a2" -v b2="$b2" 'BEGIN { printf "%.2fx", sqrt((a1 / b1) * (a2 / b2)) }') |"
done
echo

# ---- Start and finish ----
# The time beyond sampling, against perf record -g + perf script: scripts/bench-start.sh.
PROFILE="$PROFILE" WORKLOADS="$WORKLOADS" "$ROOT/scripts/bench-start.sh" 3
