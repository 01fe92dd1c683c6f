#!/bin/sh
# scripts/options-doc.sh: writes `profile --help` into doc/options.md's Options block, which
# tests/test_install.cpp holds equal to it. Run after a change to the option table
# (cli/options.cpp), with the program built: scripts/options-doc.sh [PROFILE]
cd "$(dirname "$0")/.." || exit 1
profile=${1:-./profile}
help=$(mktemp) && out=$(mktemp) || exit 1
trap 'rm -f "$help" "$out"' EXIT
"$profile" --help >"$help" || exit 1
# The block is the first fenced one after "## Options": its lines give way to --help's.
awk -v help="$help" '
	state == 0 && $0 == "## Options" { state = 1 }
	state == 1 && $0 == "```" { print; while ((getline line < help) > 0) print line; state = 2; next }
	state == 2 { if ($0 == "```") { print; state = 3 } ; next }
	{ print }
	END { if (state != 3) exit 1 }
' doc/options.md >"$out" || { echo "options-doc.sh: no Options block in doc/options.md" >&2; exit 1; }
cat "$out" >doc/options.md
