// Pipes are asynchronous: what the CLI wrote must reach the reader before the process exits.
export const flushed = () => Promise.all([process.stdout, process.stderr].map((s) => new Promise<void>((done) => s.write('', () => done()))));
