import { expect } from 'chai';
import {
  assertMilli,
  creditsToMilli,
  decimalToString,
  divRoundHalfUp,
  formatCredits,
  MoneyError,
  parseDecimal,
  usdToMilli,
} from '../../engine/util/money.ts';
import { resolveBillingConfig } from '../../engine/billing/config.ts';

describe('util/money', () => {
  it('parses decimals exactly, without floating point', () => {
    expect(parseDecimal('0.0425')).to.deep.equal({ units: 425n, scale: 4 });
    expect(parseDecimal('12')).to.deep.equal({ units: 12n, scale: 0 });
    expect(parseDecimal('-3.50')).to.deep.equal({ units: -350n, scale: 2 });
    expect(decimalToString(parseDecimal('0.050'))).to.equal('0.050');
    expect(decimalToString(parseDecimal('-0.5'))).to.equal('-0.5');
    // 0.1 + 0.2 style float errors cannot happen: 3 x 0.1 USD is exactly 30 credits.
    expect(usdToMilli('0.1', 100, 3)).to.equal(30_000);
    for (const bad of ['', '1e3', '.5', '1.', ' 1', '0x10', '1,5', 'abc']) {
      expect(() => parseDecimal(bad), bad).to.throw(MoneyError);
    }
  });

  it('converts USD to milli-credits with credits_per_usd exactly', () => {
    expect(usdToMilli('0.0425', 100)).to.equal(4_250);
    expect(usdToMilli('0.085', 100, 4)).to.equal(34_000);
    expect(usdToMilli('3.264', 100)).to.equal(326_400);
    expect(usdToMilli('0.200', 100, 30)).to.equal(600_000);
    expect(usdToMilli('0.085', 7)).to.equal(595); // 0.595 credits
    expect(usdToMilli('0', 100, 1000)).to.equal(0);
    expect(() => usdToMilli('1', 0)).to.throw(MoneyError);
    expect(() => usdToMilli('1', 1.5)).to.throw(MoneyError);
  });

  it('rounds the total once, half up, to the milli-credit', () => {
    // 0.0000015 USD x 100 x 1000 = 0.15 milli -> 0; x 5 = 0.75 -> 1; 0.000005 USD -> 0.5 milli -> 1
    expect(usdToMilli('0.0000015', 100)).to.equal(0);
    expect(usdToMilli('0.0000015', 100, 5)).to.equal(1);
    expect(usdToMilli('0.000005', 100)).to.equal(1);
    expect(usdToMilli('0.0000049', 100)).to.equal(0);
    // rounding once on the product, not per unit: 1000 tokens x 0.0000015 = 150 milli (per-unit rounding would give 0)
    expect(usdToMilli('0.0000015', 100, 1000)).to.equal(150);
    expect(divRoundHalfUp(5n, 2n)).to.equal(3n);
    expect(divRoundHalfUp(-5n, 2n)).to.equal(-3n);
    expect(divRoundHalfUp(7n, 3n)).to.equal(2n);
  });

  it('refuses amounts outside the safe integer range', () => {
    expect(() => usdToMilli('999999999', 100, 1_000_000)).to.throw(MoneyError, /safe integer/);
    expect(() => assertMilli(1.5)).to.throw(MoneyError);
    expect(() => assertMilli(-1, 'hold', { nonNegative: true })).to.throw(MoneyError, /negative/);
    expect(() => assertMilli(2 ** 53)).to.throw(MoneyError);
    expect(() => assertMilli(12)).not.to.throw();
  });

  it('parses credits from config exactly and refuses sub-milli precision', () => {
    expect(creditsToMilli('1000.00')).to.equal(1_000_000);
    expect(creditsToMilli(1000)).to.equal(1_000_000);
    expect(creditsToMilli('0.001')).to.equal(1);
    expect(creditsToMilli('12.5')).to.equal(12_500);
    expect(() => creditsToMilli('0.0001')).to.throw(MoneyError, /3 decimals/);
    expect(() => creditsToMilli(1.5)).to.throw(MoneyError);
  });

  it('formats credits with 2 decimals, rounding the third decimal down', () => {
    expect(formatCredits(1_000_000)).to.equal('1000.00');
    expect(formatCredits(999_999)).to.equal('999.99');
    expect(formatCredits(4_250)).to.equal('4.25');
    expect(formatCredits(5)).to.equal('0.00');
    expect(formatCredits(10)).to.equal('0.01');
    expect(formatCredits(0)).to.equal('0.00');
    expect(formatCredits(-5)).to.equal('-0.01');
    expect(formatCredits(-1_500)).to.equal('-1.50');
    expect(formatCredits(123_456_789)).to.equal('123456.78');
    expect(formatCredits(30_001, 'up')).to.equal('30.01');
    expect(formatCredits(30_000, 'up')).to.equal('30.00');
    expect(formatCredits(-1_505, 'up')).to.equal('-1.50');
  });

  it('resolves the billing config with its defaults', () => {
    expect(resolveBillingConfig()).to.deep.equal({ creditsPerUsd: 100, lowBalanceThreshold: 1_000_000, lowBalanceThrottleMs: 86_400_000 });
    expect(resolveBillingConfig({ credits_per_usd: 1000, low_balance: { threshold_credits: '25.5', throttle_seconds: 60 } })).to.deep.equal({
      creditsPerUsd: 1000,
      lowBalanceThreshold: 25_500,
      lowBalanceThrottleMs: 60_000,
    });
    expect(() => resolveBillingConfig({ credits_per_usd: 0 })).to.throw(/credits_per_usd/);
    expect(() => resolveBillingConfig({ low_balance: { threshold_credits: 0.5 } })).to.throw(/threshold_credits/);
    expect(() => resolveBillingConfig({ low_balance: { throttle_seconds: -1 } })).to.throw(/throttle_seconds/);
  });
});
