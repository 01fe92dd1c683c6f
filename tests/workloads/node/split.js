// tests/workloads/node/split.js SECONDS TRUTH_FILE: two functions share the main thread for
// SECONDS; each measures the CPU time it takes (process.cpuUsage around each call), and the
// split is written to TRUTH_FILE at the end: "hotA_seconds hotB_seconds".
'use strict';
const fs = require('fs');

function hotA(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x += Math.sqrt(i + (x % 7));
	return x;
}

function hotB(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x += Math.sin(i) * 0.5;
	return x;
}

function timed(f, n) {
	const before = process.cpuUsage();
	const result = f(n);
	const spent = process.cpuUsage(before);
	return [result, (spent.user + spent.system) / 1e6];
}

const seconds = Number(process.argv[2] || 5), truth = process.argv[3];
const end = Date.now() + seconds * 1000;
let a = 0, b = 0, sink = 0;
console.log('ready');
while (Date.now() < end) {
	const [x, ta] = timed(hotA, 300000);
	const [y, tb] = timed(hotB, 100000);
	sink += x + y;
	a += ta;
	b += tb;
}
fs.writeFileSync(truth, `${a} ${b} ${sink > 0}\n`);
