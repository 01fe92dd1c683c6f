# scripts/redis.sh: sourced by the benchmark scripts that time a real server beside a
# profiler (bench-overhead.sh, bench-offcpu.sh, bench-redis.sh): a redis-server on a free
# loopback port (--save '' --appendonly no) in $TMP, and redis-benchmark's GET and SET
# requests a second against it. Needs die(), work_dir's TMP and BACKGROUND; REDIS_REQUESTS (100000) and
# REDIS_CLIENTS (50) are the benchmark's size.
REDIS_REQUESTS=${REDIS_REQUESTS:-100000}
REDIS_CLIENTS=${REDIS_CLIENTS:-50}
REDIS_PID=
REDIS_PORT=

# REDIS: "yes" when redis-server, redis-benchmark and redis-cli are installed; else empty, and a note
# in SKIPPED.
redis_check() {
	local tool
	REDIS=yes
	for tool in redis-server redis-benchmark redis-cli; do
		if ! command -v "$tool" >/dev/null; then
			REDIS=
			SKIPPED+=("redis: $tool is not installed (Debian: apt-get install redis-server redis-tools): its columns are left out")
		fi
	done
}

# Sets GET and SET: requests a second (empty when redis-benchmark failed, or without REDIS).
redis_rps() {
	local out
	GET='' SET=''
	[ -n "$REDIS" ] || return 0
	out=$(timeout 300 redis-benchmark -h 127.0.0.1 -p "$REDIS_PORT" -t get,set -c "$REDIS_CLIENTS" \
		-n "$REDIS_REQUESTS" -q 2>/dev/null | tr '\r' '\n')
	GET=$(awk '/^GET: .*requests per second/ { printf "%.0f\n", $2 }' <<< "$out")
	SET=$(awk '/^SET: .*requests per second/ { printf "%.0f\n", $2 }' <<< "$out")
}

# Starts redis-server on a free loopback port (REDIS_PID, REDIS_PORT); nothing without REDIS.
start_redis() {
	local port
	[ -n "$REDIS" ] || return 0
	for _ in 1 2 3 4 5; do
		port=$(( 20000 + RANDOM % 30000 ))
		if command -v ss >/dev/null && [ -n "$(ss -Hltn "sport = :$port" 2>/dev/null)" ]; then continue; fi
		redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --protected-mode yes \
			--daemonize no --dir "$TMP" --logfile "$TMP/redis.log" &
		REDIS_PID=$!
		BACKGROUND+=("$REDIS_PID")
		for _ in $(seq 50); do
			if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
				REDIS_PORT=$port
				return 0
			fi
			kill -0 "$REDIS_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -TERM "$REDIS_PID" 2>/dev/null
		wait "$REDIS_PID" 2>/dev/null
		forget_redis
	done
	die "redis-server did not start on a loopback port: $(tail -3 "$TMP/redis.log" 2>/dev/null)"
}

stop_redis() {
	[ -n "$REDIS_PID" ] || return 0
	timeout 10 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" shutdown nosave >/dev/null 2>&1 || kill -TERM "$REDIS_PID" 2>/dev/null
	wait "$REDIS_PID" 2>/dev/null
	forget_redis
}

# A redis-server gone: out of BACKGROUND, whose cleanup would kill its pid (by then maybe
# another process's).
forget_redis() {
	local kept=() pid
	for pid in "${BACKGROUND[@]}"; do
		[ "$pid" = "$REDIS_PID" ] || kept+=("$pid")
	done
	BACKGROUND=("${kept[@]}")
	REDIS_PID=
}

# The workload's line for a report's header: what redis-benchmark runs, against what.
redis_workload() {
	echo "\`redis-benchmark -t get,set -c $REDIS_CLIENTS -n $REDIS_REQUESTS -q\` against" \
		"$(redis-server --version | awk '{ print $1, $3 }') on 127.0.0.1:$REDIS_PORT (--save '' --appendonly no)"
}
