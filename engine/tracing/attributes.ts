// The OpenTelemetry semantic-convention attribute names the gateway's spans use (stable ones,
// https://opentelemetry.io/docs/specs/semconv/). Written here rather than imported from
// @opentelemetry/semantic-conventions: that package's entry point builds every convention's
// constant, deprecated ones included (about 0.9 MB of heap held for the life of the process,
// for fifteen strings). test/tracing/attributes.test.ts holds each name to the package's.
export const ATTR_CLIENT_ADDRESS = 'client.address';
export const ATTR_DB_OPERATION_NAME = 'db.operation.name';
export const ATTR_ERROR_TYPE = 'error.type';
export const ATTR_HTTP_REQUEST_METHOD = 'http.request.method';
export const ATTR_HTTP_RESPONSE_STATUS_CODE = 'http.response.status_code';
export const ATTR_HTTP_ROUTE = 'http.route';
export const ATTR_NETWORK_PROTOCOL_VERSION = 'network.protocol.version';
export const ATTR_SERVER_ADDRESS = 'server.address';
export const ATTR_SERVER_PORT = 'server.port';
export const ATTR_SERVICE_NAME = 'service.name';
export const ATTR_SERVICE_VERSION = 'service.version';
export const ATTR_URL_FULL = 'url.full';
export const ATTR_URL_PATH = 'url.path';
export const ATTR_URL_SCHEME = 'url.scheme';
export const ATTR_USER_AGENT_ORIGINAL = 'user_agent.original';
