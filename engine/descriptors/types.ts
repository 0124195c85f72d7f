// TypeScript view of a vendor descriptor (schemas/vendor.schema.json is the source of truth).
import type { TaskStatus } from '../vocabulary/task-status.ts';
import type { MediaRule } from '../media/checks.ts';
import type { AuthSpec } from '../upstream/auth-schemes.ts';
import type { Normaliser, RequestRuleSpec } from '../validation/request-validator.ts';

export interface VendorDescriptor {
  format: 1;
  vendor: string;
  title?: string;
  description?: string;
  upstream: {
    auth: AuthSpec;
    timeout_ms?: number;
    headers?: Record<string, string>;
    errors?: ErrorMapEntry[];
    /** Where the provider documents an idempotency header for submissions: its name (the key is the task id). */
    submit_idempotency_header?: string;
  };
  sandbox?: {
    prompt?: string;
    /** Upstream validation the simulator plays: a submit body matching `when` is refused with HTTP 400. */
    reject?: { when: string; message: string }[];
  };
  routes: RouteSpec[];
}

export interface ErrorMapEntry {
  when: string;
  code: number;
  detail?: string;
  reason?: string;
}

export interface RouteSpec {
  id: string;
  kind: 'async' | 'status' | 'sync' | 'stream';
  summary?: string;
  method: 'GET' | 'POST';
  path: string;
  aliases?: string[];
  status?: number;
  model_name?: string;
  tasks_of?: string[];
  request?: RequestSpec;
  result?: Record<string, ResultFieldSpec>;
  /** Hosts whose result-file URLs need the vendor's credentials (the result store sends the route's upstream auth only there). */
  result_download?: { auth_hosts: string[] };
  pricing?: Record<string, unknown>;
  upstream?: {
    submit?: SubmitSpec;
    poll?: PollSpec;
    /** Required on async routes (the meta-schema says so): a request, `local` or `none`. */
    cancel?: CancelSpec | CancelPolicy;
    /** The result fetched by a second request once the status maps onto completed. */
    result?: ResultFetchSpec;
    callback?: CallbackSpec;
    errors?: ErrorMapEntry[];
  };
  proxy?: ProxySpec;
  max_execution_ms?: number;
}

/** kind sync|stream: a request passed to the upstream and answered at once (or as SSE). */
export interface ProxySpec {
  path: string;
  model?: string;
  stream?: { flag: string; usage_option?: string };
  usage?: { input: string; output: string; cached_input?: string };
  token_prices?: { models: Record<string, TokenPriceSpec>; default?: TokenPriceSpec };
  hold?: { max_tokens?: string[]; choices?: string; default_output_tokens?: number };
  drop_inline_media?: { items: string; url: string; max_bytes: number };
  error_object?: string;
  pass_headers?: string[];
  list?: { items: string; id: string; include?: string[]; exclude?: string[]; priced_by?: string };
  cache_ms?: number;
}

/** USD per 1M tokens, decimal strings. */
export interface TokenPriceSpec {
  input: string;
  output: string;
  cached_input?: string;
}

export interface RequestSpec {
  schema: Record<string, unknown>;
  rules?: RequestRuleSpec[];
  /** Named string normalisers applied before validation, by JSON pointer (`/ratio: lowercase`). */
  normalise?: Record<string, Normaliser>;
  /** Media checks (engine/media/checks.ts) on the values at these pointers. */
  media?: MediaRule[];
  validation_errors?: 'problem' | 'task_info';
  max_body_bytes?: number;
  examples?: Record<string, unknown>[];
}

export interface SubmitSpec {
  method?: 'POST' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body: string;
  task_id: string;
  accept?: string;
  error_message?: string;
  /** URLs the submit answer names (fal's status_url, response_url), by name: used as {url:<name>} in later paths. */
  urls?: Record<string, string>;
}

/** A result field: an expression, or an optional one (a missing value is left out, not a 3003). */
export type ResultFieldSpec = string | { from: string; optional?: boolean };

/** `local`: cancelled on the gateway's side only; `none`: a client's cancel is refused (2006). */
export type CancelPolicy = 'local' | 'none';

/** upstream.result: the second request that fetches a completed task's output. */
export interface ResultFetchSpec {
  method?: 'GET' | 'POST';
  path: string;
}

export interface PollSpec {
  method?: 'GET' | 'POST';
  path: string;
  interval_ms?: number;
  status: string;
  status_map: Record<string, TaskStatus>;
  error_message?: string;
  error_code?: string;
}

/** How to stop an upstream task (the safety net's 4008); same base URL and auth as the poll. */
export interface CancelSpec {
  method?: 'POST' | 'DELETE' | 'PUT';
  /** {upstream_task_id} is replaced as in the poll path. */
  path: string;
  /** JSONata on the validated client body, $upstream_task_id bound. */
  body?: string;
}

/**
 * A provider's completion callback: where the submit body takes the callback URL, and where the
 * pushed body holds the status (read with the poll's status_map, result and error mappings).
 */
export interface CallbackSpec {
  /** Dotted path in the submit body, e.g. parameters.callback_url (or url_query). */
  url_field?: string;
  /** Query parameter of the submit request that takes the callback URL (fal's fal_webhook). */
  url_query?: string;
  /** Expression on the pushed body. */
  status: string;
}
