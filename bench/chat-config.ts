// The gateway's configuration in the chat benchmarks (bench/chat-gateway.ts, bench/billing.ts):
// provider_c alone at `upstreamUrl`, limits so high that they count but never refuse, no sandbox,
// listeners on free ports; `store` (a YAML line, e.g. the Redis store's) and the log level
// vary by run.
const big = { per_second: 1_000_000_000, per_minute: 1_000_000_000, per_day: 1_000_000_000 };

export function chatConfigText(opts: { upstreamUrl: string; store?: string; logLevel: string }): string {
  return `
server: { host: 127.0.0.1, port: 0 }
metrics: { port: 0 }
sandbox: { enabled: false }
log: { level: ${opts.logLevel} }
${opts.store ?? ''}
vendors: { dir: vendors, enabled: [provider_c] }
limits: ${JSON.stringify({ rate: { key: big, tenant: big, model: big }, daily_spend_credits: '1000000000.00' })}
upstreams: { provider_c: { base_url: "${opts.upstreamUrl}", credentials: { api_key: sk-bench } } }
`;
}
