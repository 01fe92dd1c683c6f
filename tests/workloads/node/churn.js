// tests/workloads/node/churn.js SECONDS: churns code for SECONDS: each round makes fresh
// functions (their own SharedFunctionInfo, script and code each: eval'd source, named
// genN, in a script named genN.js by its sourceURL), runs them hot enough to be compiled,
// drops them and makes garbage, so that the young generation is collected and objects move
// and freed addresses are taken by new ones: every round allocates the same objects in the
// same order, so a later round's may take an earlier one's addresses, all of them at once.
// Round N's function is called by callsK, K = N % 3: the young generation's two halves take
// turns, so a round's objects often lie where those of two rounds before lay, and a name
// kept from then would stand under another caller (one of two callers would not tell). Run with
// --max-semi-space-size=1 (and --expose-gc: a full GC every few rounds). Prints "ready" once
// it churns.
'use strict';

function makeGenerated(n) {
	const source = `(function gen${n}(x) {\n\tlet s = 0;\n\tfor (let i = 0; i < x; i++)\n\t\ts += (i * ${n}) % 7;\n\treturn s;\n})\n//# sourceURL=gen${n}.js`;
	return eval(source);
}

function makeClosure(k) {
	const captured = new Array(64).fill(k);
	return (x) => captured[x & 63] + x;
}

// Round N's generated function is called from callsK, K = N % 3: a frame named as one of the
// two rounds before or after it would stand under another.
function calls0(f) {
	let sink = 0;
	for (let i = 0; i < 200; i++)
		sink += f(200);
	return sink;
}

function calls1(f) {
	let sink = 0;
	for (let i = 0; i < 200; i++)
		sink += f(200);
	return sink;
}

function calls2(f) {
	let sink = 0;
	for (let i = 0; i < 200; i++)
		sink += f(200);
	return sink;
}

function churnRound(n) {
	let sink = 0;
	const f = makeGenerated(n);
	sink += [calls0, calls1, calls2][n % 3](f);
	for (let i = 0; i < 2000; i++)
		sink += makeClosure(i)(i);
	return sink;
}

const seconds = Number(process.argv[2] || 5);
const end = Date.now() + seconds * 1000;
let n = 0, sink = 0;
console.log('ready');
while (Date.now() < end) {
	sink += churnRound(n++);
	if (n % 50 == 0 && typeof global.gc === 'function')
		global.gc();
}
if (sink == 0.5)
	console.log(sink);
