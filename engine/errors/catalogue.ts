// The one error catalogue: every service code the gateway can answer with, by name, with its
// HTTP status and its title. A throw site names its entry (`new GatewayError('resourceNotFound',
// …)`), never a number: the names are typed, so a new error code is one line here. The docs
// and the OpenAPI document are held to this table by test/errors/catalogue.test.ts
// (docs/errors.md lists every entry; docs/operating.md the codes the gateway adds to the spec).
//
// Three kinds of entry:
//  - the spec's table (1000–4008), as the spec shows them;
//  - codes the gateway adds where the spec has none (`added`), each explained below;
//  - HTTP-only pairs (`httpOnly`): where the spec shows an HTTP status but no service code ("not
//    shown"), the gateway answers with the category's base code and the precise HTTP status, so
//    every throw site uses the same pair (docs/decisions.md, "Decisions where the spec is silent").

export interface CatalogueEntry {
  readonly code: number;
  readonly status: number;
  readonly title: string;
  /** A code the gateway adds to the spec's table. */
  readonly added?: true;
  /** A status the spec shows without a code: answered with its category's base code. */
  readonly httpOnly?: true;
}

export const CATALOGUE = {
  userError: { code: 1000, status: 401, title: 'User Error' },
  authenticationFailed: { code: 1001, status: 401, title: 'Authentication Failed' },
  permissionDenied: { code: 1002, status: 403, title: 'Permission Denied' },
  insufficientBalance: { code: 1003, status: 402, title: 'Insufficient Balance' },
  rateLimitExceeded: { code: 1004, status: 429, title: 'Rate Limit Exceeded' },
  quotaExceeded: { code: 1005, status: 429, title: 'Quota Exceeded' },
  // Credential guessing slowed (engine/tenants/credential-guard.ts): too many failed
  // authentications from one client address. Its own code, not 1004: no rate of the caller's was
  // exceeded, and a client must not read it as "slow down your traffic" (docs/decisions.md).
  tooManyFailedAuthentications: { code: 1006, status: 429, title: 'Too Many Failed Authentications', added: true },
  inputValidationFailed: { code: 2000, status: 400, title: 'Input Validation Failed' },
  parameterValidationFailed: { code: 2001, status: 400, title: 'Parameter Validation Failed' },
  requiredParameterMissing: { code: 2002, status: 400, title: 'Required Parameter Missing' },
  invalidParameterValue: { code: 2003, status: 400, title: 'Invalid Parameter Value' },
  parameterCombinationConflict: { code: 2004, status: 400, title: 'Parameter Combination Conflict' },
  resourceNotFound: { code: 2005, status: 404, title: 'Resource Not Found' },
  // Not in the spec: a client's cancel of a task whose route declares `upstream.cancel: none`
  // (the provider cannot stop it and the operator chose to let it run). A 2xxx: the request
  // asks for something this task does not allow; 409 as for any cancel that cannot act.
  taskNotCancellable: { code: 2006, status: 409, title: 'Task Not Cancellable', added: true },
  fileValidationFailed: { code: 2100, status: 400, title: 'File Validation Failed' },
  fileSizeExceeded: { code: 2101, status: 400, title: 'File Size Exceeded' },
  unsupportedFileFormat: { code: 2102, status: 400, title: 'Unsupported File Format' },
  fileContentError: { code: 2103, status: 400, title: 'File Content Error' },
  upstreamServiceError: { code: 3000, status: 500, title: 'Upstream Service Error' },
  upstreamUnavailable: { code: 3001, status: 500, title: 'Upstream Service Unavailable' },
  upstreamRequestFailed: { code: 3002, status: 500, title: 'Upstream Service Request Failed' },
  upstreamResponseError: { code: 3003, status: 500, title: 'Upstream Service Response Error' },
  upstreamTimeout: { code: 3004, status: 500, title: 'Upstream Service Timeout' },
  upstreamExecutionFailed: { code: 3005, status: 500, title: 'Upstream Service Execution Failed' },
  systemError: { code: 4000, status: 500, title: 'System Error' },
  // The spec's table shows 500 for every 4xxx code. These two say "try again shortly" and are
  // answered 503, the status clients, SDKs and load balancers treat as retryable (docs/decisions.md,
  // "Decisions where the spec is silent").
  temporarilyUnavailable: { code: 4001, status: 503, title: 'Service Temporarily Unavailable' },
  internalOperationFailed: { code: 4002, status: 500, title: 'Internal Operation Failed' },
  dependencyUnavailable: { code: 4003, status: 503, title: 'Internal Dependency Unavailable' },
  dependencyFailed: { code: 4004, status: 500, title: 'Internal Dependency Failed' },
  configurationError: { code: 4005, status: 500, title: 'Configuration Error' },
  taskExecutionTimeout: { code: 4008, status: 500, title: 'Task Execution Timeout' },
  // The spec has no code for a task its client cancelled; 4009 is the next after the 4008 safety
  // net (the other way a task is cut short). It only ever appears in task_info.error (the cancel
  // request itself answers 200), so its status is the family's and is never sent.
  taskCancelled: { code: 4009, status: 500, title: 'Task Cancelled', added: true },
  // A submission whose process died between sending the task and recording the provider's answer,
  // to a provider that cannot dedupe a second one: failed rather than sent twice. Like 4009 it
  // only ever appears in task_info.error.
  submissionOutcomeUnknown: { code: 4010, status: 500, title: 'Submission Outcome Unknown', added: true },
  // A descriptor's own expression (JSONata: status, result, task id, body mapping) failed on an
  // answer: a defect of the descriptor, not the provider's fault, so not a 3xxx code. Logged with
  // its cause and counted (gateway_descriptor_defects_total). Like 4009 it appears in
  // task_info.error.
  descriptorExpressionFailed: { code: 4011, status: 500, title: 'Descriptor Expression Failed', added: true },
  // The provider finished the task but its result files could not be copied into the result
  // store (docs/results.md): refused by the download rules (an address the SSRF rules refuse, too
  // large, a wrong Content-Type, a link that is gone) or still failing at the task's deadline.
  // Task-level only (task_info.error), like 4008; the task is not billed.
  resultCopyFailed: { code: 4012, status: 500, title: 'Result Copy Failed', added: true },

  methodNotAllowed: { code: 2000, status: 405, title: 'Method Not Allowed', httpOnly: true },
  conflict: { code: 2000, status: 409, title: 'Conflict', httpOnly: true },
  locked: { code: 2000, status: 423, title: 'Resource Locked', httpOnly: true },
  unavailableForLegalReasons: { code: 1000, status: 451, title: 'Unavailable For Legal Reasons', httpOnly: true },
  payloadTooLarge: { code: 2101, status: 413, title: 'Request Body Too Large', httpOnly: true },
  unsupportedMediaType: { code: 2001, status: 415, title: 'Unsupported Media Type', httpOnly: true },
  // Refused by the HTTP parser before any route sees the request (engine/http/client-error.ts).
  badRequest: { code: 2000, status: 400, title: 'Bad Request', httpOnly: true },
  requestTimeout: { code: 2000, status: 408, title: 'Request Timeout', httpOnly: true },
  expectationFailed: { code: 2000, status: 417, title: 'Expectation Failed', httpOnly: true },
  headersTooLarge: { code: 2000, status: 431, title: 'Request Header Fields Too Large', httpOnly: true },
  // A result file whose retention is over, or that was deleted (engine/results/service.ts).
  gone: { code: 2005, status: 410, title: 'Gone', httpOnly: true },
  rangeNotSatisfiable: { code: 2000, status: 416, title: 'Range Not Satisfiable', httpOnly: true },
} as const satisfies Record<string, CatalogueEntry>;

export type ErrorName = keyof typeof CATALOGUE;
/** A service code of the catalogue (a spec code or one the gateway adds). */
export type ErrorCode = (typeof CATALOGUE)[ErrorName]['code'];

const BY_CODE = new Map<number, ErrorName>();
for (const [name, entry] of Object.entries(CATALOGUE) as [ErrorName, CatalogueEntry][]) if (!entry.httpOnly) BY_CODE.set(entry.code, name);

/**
 * The entry of a code that arrives as data (a descriptor's `errors:` rule, a field error's code
 * in a validation answer): the code's own entry, else its category's x000 base code, as the spec
 * prescribes for unknown codes.
 */
export function errorNamed(code: number): ErrorName {
  return BY_CODE.get(code) ?? BY_CODE.get(Math.floor(code / 1000) * 1000) ?? 'systemError';
}
