// What a route compiler gets from the vendor being compiled: its upstream client, its error
// map, and helpers that compile expressions and report positioned problems.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { Dispatcher } from 'undici';
import type { GatewayConfig } from '../config/types.ts';
import type { UpstreamClient } from '../upstream/client.ts';
import type { UpstreamPool } from '../upstream/pool.ts';
import type { CompiledErrorRule } from '../upstream/failure.ts';
import type { Clock } from '../util/clock.ts';
import type { CompiledExpr } from '../util/expr.ts';
import type { ErrorMapEntry, RouteSpec } from './types.ts';

export interface CompileContext {
  ajv: Ajv2020;
  config: GatewayConfig;
  clock: Clock;
  dispatcher: Dispatcher;
  /**
   * Base URL of each vendor's upstream (of its pool member `member.index`, whose configured URL
   * is `member.base_url`): config, or the sandbox simulator when it is on.
   */
  baseUrlFor(vendor: string, member?: { index: number; base_url?: string }): string | undefined;
}

export interface VendorCompileContext {
  readonly ctx: CompileContext;
  readonly vendor: string;
  readonly client: UpstreamClient;
  readonly pool: UpstreamPool;
  /** upstream.submit_idempotency_header of the descriptor. */
  readonly submitIdempotencyHeader?: string;
  readonly vendorRules: readonly CompiledErrorRule[];
  /** The descriptor's other routes (for cross-references such as tasks_of). */
  readonly siblings: readonly RouteSpec[];
  /** config timing.scale: multiplies every duration of the descriptor. */
  readonly scale: number;
  /** Compile an expression found at `pointer`; a failure is reported there and yields `null`. */
  expr(pointer: string, source: string | undefined): CompiledExpr | undefined;
  errorRules(pointer: string, entries: readonly ErrorMapEntry[] | undefined): CompiledErrorRule[];
  /** Report a problem at a JSON pointer of the descriptor. */
  at(pointer: string, message: string): void;
}
