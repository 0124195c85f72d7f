// Billing by tokens: a descriptor's per-model prices (USD per 1M tokens, decimal strings)
// compiled once into exact integer arithmetic. The cost of one completion is
//   (input - cached) x input_price + cached x cached_input_price + output x output_price
// in USD, x credits_per_usd, rounded ONCE, half up, to the milli-credit (engine/util/money.ts).
import { divRoundHalfUp, parseDecimal, type Milli } from '../util/money.ts';
import type { TokenPriceSpec } from './types.ts';

/** Token counts of one completion, as the upstream reported them (or as estimated). */
export interface TokenUsage {
  input: number;
  output: number;
  /** Input tokens the upstream served from its cache (part of `input`). */
  cachedInput: number;
  /** True when the upstream reported no usage and the gateway estimated it. */
  estimated: boolean;
}

export interface ModelPrice {
  readonly input: string;
  readonly output: string;
  readonly cachedInput: string;
  /** Per-token prices x credits_per_usd, in units of 10^-SCALE USD-per-1M. */
  readonly n: { readonly input: bigint; readonly output: bigint; readonly cachedInput: bigint };
}

export interface TokenPricer {
  /** The price that applies to `model`, or undefined when the model is not priced. */
  priceOf(model: string): ModelPrice | undefined;
  /** True when `model` has its own price (not only the default). */
  lists(model: string): boolean;
  cost(price: ModelPrice, usage: TokenUsage): Milli;
}

const SCALE = 12;
// milli = tokens x usdPerMillion x creditsPerUsd x 1000 / 1e6, with usdPerMillion = n / 10^SCALE
const DIVISOR = 10n ** BigInt(SCALE) * 1000n;

function scaled(text: string, creditsPerUsd: number): bigint {
  const d = parseDecimal(text);
  return d.units * 10n ** BigInt(SCALE - d.scale) * BigInt(creditsPerUsd);
}

function compilePrice(spec: TokenPriceSpec, creditsPerUsd: number): ModelPrice {
  const cached = spec.cached_input ?? spec.input;
  return Object.freeze({
    input: spec.input,
    output: spec.output,
    cachedInput: cached,
    n: Object.freeze({ input: scaled(spec.input, creditsPerUsd), output: scaled(spec.output, creditsPerUsd), cachedInput: scaled(cached, creditsPerUsd) }),
  });
}

export function compileTokenPrices(spec: { models: Record<string, TokenPriceSpec>; default?: TokenPriceSpec }, creditsPerUsd: number): TokenPricer {
  const exact = new Map<string, ModelPrice>();
  const prefixes: [string, ModelPrice][] = [];
  for (const [model, p] of Object.entries(spec.models)) {
    if (model.endsWith('*')) prefixes.push([model.slice(0, -1), compilePrice(p, creditsPerUsd)]);
    else exact.set(model, compilePrice(p, creditsPerUsd));
  }
  prefixes.sort((a, b) => b[0].length - a[0].length); // longest prefix wins
  const fallback = spec.default ? compilePrice(spec.default, creditsPerUsd) : undefined;
  const own = (model: string): ModelPrice | undefined => exact.get(model) ?? prefixes.find(([p]) => model.startsWith(p))?.[1];
  return {
    priceOf: (model) => own(model) ?? fallback,
    lists: (model) => own(model) !== undefined,
    cost(price, u) {
      const cached = Math.min(Math.max(0, u.cachedInput), Math.max(0, u.input));
      const total =
        BigInt(Math.max(0, u.input) - cached) * price.n.input + BigInt(cached) * price.n.cachedInput + BigInt(Math.max(0, u.output)) * price.n.output;
      return Number(divRoundHalfUp(total, DIVISOR));
    },
  };
}
