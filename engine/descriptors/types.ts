// TypeScript view of a vendor descriptor (schemas/vendor.schema.json is the source of truth).
export type TaskStatus = 'pending' | 'processing' | 'completed' | 'failed';
export const TASK_STATUSES: readonly TaskStatus[] = ['pending', 'processing', 'completed', 'failed'];

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
  };
  sandbox?: { prompt?: string };
  routes: RouteSpec[];
}

export type AuthSpec =
  | { scheme: 'bearer'; credential: string }
  | { scheme: 'header'; header: string; credential: string; prefix?: string }
  | { scheme: 'jwt_hs256'; access_key: string; secret_key: string; ttl_seconds?: number }
  | { scheme: 'none' };

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
  result?: Record<string, string>;
  pricing?: Record<string, unknown>;
  upstream?: {
    submit?: SubmitSpec;
    poll?: PollSpec;
    errors?: ErrorMapEntry[];
  };
  max_execution_ms?: number;
}

export interface RequestSpec {
  schema: Record<string, unknown>;
  rules?: { when: string; code: number; pointer?: string; message: string; reason?: string }[];
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
