#!/usr/bin/env bash
# scripts/bench-inline.sh: profile's inlined frames against perf's, and what they cost.
# build/workloads/inlined (C++ at -O2 -g, frame pointers kept) runs once while perf record
# --call-graph dwarf, profile --folded and profile -o .pb.gz all sample it at the same
# rate. perf 6.1 adds inlined frames to DWARF call chains only (not to -g's frame-pointer
# ones), so its walk is DWARF's; profile's follows the frame pointers (a fourth run,
# --no-inline, shows what the match is without inlined frames). Each stack is taken
# from its leaf to main (the walks differ in libc below main: perf's goes on to _start),
# kernel frames left out (profile runs with -U), names compared without their parameters,
# offsets or return types. Prints the share of samples whose stack both tell alike (the
# overlap of the two distributions of stacks), for folded and for pprof (each location's
# lines, innermost first), and the stacks that differ most.
# Then the cost: the end-of-run symbolization time (PROFILE_DEBUG=1's "symbolize" phase)
# and the peak RSS with inlined frames and with --no-inline, of this program alone and of
# the whole machine, RUNS times each (the median).
# Needs root, perf, python3, ./profile and build/workloads/inlined (make; make workloads).
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
WORKLOAD=${WORKLOAD:-$ROOT/build/workloads/inlined}
HZ=${HZ:-199}
SECONDS_SAMPLED=${SECONDS_SAMPLED:-10}
RUNS=${RUNS:-3}

log() { echo "bench-inline: $*" >&2; }
if [ "$(id -u)" != 0 ]; then
	log "needs root to load BPF programs and to run perf (try: sudo $0)"
	exit 1
fi
for tool in perf python3; do
	command -v "$tool" >/dev/null || { log "$tool is missing"; exit 1; }
done
for program in "$PROFILE" "$WORKLOAD"; do
	[ -x "$program" ] || { log "$program is not built (run: make && make workloads)"; exit 1; }
done

. "$ROOT/scripts/work-dir.sh"
work_dir bench-inline

# --- the same run, sampled by all three --------------------------------------------------
"$WORKLOAD" $((SECONDS_SAMPLED + 4)) &
WORKLOAD_PID=$!
BACKGROUND+=("$WORKLOAD_PID")
sleep 1
log "sampling $(basename "$WORKLOAD") (PID $WORKLOAD_PID) for $SECONDS_SAMPLED s at $HZ Hz with perf and profile"
perf record -q -F "$HZ" --call-graph dwarf -p "$WORKLOAD_PID" -o "$TMP/perf.data" -- sleep "$SECONDS_SAMPLED" \
	>/dev/null 2>"$TMP/perf.err" &
PERF_PID=$!
"$PROFILE" -U -F "$HZ" -p "$WORKLOAD_PID" --folded "$SECONDS_SAMPLED" >"$TMP/profile.folded" 2>"$TMP/folded.err" &
FOLDED_PID=$!
"$PROFILE" -U -F "$HZ" -p "$WORKLOAD_PID" -o "$TMP/profile.pb.gz" "$SECONDS_SAMPLED" 2>"$TMP/pprof.err" &
PPROF_PID=$!
# And without inlined frames: what the match would be without them.
"$PROFILE" -U -F "$HZ" -p "$WORKLOAD_PID" --no-inline --folded "$SECONDS_SAMPLED" >"$TMP/no-inline.folded" 2>"$TMP/no-inline.err" &
NO_INLINE_PID=$!
wait "$PERF_PID" || { log "perf record failed:"; cat "$TMP/perf.err" >&2; exit 1; }
wait "$FOLDED_PID" || { log "profile --folded failed:"; cat "$TMP/folded.err" >&2; exit 1; }
wait "$PPROF_PID" || { log "profile -o .pb.gz failed:"; cat "$TMP/pprof.err" >&2; exit 1; }
wait "$NO_INLINE_PID" || { log "profile --no-inline failed:"; cat "$TMP/no-inline.err" >&2; exit 1; }
wait "$WORKLOAD_PID" || true
BACKGROUND=()
perf script -i "$TMP/perf.data" --inline >"$TMP/perf.script" 2>"$TMP/perf-script.err"

python3 - "$TMP/perf.script" "$TMP/profile.folded" "$TMP/profile.pb.gz" "$TMP/no-inline.folded" <<'PY'
import collections, gzip, re, sys

def strip_suffix_group(name, open_ch, close_ch):
    """Drops a trailing balanced (...) group, and what C++ puts after it (const, &)."""
    name = re.sub(r'\s*(const|volatile|&&|&)\s*$', '', name)
    if not name.endswith(close_ch):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += name[i] == close_ch
        depth -= name[i] == open_ch
        if depth == 0:
            return name[:i]
    return name

def normal(name):
    """A function's name without offset, parameters or return type: how perf and profile both say it."""
    name = re.sub(r'\+0x[0-9a-f]+$', '', name.strip())
    name = strip_suffix_group(name, '(', ')')
    # A template function's demangled name starts with its return type: keep what follows
    # the last space outside <...> and (...).
    depth, cut = 0, 0
    for i, c in enumerate(name):
        depth += c in '<('
        depth -= c in '>)'
        if c == ' ' and depth == 0:
            cut = i + 1
    return name[cut:]

def to_main(frames):
    """Leaf-first frames up to main, main included (the walks differ below it)."""
    for i, f in enumerate(frames):
        if f == 'main':
            return tuple(frames[:i + 1])
    return tuple(frames)

def perf_stacks(path):
    stacks = collections.Counter()
    frames = None
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line.strip():
            if frames is not None:
                stacks[to_main(frames)] += 1
            frames = None
            continue
        if not line.startswith(('\t', ' ')):
            frames = []
            continue
        m = re.match(r'\s*[0-9a-f]+ (.*) \((.*)\)$', line)
        if m is None or frames is None:
            continue
        symbol, module = m.groups()
        if module == '[kernel.kallsyms]' or module.startswith('[kernel'):
            continue
        frames.append(normal(symbol))
    if frames is not None:
        stacks[to_main(frames)] += 1
    return stacks

def folded_stacks(path):
    stacks = collections.Counter()
    for line in open(path, errors='replace'):
        line = line.rstrip('\n')
        if not line:
            continue
        stack, count = line.rsplit(' ', 1)
        frames = stack.split(';')[1:]  # the comm first
        stacks[to_main([normal(f) for f in reversed(frames)])] += int(count)
    return stacks

def varint(data, i):
    """The varint at data[i]: its value, and where the next field starts."""
    value = shift = 0
    while True:
        b = data[i]; i += 1
        value |= (b & 0x7f) << shift; shift += 7
        if not b & 0x80:
            return value, i

def varints(data):
    i = 0
    while i < len(data):
        value, i = varint(data, i)
        yield value

def fields(data):
    """(field number, value) of one protobuf message: ints and bytes."""
    i = 0
    while i < len(data):
        key, i = varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = varint(data, i)
            yield number, value
        elif wire == 2:
            size, i = varint(data, i)
            yield number, data[i:i + size]
            i += size
        elif wire == 1:
            yield number, data[i:i + 8]; i += 8
        elif wire == 5:
            yield number, data[i:i + 4]; i += 4
        else:
            raise ValueError('wire type %d' % wire)

def pprof_stacks(path):
    profile = gzip.open(path).read()
    strings, functions, locations, samples = [], {}, {}, []
    for number, value in fields(profile):
        if number == 6:
            strings.append(value.decode('utf-8', 'replace'))
        elif number == 5:
            f = dict(fields(value))
            functions[f.get(1, 0)] = f.get(2, 0)
        elif number == 4:
            lid, lines = 0, []
            for n, v in fields(value):
                if n == 1:
                    lid = v
                elif n == 4:
                    lines.append(dict(fields(v)).get(1, 0))  # innermost first
            locations[lid] = lines
        elif number == 2:
            ids, values = [], []
            for n, v in fields(value):
                if n == 1:
                    ids += list(varints(v)) if isinstance(v, bytes) else [v]
                elif n == 2:
                    values += list(varints(v)) if isinstance(v, bytes) else [v]
            samples.append((ids, values[0] if values else 0))
    stacks = collections.Counter()
    inlined = 0
    for ids, count in samples:
        frames = []
        for lid in ids:
            lines = locations.get(lid, [])
            inlined += count * (len(lines) > 1 and lid == ids[0])
            frames += [normal(strings[functions[f]]) for f in lines]
        stacks[to_main(frames)] += count
    return stacks, inlined

def overlap(a, b):
    na, nb = sum(a.values()), sum(b.values())
    if not na or not nb:
        return 0.0
    return sum(min(a[s] / na, b[s] / nb) for s in set(a) | set(b))

def depth(stacks):
    n = sum(stacks.values())
    return sum(len(s) * c for s, c in stacks.items()) / n if n else 0

perf = perf_stacks(sys.argv[1])
folded = folded_stacks(sys.argv[2])
pprof, pprof_inlined = pprof_stacks(sys.argv[3])
no_inline = folded_stacks(sys.argv[4])
n_perf = sum(perf.values())
print('samples: perf %d, profile folded %d, profile pprof %d' % (n_perf, sum(folded.values()), sum(pprof.values())))
print('frames from the leaf to main, on average: perf %.2f, folded %.2f, pprof %.2f' %
      (depth(perf), depth(folded), depth(pprof)))
print('pprof samples whose leaf location holds inlined lines: %.1f %%' % (100.0 * pprof_inlined / max(1, sum(pprof.values()))))
for name, stacks in (('folded', folded), ('pprof', pprof), ('folded --no-inline', no_inline)):
    # The two sample apart, so their shares differ by chance: the second figure counts
    # perf's samples whose stack profile has at all.
    seen = sum(c for s, c in perf.items() if stacks[s])
    print('match with perf script --inline, %s: %.1f %% of samples (%.1f %% of perf\'s samples have a stack profile has too)' %
          (name, 100 * overlap(perf, stacks), 100.0 * seen / max(1, n_perf)))
n_folded = sum(folded.values())
diffs = sorted(set(perf) | set(folded),
               key=lambda s: -abs(perf[s] / max(1, n_perf) - folded[s] / max(1, n_folded)))
print('stacks that differ most (perf %, folded %), leaf first:')
for s in diffs[:4]:
    print('  %5.1f %5.1f  %s' % (100 * perf[s] / max(1, n_perf), 100 * folded[s] / max(1, n_folded), ' <- '.join(s)))
PY

# --- the cost, at the end of the run -------------------------------------------------------
# The "symbolize" phase of PROFILE_DEBUG's "after sampling" line: wall ms and CPU ms.
symbolize_ms() {
	sed -n 's/.*symbolize \([0-9.]*\) ms (CPU \([0-9.]*\)).*/\1 \2/p' "$1" | head -1
}
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "?" }'; }

# The peak RSS too, through GNU time where it is installed (Debian's `time` package).
TIME=()
[ -x /usr/bin/time ] && TIME=(/usr/bin/time -f %M -o "$TMP/rss")

cost() { # what, then profile's arguments
	local what=$1 with=() without=() run line
	shift
	for run in $(seq "$RUNS"); do
		for mode in inline no-inline; do
			local extra=()
			[ "$mode" = no-inline ] && extra=(--no-inline)
			echo 0 >"$TMP/rss"
			PROFILE_DEBUG=1 "${TIME[@]}" "$PROFILE" "$@" "${extra[@]}" >/dev/null 2>"$TMP/cost.err" ||
				{ log "profile $* failed:"; cat "$TMP/cost.err" >&2; exit 1; }
			line="$(symbolize_ms "$TMP/cost.err") $(tail -1 "$TMP/rss")"
			if [ "$mode" = inline ]; then with+=("$line"); else without+=("$line"); fi
		done
	done
	field() { # the median of field $1 of the runs given after it
		local n=$1
		shift
		printf '%s\n' "$@" | cut -d' ' -f"$n" | median
	}
	printf '%s, median of %d: symbolize at the end of the run %s ms (CPU %s) with inlined frames, %s ms (CPU %s) with --no-inline; peak RSS %s KiB against %s KiB\n' \
		"$what" "$RUNS" "$(field 1 "${with[@]}")" "$(field 2 "${with[@]}")" \
		"$(field 1 "${without[@]}")" "$(field 2 "${without[@]}")" "$(field 3 "${with[@]}")" "$(field 3 "${without[@]}")"
}

"$WORKLOAD" $((RUNS * 30 + 10)) & # through every run of both costs below
WORKLOAD_PID=$!
BACKGROUND+=("$WORKLOAD_PID")
sleep 1
log "the cost: $RUNS runs each, with and without --no-inline"
cost "$(basename "$WORKLOAD") alone (-p, 3 s)" -F "$HZ" -p "$WORKLOAD_PID" --folded 3
cost "the whole machine (3 s)" -F "$HZ" --folded 3
