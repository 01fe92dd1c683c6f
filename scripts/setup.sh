#!/bin/sh
# scripts/setup.sh: a fresh Debian machine to a first profile: install the build packages
# that are missing (not the test tools: `make test` installs those), build with one job
# per CPU, and sample every CPU at 49 Hz for 10 seconds.
set -e
cd "$(dirname "$0")/.."
scripts/install-deps.sh
make -j"$(nproc)"
if [ "$(id -u)" = 0 ]; then
	./profile -f 49 10
else
	sudo ./profile -f 49 10
fi
