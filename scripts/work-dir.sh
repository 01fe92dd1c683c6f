# scripts/work-dir.sh: sourced by the benchmark scripts that keep files in a temporary
# folder and start processes in the background: `work_dir NAME` makes $TMP
# (/tmp/NAME.XXXXXX) and an empty BACKGROUND list; at exit (Ctrl-C too) every pid added to
# BACKGROUND is killed and $TMP removed. Also the start the flame-graph scripts share
# (flamegraph_start), the commit a report names (tree_commit), and a tests/receiver.py in
# the background that records into $TMP/received (start_receiver NAME: $port is its port;
# NAME says who failed when it does not start).
#
# `flamegraph_start NAME TOOL WHAT [SECONDS] [OUTPUT]`: how the scripts that make the
# README's flame graphs start, from the tree's top: PROFILE (./profile unless set),
# SECONDS_RUN (5) and OUTPUT (doc/NAME.svg) from their arguments; a line that NAME starts,
# and exit 1, unless this is root and both TOOL and $PROFILE can be run (WHAT names TOOL and
# says where to get it); then `work_dir profile-NAME`.
flamegraph_start() {
	local name=$1 tool=$2 what=$3
	shift 3
	PROFILE=${PROFILE:-./profile}
	SECONDS_RUN=${1:-5}
	OUTPUT=${2:-doc/$name.svg} # the graph's title names the command: relative paths
	if [ "$(id -u)" != 0 ]; then
		echo "$name: needs root to load BPF programs (try: sudo $0)" >&2
		exit 1
	fi
	if [ -z "$tool" ] || [ ! -x "$tool" ] || [ ! -x "$PROFILE" ]; then
		echo "$name: needs $what and $PROFILE (make)" >&2
		exit 1
	fi
	work_dir "profile-$name"
}

work_dir() {
	TMP=$(mktemp -d "/tmp/$1.XXXXXX")
	BACKGROUND=()
	trap work_dir_cleanup EXIT
	trap 'exit 130' INT TERM
}

work_dir_cleanup() {
	local pid
	for pid in "${BACKGROUND[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$TMP"
}

# The commit of the tree at $1, for a report's header: "1a2b3c4", "(with uncommitted
# changes)" after it when the tracked files differ from it, or "not a git checkout".
tree_commit() {
	local commit
	commit=$(git -C "$1" rev-parse --short HEAD 2>/dev/null) || { echo "not a git checkout"; return 0; }
	if [ -n "$(git -C "$1" status --porcelain -uno 2>/dev/null)" ]; then commit+=" (with uncommitted changes)"; fi
	echo "$commit"
}

start_receiver() {
	mkdir -p "$TMP/received"
	python3 "$ROOT/tests/receiver.py" --dir "$TMP/received" --port 0 >"$TMP/receiver.out" 2>"$TMP/receiver.err" &
	BACKGROUND+=("$!")
	port=""
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$(awk '$1 == "port" { print $2; exit }' "$TMP/receiver.out")
		[ -n "$port" ] && return 0
		sleep 0.5
	done
	echo "$1: the receiver did not start" >&2
	exit 1
}
