// Sends metrics to an OTLP/HTTP endpoint with the OpenTelemetry JS SDK
// (a counter, an up-down counter, a histogram, an exponential histogram and
// an observable gauge), then prints (one JSON line) what it recorded, for
// the test to compare with what drover exported.
//
//   node send_metrics.js http://127.0.0.1:4318 proto|json RUN
//   node send_metrics.js http://127.0.0.1:4317 grpc RUN        (OTLP/gRPC)
'use strict';
const { resourceFromAttributes } = require('@opentelemetry/resources');
const { MeterProvider, PeriodicExportingMetricReader, AggregationType } = require('@opentelemetry/sdk-metrics');

const [base, encoding, run] = process.argv.slice(2);
const flavour = { proto: 'proto', json: 'http', grpc: 'grpc' }[encoding];
const { OTLPMetricExporter } = require(`@opentelemetry/exporter-metrics-otlp-${flavour}`);

async function main() {
  const resource = resourceFromAttributes({ 'service.name': `drover-metrics-${run}` });
  const reader = new PeriodicExportingMetricReader({
    exporter: new OTLPMetricExporter({ url: encoding === 'grpc' ? base : `${base}/v1/metrics` }),
    exportIntervalMillis: 3600000,
  });
  const provider = new MeterProvider({
    resource,
    readers: [reader],
    views: [{ instrumentName: 'sizes', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  });
  const meter = provider.getMeter('drover-test-meter', '7.8.9');
  const counter = meter.createCounter('requests', { description: 'requests served', unit: '{request}' });
  counter.add(5, { route: '/a' });
  counter.add(2, { route: '/a' });
  counter.add(1, { route: '/b' });
  const updown = meter.createUpDownCounter('queue.depth', { unit: '{item}' });
  updown.add(10);
  updown.add(-3);
  const latency = meter.createHistogram('latency', { unit: 'ms' });
  for (const v of [1, 5, 50]) latency.record(v, { route: '/a' });
  const sizes = meter.createHistogram('sizes', { unit: 'By' });
  for (const v of [3, 300, 3000]) sizes.record(v);
  const gauge = meter.createObservableGauge('temperature', { unit: 'Cel' });
  gauge.addCallback((result) => result.observe(21.5, { room: 'a' }));
  await reader.forceFlush();
  await provider.shutdown();
  console.log(JSON.stringify({ run, encoding }));
}

main().catch((e) => { console.error(e); process.exit(1); });
