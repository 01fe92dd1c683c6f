// tests/workloads/node/inline.js SECONDS: outer calls middle, which Turbofan inlines into it,
// which calls leaf, kept out of optimized code: the optimized outer's frame holds middle's
// call. Run with --allow-natives-syntax (V8's own calls below make the optimization sure,
// not a matter of warm-up); prints "ready" once outer is optimized. A worker thread (an
// isolate of its own) runs workerHot a fifth of the time beside it.
'use strict';
const { Worker, isMainThread } = require('worker_threads');

function workerHot(n) {
	let x = 0;
	for (let i = 0; i < n; i++)
		x += Math.sqrt(i + (x % 5));
	return x;
}

if (!isMainThread) {
	const end = Date.now() + Number(process.argv[2] || 5) * 1000, pause = new Int32Array(new SharedArrayBuffer(4));
	let sink = 0;
	while (Date.now() < end) {
		const start = Date.now();
		while (Date.now() - start < 10)
			sink += workerHot(1000);
		Atomics.wait(pause, 0, 0, 40);
	}
	return;
}

function leaf(x) {
	let y = x;
	for (let k = 0; k < 50; k++)
		y = (y * 31 + k) % 1000003;
	return y;
}

function middle(x) {
	return leaf(x) + 1; // LEAF_CALL
}

function outer(n) {
	let s = 0;
	for (let i = 0; i < n; i++)
		s += middle(i); // MIDDLE_CALL
	return s;
}

new Worker(__filename, { argv: process.argv.slice(2) });
%NeverOptimizeFunction(leaf);
%PrepareFunctionForOptimization(outer);
outer(100);
outer(100);
%OptimizeFunctionOnNextCall(outer);
outer(100);
const end = Date.now() + Number(process.argv[2] || 5) * 1000;
let sink = 0;
console.log('ready');
while (Date.now() < end)
	sink += outer(10000);
console.log(sink > 0 ? 'done' : 'none');
