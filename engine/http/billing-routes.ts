// Wallet, ledger and limits over HTTP: the operator's admin routes (top up, adjust, read,
// threshold, limits) and the tenant's own read-only views (GET /v1/balance, /v1/ledger).
// Amounts are shown as credits with 2 decimals (rounded down, as in balance.low events) and
// exactly, as integer milli-credits.
import express, { type Request, type RequestHandler, type Router } from 'express';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { creditsToMilli, exactCredits, formatCredits, MoneyError } from '../util/money.ts';
import type { LedgerEntry } from '../billing/store.ts';
import type { BillingService, WalletView } from '../billing/service.ts';
import { GatewayError } from '../errors/gateway-error.ts';
import type { TenantLimitsInput } from '../limits/config.ts';
import type { LimitsService } from '../limits/service.ts';
import type { TenantService } from '../tenants/service.ts';
import { SCHEMA_BASE } from '../validation/ajv.ts';
import { compileRequestValidator } from '../validation/request-validator.ts';
import type { LedgerReports } from '../billing/reports.ts';
import { requireApiKey } from './auth.ts';
import { filteredLedger } from './ledger-export.ts';
import { pageLimit, query } from './query.ts';
import { authOf } from './context.ts';
import { requireScope } from '../tenants/auth-context.ts';

export interface BillingRouteDeps {
  billing: BillingService;
  limits: LimitsService;
  tenants: TenantService;
  ajv: Ajv2020;
  /** The ledger's filters and CSV export (GET /v1/ledger?type=&from=&to=&format=csv). */
  reports?: LedgerReports;
  /** The tenant views' authentication (default: the API key alone; the console adds its session). */
  auth?: RequestHandler;
}

const CREDITS = { type: 'string', pattern: '^-?[0-9]{1,12}(\\.[0-9]{1,3})?$' };
// Counts are bounded as the limits engine needs them (safe integers): an override it could not
// use would be stored, then fail every later request of the tenant.
const COUNT = { type: ['integer', 'null'], maximum: Number.MAX_SAFE_INTEGER };
const WINDOWS = {
  type: 'object', additionalProperties: false,
  properties: Object.fromEntries(['per_second', 'per_minute', 'per_day'].map((w) => [w, { ...COUNT, minimum: 1 }])),
};

export function walletView(w: WalletView): Record<string, unknown> {
  return {
    tenant_id: w.tenantId,
    currency: 'credits',
    available: formatCredits(w.available),
    balance: formatCredits(w.balance),
    held: formatCredits(w.held, 'up'),
    available_milli: w.available,
    balance_milli: w.balance,
    held_milli: w.held,
    state: w.state,
    low_balance_threshold: formatCredits(w.threshold),
  };
}

function entryView(e: LedgerEntry): Record<string, unknown> {
  return { id: e.id, seq: e.seq, at: e.at, kind: e.kind, amount: exactCredits(e.amount), amount_milli: e.amount, ref: e.ref, note: e.note };
}

function ledgerQuery(req: Request): { limit: number; cursor?: string } {
  return { limit: pageLimit(req, 50, 200), cursor: query(req, 'cursor') };
}

const milli = (credits: string, pointer: string): number => {
  try {
    return creditsToMilli(credits);
  } catch (err) {
    if (err instanceof MoneyError) throw new GatewayError('invalidParameterValue', err.message, { errors: [{ pointer, detail: err.message }] });
    throw err;
  }
};

/** Admin routes, mounted on the admin router (already behind the admin token). */
export function mountAdminBillingRoutes(router: Router, deps: BillingRouteDeps): void {
  const v = (name: string, schema: object) => compileRequestValidator(deps.ajv, `${SCHEMA_BASE}/admin/${name}.json`, schema);
  const topUp = v('topup', { type: 'object', additionalProperties: false, required: ['credits'], properties: { credits: CREDITS, ref: { type: 'string', minLength: 1, maxLength: 200 }, note: { type: 'string', maxLength: 500 } } });
  const adjust = v('adjust', { type: 'object', additionalProperties: false, required: ['credits', 'note'], properties: { credits: CREDITS, ref: { type: 'string', minLength: 1, maxLength: 200 }, note: { type: 'string', minLength: 1, maxLength: 500 } } });
  const threshold = v('threshold', { type: 'object', additionalProperties: false, required: ['credits'], properties: { credits: { anyOf: [CREDITS, { type: 'null' }] } } });
  const limits = v('limits', {
    type: 'object', additionalProperties: false,
    properties: {
      rate: { type: 'object', additionalProperties: false, properties: { key: WINDOWS, tenant: WINDOWS, model: WINDOWS } },
      concurrent_tasks: { ...COUNT, minimum: 0 },
      daily_spend_credits: { anyOf: [CREDITS, { type: 'null' }] },
    },
  });
  const tenantOf = async (req: Request) => (await deps.tenants.getTenant(String(req.params.id))).id;

  router.get('/tenants/:id/wallet', async (req, res) => {
    res.json(walletView(await deps.billing.getWallet(await tenantOf(req))));
  });
  router.get('/tenants/:id/wallet/ledger', async (req, res) => {
    const page = await deps.billing.listLedger(await tenantOf(req), ledgerQuery(req));
    res.json({ data: page.entries.map(entryView), next_cursor: page.next_cursor });
  });
  router.post('/tenants/:id/wallet/topups', async (req, res) => {
    const id = await tenantOf(req);
    const body = (await topUp(req.body ?? {})) as { credits: string; ref?: string; note?: string };
    const amount = milli(body.credits, '/credits');
    if (amount <= 0) throw new GatewayError('invalidParameterValue', 'A top-up must be positive.', { errors: [{ pointer: '/credits', detail: 'must be > 0' }] });
    // A caller-given ref makes the top-up idempotent (e.g. a payment id).
    const entry = await deps.billing.topUp(id, amount, body.ref ?? `topup_${Date.now()}_${Math.random().toString(36).slice(2)}`, body.note ?? '');
    res.status(201).json({ entry: entryView(entry), wallet: walletView(await deps.billing.getWallet(id)) });
  });
  router.post('/tenants/:id/wallet/adjustments', async (req, res) => {
    const id = await tenantOf(req);
    const body = (await adjust(req.body ?? {})) as { credits: string; ref?: string; note: string };
    const amount = milli(body.credits, '/credits');
    if (amount === 0) throw new GatewayError('invalidParameterValue', 'An adjustment must not be zero.', { errors: [{ pointer: '/credits', detail: 'must not be 0' }] });
    const entry = await deps.billing.adjust(id, amount, body.ref ?? `adj_${Date.now()}_${Math.random().toString(36).slice(2)}`, body.note);
    res.status(201).json({ entry: entryView(entry), wallet: walletView(await deps.billing.getWallet(id)) });
  });
  router.put('/tenants/:id/wallet/threshold', async (req, res) => {
    const id = await tenantOf(req);
    const body = (await threshold(req.body ?? {})) as { credits: string | null };
    const value = body.credits === null ? null : milli(body.credits, '/credits');
    if (value !== null && value < 0) throw new GatewayError('invalidParameterValue', 'The threshold must not be negative.', { errors: [{ pointer: '/credits', detail: 'must be >= 0' }] });
    res.json(walletView(await deps.billing.setThreshold(id, value)));
  });
  router.get('/tenants/:id/limits', async (req, res) => {
    const id = await tenantOf(req);
    res.json(await limitsView(deps, id));
  });
  router.put('/tenants/:id/limits', async (req, res) => {
    const id = await tenantOf(req);
    const body = (await limits(req.body ?? {})) as TenantLimitsInput;
    if (typeof body.daily_spend_credits === 'string') milli(body.daily_spend_credits, '/daily_spend_credits');
    await deps.tenants.setLimits(id, Object.keys(body).length ? body : undefined);
    await deps.limits.invalidate(id);
    res.json(await limitsView(deps, id));
  });
}

async function limitsView(deps: BillingRouteDeps, tenantId: string): Promise<Record<string, unknown>> {
  const eff = await deps.limits.effective(tenantId, undefined);
  return {
    tenant_id: tenantId,
    rate: { key: eff.rate.key, tenant: eff.rate.tenant, model: eff.rate.model },
    concurrent_tasks: eff.concurrentTasks,
    daily_spend_credits: eff.dailySpend === null ? null : formatCredits(eff.dailySpend),
    overrides: (await deps.tenants.getTenant(tenantId)).limits ?? null,
  };
}

/** The tenant's own views, with its API key (scope console:read). */
export function tenantBillingRouter(deps: BillingRouteDeps): Router {
  const router = express.Router();
  const auth = deps.auth ?? requireApiKey(deps.tenants);
  router.get('/v1/balance', auth, async (_req, res) => {
    const a = authOf(res);
    requireScope(a, 'console', 'read');
    res.json(walletView(await deps.billing.getWallet(a.tenantId)));
  });
  router.get('/v1/ledger', auth, async (req, res) => {
    const a = authOf(res);
    requireScope(a, 'console', 'read');
    if (deps.reports && (await filteredLedger(req, res, a.tenantId, deps.reports, entryView))) return;
    const page = await deps.billing.listLedger(a.tenantId, ledgerQuery(req));
    res.json({ data: page.entries.map(entryView), next_cursor: page.next_cursor });
  });
  return router;
}
