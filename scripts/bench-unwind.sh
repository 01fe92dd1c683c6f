#!/usr/bin/env bash
# scripts/bench-unwind.sh: whole-machine stacks on a machine busy with short-lived
# processes, profile against perf --call-graph dwarf in the same run. Two shells loop a
# compile (gcc -O2 -c of C, g++ -O1 -c of C++, a link) while `profile -F 99 -U --folded`
# and `perf record -a -F 99 --call-graph dwarf,16384` sample the whole machine side by
# side; then, per compiler process (cc1, cc1plus, as, ld), the share of samples whose
# stack reaches the process root (_start) and the median user depth, for each. Run twice:
# with an empty unwind-table cache, and with the cache the first run left. Also prints
# profile's own account of how user stacks were walked.
# Needs root, ./profile, perf, gcc and g++. Takes about a minute.
# Usage: scripts/bench-unwind.sh [SECONDS]   (default 10)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
SECONDS_RUN=${1:-10}
CACHE=${PROFILE_CACHE_DIR:-/var/cache/profile}

if [ "$(id -u)" != 0 ]; then
	echo "bench-unwind: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
for tool in perf gcc g++ "$PROFILE"; do
	command -v "$tool" >/dev/null || { echo "bench-unwind: $tool is missing" >&2; exit 1; }
done

TMP=$(mktemp -d /tmp/profile-bench-unwind.XXXXXX)
LOOPS=()
cleanup() {
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

# A stack reaches its root when its outermost frame is _start, or one of its two outermost
# frames is libc's __libc_start_* (a stripped program's _start has no name, in perf's
# stacks as in ours).
# Per comm: samples, rooted samples, and the user depths, from folded lines.
roots_folded() {
	awk '{ n = $NF; sub(/ [0-9]+$/, ""); k = split($0, f, ";"); c = f[1]
		all[c] += n; if (f[2] == "_start" || f[2] ~ /^__libc_start/ || f[3] ~ /^__libc_start/) rooted[c] += n
		for (i = 0; i < n; i++) depth[c] = depth[c] " " (k - 1) }
		END { for (c in all) print c, all[c], rooted[c] + 0, depth[c] }' "$1"
}
# The same from perf script: a sample's header line, then its frames, leaf first.
roots_perf_script() {
	awk 'function done() { if (sample) { all[c]++; if (last == "_start" || last ~ /^__libc_start/ || before ~ /^__libc_start/) rooted[c]++; depth[c] = depth[c] " " d } sample = 0 }
		/^[^ \t]/ { done(); sample = 1; c = $1; last = ""; before = ""; d = 0; next }
		NF >= 2 && sample { before = last; last = $2; sub(/\+0x[0-9a-f]+$/, "", last); if ($1 ~ /^[0-9a-f]+$/ && $1 !~ /^ffff/) d++ }
		END { done(); for (c in all) print c, all[c], rooted[c] + 0, depth[c] }' "$1"
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ a[NR] = $1 } END { print NR ? a[int((NR + 1) / 2)] : "-" }'; }

run() {
	local label=$1
	"$PROFILE" -F 99 -U --folded "$SECONDS_RUN" > "$TMP/$label.folded" 2> "$TMP/$label.err" &
	local ours=$!
	perf record -q -a -F 99 -e cpu-clock --call-graph dwarf,16384 -o "$TMP/$label.data" -- sleep "$SECONDS_RUN" \
		> /dev/null 2>&1 &
	local theirs=$!
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
	echo
}

setsid bash -c "$(declare -f compile_loop); TMP=$TMP; compile_loop 1" > /dev/null 2>&1 &
LOOPS+=($!)
setsid bash -c "$(declare -f compile_loop); TMP=$TMP; compile_loop 2" > /dev/null 2>&1 &
LOOPS+=($!)
sleep 1

rm -rf "$CACHE/unwind"
run empty
run warm
