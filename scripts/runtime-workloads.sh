# scripts/runtime-workloads.sh: sourced by scripts/soak.sh and scripts/bench-agent.sh (from the
# project's root): a Node.js service and a JVM, each twice, for SECONDS: one hot loop
# (tests/workloads/node/split.js, holdout.Split) and one that churns its compiled code
# (churn.js forcing GCs, holdout.Churn unloading classes), so that a profiler keeps naming
# JS and Java frames, new ones all the time. JAVA_HOME (default OpenJDK 17) and NODE
# (default node) pick them.
# start_runtime_workloads DIR SECONDS: compiles the Java classes into DIR/classes, starts
# the four (split.js writes its truth to DIR/node-truth, Split to DIR/java-truth) and sets
# RUNTIME_PIDS to their pids; 1 when the classes do not compile.
start_runtime_workloads() {
	JAVA_HOME=${JAVA_HOME:-/usr/lib/jvm/java-17-openjdk-amd64}
	NODE=${NODE:-node}
	rm -rf "$1/classes"
	"$JAVA_HOME/bin/javac" --release 11 -d "$1/classes" tests/workloads/java/holdout/*.java || return 1
	RUNTIME_PIDS=""
	"$NODE" tests/workloads/node/split.js "$2" "$1/node-truth" >/dev/null &
	RUNTIME_PIDS="$RUNTIME_PIDS $!"
	"$NODE" --max-semi-space-size=1 --expose-gc tests/workloads/node/churn.js "$2" >/dev/null &
	RUNTIME_PIDS="$RUNTIME_PIDS $!"
	"$JAVA_HOME/bin/java" -cp "$1/classes" holdout.Split "$2" "$1/java-truth" >/dev/null &
	RUNTIME_PIDS="$RUNTIME_PIDS $!"
	"$JAVA_HOME/bin/java" -cp "$1/classes" holdout.Churn "$2" >/dev/null &
	RUNTIME_PIDS="$RUNTIME_PIDS $!"
}
