/**
 * execArgv for the Piscina pools. Piscina loads a task file with require() first, and require()
 * of an ES module (all our .ts files) can abort the whole process when a pool is destroyed while
 * a worker is still loading it: node 24 CHECKs in CreateRequiredModuleFacade (seen once in the
 * test suite, as a gateway closed right after starting). With require(esm) off in the workers,
 * require() throws ERR_REQUIRE_ESM at once and Piscina falls back to import(), which does not
 * take that path.
 */
export const workerExecArgv = (): string[] => [...process.execArgv, '--no-experimental-require-module'];
