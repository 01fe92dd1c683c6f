# scripts/work-dir.sh: sourced by the benchmark scripts that keep files in a temporary
# folder and start processes in the background: `work_dir NAME` makes $TMP
# (/tmp/NAME.XXXXXX) and an empty BACKGROUND list; at exit (Ctrl-C too) every pid added to
# BACKGROUND is killed and $TMP removed.
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
