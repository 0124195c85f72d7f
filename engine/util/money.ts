// Money. Every amount the engine stores or moves is an integer number of milli-credits
// (1 credit = 1000 milli-credits), held in a JS `number` that must be a safe integer
// (|x| <= 2^53 - 1, i.e. about 9 * 10^12 credits). Safe integers were chosen over bigint so that
// amounts serialise to JSON and Redis (Lua numbers are doubles, exact to 2^53) unchanged.
// Arithmetic that could leave the safe range or needs fractions (USD decimals x quantity x
// credits_per_usd) is done in BigInt and checked on the way back. No floating point anywhere.
//
// Rounding rules:
//  - USD -> milli-credits: the exact product (unit price x quantity x credits_per_usd x 1000) is
//    rounded ONCE, half up (half away from zero), to the milli-credit. Every price in the spec is
//    exact at that precision (0.0425 USD = 4.25 credits = 4250 milli), so rounding only matters
//    for prices with more than 5 USD decimals (per-token prices).
//  - milli-credits -> "1234.56" (events, error details): rounded DOWN (towards -infinity) to the
//    cent of a credit, so a displayed available balance never exceeds what is really available
//    (999.999 credits shows "999.99", never "1000.00" — it is below a 1000.00 threshold).
//    An amount the client must have (the price in a 1003 detail) is rounded UP instead.

/** An integer number of milli-credits, always a safe integer. */
export type Milli = number;

export const MILLI_PER_CREDIT = 1000;
const MILLI_PER_CREDIT_N = 1000n;

/** An exact decimal: value = units / 10^scale. */
export interface Decimal {
  readonly units: bigint;
  readonly scale: number;
}

const DECIMAL_RE = /^(-)?(\d+)(?:\.(\d+))?$/;

export class MoneyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MoneyError';
  }
}

/** Parse a plain decimal string ("0.0425", "12", "-3.5") exactly. No exponents, no spaces. */
export function parseDecimal(text: string): Decimal {
  const m = DECIMAL_RE.exec(text);
  if (!m) throw new MoneyError(`"${text}" is not a decimal number (expected digits with an optional fraction, e.g. "0.085")`);
  const frac = m[3] ?? '';
  const units = BigInt(m[2] + frac);
  return { units: m[1] ? -units : units, scale: frac.length };
}

export function decimalToString(d: Decimal): string {
  const neg = d.units < 0n;
  const digits = (neg ? -d.units : d.units).toString().padStart(d.scale + 1, '0');
  const int = digits.slice(0, digits.length - d.scale);
  const frac = digits.slice(digits.length - d.scale);
  return `${neg ? '-' : ''}${int}${frac ? `.${frac}` : ''}`;
}

/** n / d rounded half away from zero (d > 0). */
export function divRoundHalfUp(n: bigint, d: bigint): bigint {
  if (d <= 0n) throw new MoneyError('division by a non-positive number');
  const neg = n < 0n;
  const a = neg ? -n : n;
  const q = (a * 2n + d) / (d * 2n);
  return neg ? -q : q;
}

/** n / d rounded towards -infinity (d > 0). */
function divFloor(n: bigint, d: bigint): bigint {
  const q = n / d;
  return n % d !== 0n && n < 0n ? q - 1n : q;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SAFE = BigInt(Number.MIN_SAFE_INTEGER);

/** 10^n, each power made once: a price is converted on every hold and settlement. */
const POWERS_OF_TEN: bigint[] = [];
const tenTo = (n: number): bigint => (POWERS_OF_TEN[n] ??= 10n ** BigInt(n));

export function toMilli(value: bigint, what = 'amount'): Milli {
  if (value > MAX_SAFE || value < MIN_SAFE) {
    throw new MoneyError(`${what} ${value} milli-credits is outside the safe integer range`);
  }
  return Number(value);
}

/** Throws unless `x` is a safe integer (optionally >= 0). */
export function assertMilli(x: unknown, what = 'amount', opts: { nonNegative?: boolean } = {}): asserts x is Milli {
  if (typeof x !== 'number' || !Number.isSafeInteger(x)) {
    throw new MoneyError(`${what} must be an integer number of milli-credits, got ${String(x)}`);
  }
  if (opts.nonNegative && x < 0) throw new MoneyError(`${what} must not be negative, got ${x}`);
}

/**
 * USD decimal x quantity -> milli-credits, exactly, with one half-up rounding at the end.
 * `creditsPerUsd` is the config's `billing.credits_per_usd` (a positive integer, default 100).
 */
export function usdToMilli(usd: Decimal | string, creditsPerUsd: number, quantity: number | bigint = 1): Milli {
  const d = typeof usd === 'string' ? parseDecimal(usd) : usd;
  if (!Number.isSafeInteger(creditsPerUsd) || creditsPerUsd <= 0) {
    throw new MoneyError(`credits_per_usd must be a positive integer, got ${creditsPerUsd}`);
  }
  const q = typeof quantity === 'bigint' ? quantity : BigInt(quantity);
  const numerator = d.units * q * BigInt(creditsPerUsd) * MILLI_PER_CREDIT_N;
  return toMilli(divRoundHalfUp(numerator, tenTo(d.scale)), 'price');
}

/**
 * Credits given in config or by an operator ("1000.00", "12.5", 1000) -> milli-credits.
 * Exact: more than 3 decimals is an error rather than a silent rounding.
 */
export function creditsToMilli(credits: string | number, what = 'credits'): Milli {
  if (typeof credits === 'number') {
    if (!Number.isSafeInteger(credits)) throw new MoneyError(`${what}: ${credits} must be an integer or a decimal string`);
    return toMilli(BigInt(credits) * MILLI_PER_CREDIT_N, what);
  }
  const d = parseDecimal(credits);
  if (d.scale > 3) throw new MoneyError(`${what}: "${credits}" has more than 3 decimals (1 milli-credit is the smallest unit)`);
  return toMilli(d.units * tenTo(3 - d.scale), what);
}

/**
 * milli-credits -> credits with 2 decimals, rounded down (towards -infinity): 999999 -> "999.99".
 * `rounding: 'up'` (towards +infinity) is for amounts a client must have ("needs 30.01 credits").
 */
export function formatCredits(milli: Milli, rounding: 'down' | 'up' = 'down'): string {
  assertMilli(milli);
  const m = BigInt(milli);
  const cents = rounding === 'down' ? divFloor(m, 10n) : -divFloor(-m, 10n); // hundredths of a credit
  const neg = cents < 0n;
  const abs = (neg ? -cents : cents).toString().padStart(3, '0');
  return `${neg ? '-' : ''}${abs.slice(0, -2)}.${abs.slice(-2)}`;
}

/** Exact credits with 3 decimals (one milli-credit), e.g. 4250 → "4.250", -5 → "-0.005". */
export function exactCredits(milli: Milli): string {
  assertMilli(milli);
  const sign = milli < 0 ? '-' : '';
  const abs = Math.abs(milli);
  return `${sign}${Math.floor(abs / MILLI_PER_CREDIT)}.${String(abs % MILLI_PER_CREDIT).padStart(3, '0')}`;
}
