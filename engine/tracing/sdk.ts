// The OpenTelemetry SDK, loaded (dynamic import, by engine/gateway.ts) only when
// config.tracing.enabled: a tracer provider with a parent-based ratio sampler and a batching
// OTLP/HTTP (JSON) exporter, installed as the process's tracer (./tracing.ts). Nothing here
// runs per request.
import { readFileSync } from 'node:fs';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from './attributes.ts';
import type { Logger } from 'pino';
import type { TracingConfig } from '../config/types.ts';
import { within } from '../util/within.ts';
import { installTracer } from './tracing.ts';

/** An export failure is logged at most this often (a collector that is down fails every batch). */
const FAILURE_LOG_MS = 60_000;
/** Shutdown waits this long for the last batch: an unreachable collector is retried for ~10 s. */
const LAST_EXPORT_MS = 2_000;

export interface TracingSdk {
  /** Stop tracing, then send the spans still waiting (gateway close). */
  shutdown(): Promise<void>;
}

export function startTracing(config: TracingConfig, logger: Logger): TracingSdk {
  const version = packageVersion();
  const exporter = loggedFailures(new OTLPTraceExporter({ url: config.otlp_endpoint, headers: config.headers }), logger, config.otlp_endpoint);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.service_name, [ATTR_SERVICE_VERSION]: version }),
    // A caller's sampled trace is recorded, an unsampled one is not; new traces at the ratio.
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(config.sample_ratio) }),
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.export_delay_ms })],
  });
  const uninstall = installTracer(provider.getTracer('model-gateway', version));
  return {
    async shutdown() {
      uninstall();
      const outcome = await within(provider.shutdown(), LAST_EXPORT_MS);
      if (outcome !== 'done') logger.warn({ url: config.otlp_endpoint, outcome }, 'the last spans could not be exported');
    },
  };
}

/** The SDK reports export failures to its diag logger, silent by default: say it in the log instead. */
function loggedFailures(exporter: SpanExporter, logger: Logger, url: string): SpanExporter {
  let loggedAt = -Infinity;
  return {
    export(spans: ReadableSpan[], done: (result: ExportResult) => void) {
      exporter.export(spans, (result) => {
        if (result.code !== ExportResultCode.SUCCESS && Date.now() - loggedAt >= FAILURE_LOG_MS) {
          loggedAt = Date.now();
          logger.warn({ err: result.error, url, spans: spans.length }, 'spans could not be exported to the OTLP endpoint');
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}
