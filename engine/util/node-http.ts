// node:http's functions, read from the builtin module rather than imported. An ESM `import … from
// 'node:http'` builds the module's namespace, and node:http's lazy exports (WebSocket,
// CloseEvent, MessageEvent) then load Node's own copy of undici: about 2.4 MB of heap held for
// the life of the process, which no part of the gateway uses (docs/performance.md, Memory).
// Types may still be imported from 'node:http' (`import type` leaves nothing at run time).
export const { createServer, STATUS_CODES } = process.getBuiltinModule('node:http');
