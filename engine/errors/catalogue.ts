// The one error catalogue: every service code the gateway can answer with, its default HTTP
// status and its title. Every throw site names a code from here; the docs are checked against
// this table by test/errors/catalogue.test.ts.

export interface CatalogueEntry {
  readonly status: number;
  readonly title: string;
}

export const CATALOGUE = {
  1000: { status: 401, title: 'User Error' },
  1001: { status: 401, title: 'Authentication Failed' },
  1002: { status: 403, title: 'Permission Denied' },
  1003: { status: 402, title: 'Insufficient Balance' },
  1004: { status: 429, title: 'Rate Limit Exceeded' },
  1005: { status: 429, title: 'Quota Exceeded' },
  // Credential guessing slowed (engine/tenants/credential-guard.ts): too many failed
  // authentications from one client address. Its own code, not 1004: no rate of the caller's was
  // exceeded, and a client must not read it as "slow down your traffic" (docs/decisions.md).
  1006: { status: 429, title: 'Too Many Failed Authentications' },
  2000: { status: 400, title: 'Input Validation Failed' },
  2001: { status: 400, title: 'Parameter Validation Failed' },
  2002: { status: 400, title: 'Required Parameter Missing' },
  2003: { status: 400, title: 'Invalid Parameter Value' },
  2004: { status: 400, title: 'Parameter Combination Conflict' },
  2005: { status: 404, title: 'Resource Not Found' },
  // Not in the spec: a client's cancel of a task whose route declares `upstream.cancel: none`
  // (the provider cannot stop it and the operator chose to let it run). A 2xxx: the request
  // asks for something this task does not allow; 409 as for any cancel that cannot act.
  2006: { status: 409, title: 'Task Not Cancellable' },
  2100: { status: 400, title: 'File Validation Failed' },
  2101: { status: 400, title: 'File Size Exceeded' },
  2102: { status: 400, title: 'Unsupported File Format' },
  2103: { status: 400, title: 'File Content Error' },
  3000: { status: 500, title: 'Upstream Service Error' },
  3001: { status: 500, title: 'Upstream Service Unavailable' },
  3002: { status: 500, title: 'Upstream Service Request Failed' },
  3003: { status: 500, title: 'Upstream Service Response Error' },
  3004: { status: 500, title: 'Upstream Service Timeout' },
  3005: { status: 500, title: 'Upstream Service Execution Failed' },
  4000: { status: 500, title: 'System Error' },
  // The spec's table shows 500 for every 4xxx code. These two say "try again shortly" and are
  // answered 503, the status clients, SDKs and load balancers treat as retryable (docs/decisions.md,
  // "Decisions where the spec is silent").
  4001: { status: 503, title: 'Service Temporarily Unavailable' },
  4002: { status: 500, title: 'Internal Operation Failed' },
  4003: { status: 503, title: 'Internal Dependency Unavailable' },
  4004: { status: 500, title: 'Internal Dependency Failed' },
  4005: { status: 500, title: 'Configuration Error' },
  4008: { status: 500, title: 'Task Execution Timeout' },
  // The spec has no code for a task its client cancelled; 4009 is the next after the 4008 safety
  // net (the other way a task is cut short). It only ever appears in task_info.error (the cancel
  // request itself answers 200), so its status is the family's and is never sent.
  4009: { status: 500, title: 'Task Cancelled' },
  // A submission whose process died between sending the task and recording the provider's answer,
  // to a provider that cannot dedupe a second one: failed rather than sent twice. Like 4009 it
  // only ever appears in task_info.error.
  4010: { status: 500, title: 'Submission Outcome Unknown' },
  // The provider finished the task but its result files could not be copied into the result
  // store (docs/results.md): refused by the download rules (an address the SSRF rules refuse, too
  // large, a wrong Content-Type, a link that is gone) or still failing at the task's deadline.
  // Task-level only (task_info.error), like 4008; the task is not billed.
  4012: { status: 500, title: 'Result Copy Failed' },
} as const satisfies Record<number, CatalogueEntry>;

export type ErrorCode = keyof typeof CATALOGUE;

// Where the spec shows an HTTP status but no service code ("not shown"), the gateway answers
// with the category's base code and the precise HTTP status. Listed here so that every throw
// site uses the same pair, and the decision table in docs/decisions.md is checked against it.
export const HTTP_ONLY = {
  notFound: { code: 2005, status: 404, title: 'Resource Not Found' },
  methodNotAllowed: { code: 2000, status: 405, title: 'Method Not Allowed' },
  conflict: { code: 2000, status: 409, title: 'Conflict' },
  locked: { code: 2000, status: 423, title: 'Resource Locked' },
  legal: { code: 1000, status: 451, title: 'Unavailable For Legal Reasons' },
  payloadTooLarge: { code: 2101, status: 413, title: 'Request Body Too Large' },
  unsupportedMediaType: { code: 2001, status: 415, title: 'Unsupported Media Type' },
  // Refused by the HTTP parser before any route sees the request (engine/http/client-error.ts).
  badRequest: { code: 2000, status: 400, title: 'Bad Request' },
  requestTimeout: { code: 2000, status: 408, title: 'Request Timeout' },
  expectationFailed: { code: 2000, status: 417, title: 'Expectation Failed' },
  headersTooLarge: { code: 2000, status: 431, title: 'Request Header Fields Too Large' },
  // A result file whose retention is over, or that was deleted (engine/results/service.ts).
  gone: { code: 2005, status: 410, title: 'Gone' },
  rangeNotSatisfiable: { code: 2000, status: 416, title: 'Range Not Satisfiable' },
} as const satisfies Record<string, { code: ErrorCode; status: number; title: string }>;

export function entryFor(code: number): CatalogueEntry {
  const entry = (CATALOGUE as Record<number, CatalogueEntry>)[code];
  if (entry) return entry;
  // Unknown codes fall back to their category's x000 base code, as the spec prescribes.
  const base = Math.floor(code / 1000) * 1000;
  return (CATALOGUE as Record<number, CatalogueEntry>)[base] ?? CATALOGUE[4000];
}

export function isErrorCode(code: number): code is ErrorCode {
  return Object.prototype.hasOwnProperty.call(CATALOGUE, code);
}
