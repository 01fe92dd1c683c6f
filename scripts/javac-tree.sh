# shellcheck shell=bash
# scripts/javac-tree.sh: sourced by scripts/java-flamegraph.sh and scripts/bench-javac.sh,
# the real Java program they sample: Debian OpenJDK 17's javac compiling the JDK's own
# java.util (344 files: java/util and its subpackages but jar) as a patch of java.base,
# about 10 s of two CPUs on an idle 2-CPU VM, most of it on javac's main thread.
#
# The sources are openjdk-17-source's src.zip. That package is often not installed (the
# JDK's lib/src.zip is then a dangling link), and installing it would pull the JDK up to its
# own version, so when the JDK's src.zip is not there `javac_tree` fetches the package with
# `apt-get download` (47 MB), unpacks it into build/javac-tree without installing it, and
# keeps java.util's sources there for the next run. The package can be a few updates newer
# than the JDK (17.0.21 against 17.0.15 here): java/util/jar is left out because its
# JarVerifier calls a constructor the older JDK does not have; the rest compiles.
#
# `javac_tree` (from the tree's top, ROOT set): JAVAC, and TREE, the folder with java.base/
# and files (the list javac reads). `javac_start OUT [JVM option...]`: one compile in the
# background into OUT (emptied first), each JVM option passed as -J; JAVAC_PID is its pid
# (the launcher is the JVM: no child), added to BACKGROUND.
JDK17=/usr/lib/jvm/java-17-openjdk-amd64
JAVAC=$JDK17/bin/javac

javac_tree() {
	TREE=$ROOT/build/javac-tree
	[ -s "$TREE/files" ] && return 0
	local zip=$JDK17/lib/src.zip deb
	rm -rf "$TREE" && mkdir -p "$TREE/deb"
	if [ ! -f "$zip" ]; then
		(cd "$TREE/deb" && apt-get download openjdk-17-source > /dev/null 2>&1) ||
			{ echo "javac-tree: no $zip, and apt-get download openjdk-17-source failed" >&2; return 1; }
		deb=$(ls "$TREE"/deb/openjdk-17-source_*.deb)
		dpkg-deb -x "$deb" "$TREE/deb/x"
		zip=$(find "$TREE/deb/x" -name src.zip -type f | head -1)
	fi
	unzip -q "$zip" 'java.base/java/util/*' -d "$TREE"
	rm -rf "$TREE/deb" "$TREE/java.base/java/util/jar"
	(cd "$TREE" && find java.base -name '*.java' | sort > files.tmp && mv files.tmp files)
}

javac_start() {
	local out=$1 opt
	shift
	local jvm=()
	for opt in "$@"; do jvm+=("-J$opt"); done
	rm -rf "$out" && mkdir -p "$out"
	(cd "$TREE" && exec "$JAVAC" "${jvm[@]}" --patch-module java.base=java.base -proc:none -nowarn \
		-implicit:none -d "$out" @files > "$out.log" 2>&1) &
	JAVAC_PID=$!
	BACKGROUND+=("$JAVAC_PID")
}

# The same counts of javac's main thread (comm javac: the launcher's own first thread only
# waits for it) from each tool, one line of fields in this order:
#   samples rooted leaf_java leaf_java_unnamed leaf_stub leaf_unknown frames frames_named
#   java_frames inlined_frames interpreter_frames methods
# leaf_java: a Java method's name (profile: compiled or interpreted; perf: a compiled
# method from the perf map, an interpreted leaf reads Interpreter and is a stub here);
# leaf_java_unnamed: profile's [java], or perf's Interpreter; leaf_stub: another code blob
# of the code cache named by its blob (StubRoutines, vtable chunks, Runtime1 stubs...);
# leaf_unknown: [unknown], counted as code-cache code not named (on javac these are
# profile's vtable stubs, checked against a perf map; perf's are in the code cache or off
# every mapping). rooted: the stack reaches the thread's start (clone3, start_thread or
# _start). frames_named: frames other than [unknown], [truncated], [java], Interpreter.
# methods: distinct Java methods (Class.method) met anywhere in the thread's stacks.

# profile --folded -U -a: "comm;root;...;leaf COUNT", inlined frames end in _[i].
profile_stats() {
	awk '$0 ~ /^javac;/ {
		n = $NF; line = $0; sub(/ [0-9]+$/, "", line); k = split(line, f, ";")
		s += n; if (f[2] == "clone3" || f[2] == "_start") rooted += n
		for (i = 2; i <= k; i++) {
			fr = f[i]; inl = sub(/_\[i\]$/, "", fr); frames += n
			if (fr != "[unknown]" && fr != "[truncated]" && fr != "[java]") named += n
			if (fr ~ /^[^ \[][^ ]*\.[^ .]+ \([^()]*\)$/) {
				jf += n; ij += inl * n; m = fr; sub(/ \(.*$/, "", m); methods[m] = 1
				if (i == k) lj += n
			} else if (i == k) {
				if (fr == "[java]") lu += n; else if (fr == "[unknown]") lk += n
				else if (fr ~ /^\[/ && fr != "[truncated]") ls += n
			}
		}
	} END {
		nm = 0; for (m in methods) nm++
		print s + 0, rooted + 0, lj + 0, lu + 0, ls + 0, lk + 0, frames + 0, named + 0, jf + 0, ij + 0, 0, nm
	}' "$1"
}

# perf script: a header line "comm tid time: period cpu-clock:", then one line a frame,
# leaf first, "addr symbol+off (dso)"; a blank line ends the sample. The perf map's
# compiled methods read "rettype pkg.Class.method(args)".
perf_stats() {
	awk 'function done() {
		if (main && k) {
			s++; if (sym[k] ~ /^(start_thread|_start|__libc_start_main|clone3)/) rooted++
			for (i = 1; i <= k; i++) {
				frames++; jit = dso[i] ~ /perf-[0-9]+\.map$/
				if (sym[i] != "[unknown]" && sym[i] != "Interpreter") named++
				if (sym[i] == "Interpreter") interp++
				if (jit && sym[i] ~ /^[^ (]+ [^ (]+\.[^ (]+\(/) {
					jf++; m = sym[i]; sub(/\(.*$/, "", m); sub(/^[^ ]+ /, "", m); methods[m] = 1
					if (i == 1) lj++
				} else if (i == 1) {
					if (sym[i] == "Interpreter") lu++; else if (sym[i] == "[unknown]") lk++; else if (jit) ls++
				}
			}
		}
		main = 0; k = 0
	}
	/^[^ \t]/ { done(); main = ($1 == "javac" && $2 ~ /^[0-9]+$/); next }
	/^$/ { done(); next }
	{
		line = $0; sub(/^[ \t]*[0-9a-f]+ /, "", line)
		d = line; sub(/^.* \(/, "", d); sub(/\)$/, "", d)
		sub(/ \([^()]*\)$/, "", line); sub(/\+0x[0-9a-f]+$/, "", line)
		k++; sym[k] = line; dso[k] = d
	} END {
		done(); nm = 0; for (m in methods) nm++
		print s + 0, rooted + 0, lj + 0, lu + 0, ls + 0, lk + 0, frames + 0, named + 0, jf + 0, 0, interp + 0, nm
	}' "$1"
}
