'use strict';
// The file every Piscina pool of ours loads (see esm-worker.ts). Piscina require()s its task
// file first, and require() of an ES module (all our .ts files) aborted the whole process once,
// when a pool was destroyed while a worker was still loading it (node 24 CHECK in
// CreateRequiredModuleFacade). This file is CommonJS, so require() never takes that path; it
// import()s the real task module, named in workerData, on the first task.
const { workerData } = require('node:worker_threads');

let run;
const load = () => (run ??= import(workerData.module).then((m) => m.default));
module.exports = (task) => load().then((fn) => fn(task));
// The task named 'loaded' (pool.run(null, { name: 'loaded' })) answers once this thread has
// imported its task module: a pool waits for it before timing anything against its threads.
module.exports.loaded = () => load().then(() => true);
