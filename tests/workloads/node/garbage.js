// tests/workloads/node/garbage.js SECONDS: makes young garbage for SECONDS, as a service
// that allocates per request does (a scavenge every few milliseconds), and prints the
// rounds it did per second: its throughput, which scripts/bench-node-cost.sh compares with
// and without the uprobes that count V8's GCs.
'use strict';

const seconds = Number(process.argv[2] || 8);
const end = Date.now() + seconds * 1000;
let rounds = 0, kept = [];
console.log('ready');
while (Date.now() < end) {
	for (let i = 0; i < 1000; i++)
		kept.push({a: i, b: [i, i + 1]});
	if (kept.length > 20000)
		kept = [];
	rounds++;
}
console.log((rounds / seconds).toFixed(0));
