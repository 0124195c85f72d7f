// What a priced request holds before its provider is called (docs/decisions.md, "No answer
// without its charge"): the cost of its input (estimated: text characters / 4) plus its largest
// possible answer — the first bound the request names (max_completion_tokens, max_tokens) or
// the route's default_output_tokens, times the number of choices. The wallet holds up to this
// (never more than is available); the completion's real usage is settled against it after.
import type { ProxyRoutePlan } from '../descriptors/proxy-route.ts';
import type { ModelPrice } from '../descriptors/token-prices.ts';
import type { Milli } from '../util/money.ts';
import { estimatedUsage } from './usage.ts';

export function holdFor(route: ProxyRoutePlan, price: ModelPrice, body: unknown): Milli {
  const h = route.hold!;
  let output = h.defaultOutputTokens;
  for (const bound of h.maxTokens) {
    const v = bound(body);
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) {
      output = Math.floor(v);
      break;
    }
  }
  const n = h.choices(body);
  const choices = typeof n === 'number' && Number.isFinite(n) && n >= 1 ? Math.floor(n) : 1;
  const input = estimatedUsage(body, 0).input;
  return route.pricer!.cost(price, { input, output: output * choices, cachedInput: 0, estimated: true });
}
