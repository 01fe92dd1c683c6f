// tests/workloads/node/blocked.js FIFO: a JS function blocks in fs.readSync on a pipe (the
// FIFO, opened for reading and writing so that the open does not wait for a writer), one
// byte at a time, until a "q" comes. It prints "ready" just before it first blocks.
'use strict';
const fs = require('fs');

function waitForByte(fd, buffer) {
	fs.readSync(fd, buffer, 0, 1, null);
	return buffer[0];
}

function blockedReader(fd) {
	const buffer = Buffer.alloc(1);
	while (waitForByte(fd, buffer) != 0x71)
		;
}

const fd = fs.openSync(process.argv[2], 'r+');
console.log('ready');
blockedReader(fd);
