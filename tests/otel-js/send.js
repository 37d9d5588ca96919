// Sends logs and spans to an OTLP/HTTP endpoint with the OpenTelemetry JS
// SDK, then prints (one JSON line) what it sent, for the test to compare
// with what drover exported.
//
//   node send.js http://127.0.0.1:4318 proto|json RUN
//   node send.js http://127.0.0.1:4317 grpc RUN        (OTLP/gRPC: the base is the server)
'use strict';
const { SpanKind, SpanStatusCode, TraceFlags } = require('@opentelemetry/api');
const { SeverityNumber } = require('@opentelemetry/api-logs');
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { LoggerProvider, SimpleLogRecordProcessor } = require('@opentelemetry/sdk-logs');
const { BasicTracerProvider, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');

const [base, encoding, run] = process.argv.slice(2);
const flavour = { proto: 'proto', json: 'http', grpc: 'grpc' }[encoding];
const pkg = (signal) => `@opentelemetry/exporter-${signal}-otlp-${flavour}`;
// OTLP/HTTP posts to {base}/v1/SIGNAL; OTLP/gRPC calls the service at the base.
const url = (path) => (encoding === 'grpc' ? base : `${base}${path}`);
const { OTLPLogExporter } = require(pkg('logs'));
const { OTLPTraceExporter } = require(pkg('trace'));

async function main() {
  const resource = resourceFromAttributes({ 'service.name': `drover-test-${run}`, 'deployment.count': 3 });
  const sent = { run, encoding, logs: [], spans: [] };

  // Spans first: the logs carry the first span's ids.
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: url('/v1/traces') }))],
  });
  const tracer = tracerProvider.getTracer('drover-test-tracer', '1.2.3');
  const start = [1700000000, 123456789];
  const parent = tracer.startSpan(`parent-${run}`, { kind: SpanKind.SERVER, startTime: start,
    attributes: { 'http.method': 'POST', 'retries': 2, 'ok': true, 'ratio': 0.25, 'tags': ['a', 'b'] } });
  const linked = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };
  const child = tracer.startSpan(`child-${run}`, { kind: SpanKind.CLIENT, startTime: [1700000000, 223456789],
    links: [{ context: linked, attributes: { 'link.kind': 'follows' } }] },
    require('@opentelemetry/api').trace.setSpan(require('@opentelemetry/api').context.active(), parent));
  child.addEvent('retrying', { attempt: 1 }, [1700000000, 323456789]);
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'upstream said no' });
  child.end([1700000000, 423456789]);
  parent.end([1700000001, 0]);
  for (const span of [parent, child]) {
    const ctx = span.spanContext();
    sent.spans.push({ name: span.name, trace_id: ctx.traceId, span_id: ctx.spanId });
  }
  await tracerProvider.forceFlush();
  await tracerProvider.shutdown();

  const loggerProvider = new LoggerProvider({ resource });
  loggerProvider.addLogRecordProcessor(new SimpleLogRecordProcessor(new OTLPLogExporter({ url: url('/v1/logs') })));
  const logger = loggerProvider.getLogger('drover-test-logger', '4.5.6');
  const pctx = parent.spanContext();
  for (let i = 0; i < 5; i++) {
    const record = {
      timestamp: [1700000002, i * 1000 + 7],
      observedTimestamp: [1700000003, i],
      severityNumber: SeverityNumber.WARN,
      severityText: 'WARN',
      body: `log ${i} of ${run}`,
      attributes: { seq: i, 'user.name': 'zoë', big: 9007199254740991, flag: false, 'nested.list': [1, 2, 3] },
      context: require('@opentelemetry/api').trace.setSpanContext(require('@opentelemetry/api').context.active(), pctx),
    };
    logger.emit(record);
    sent.logs.push({ seq: i, body: record.body, trace_id: pctx.traceId, span_id: pctx.spanId });
  }
  await loggerProvider.forceFlush();
  await loggerProvider.shutdown();
  process.stdout.write(JSON.stringify(sent) + '\n');
}

main().catch((e) => { console.error(e); process.exit(1); });
