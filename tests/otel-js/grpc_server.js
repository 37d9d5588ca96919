// A gRPC server written with @grpc/grpc-js and @grpc/proto-loader, loading
// drover's OTLP definitions (proto/): serves the logs, trace and metrics
// services and prints, for each request it takes, one JSON line
// {signal, request: base64 of the request as protobufjs encodes it again}.
// The first answers may be scripted failures, for the retry tests:
//
//   node grpc_server.js PROTO_DIR [UNAVAILABLE|RESOURCE_EXHAUSTED:RETRY_MS ...]
//
// It prints {"port": N} first, and stops when stdin closes.
'use strict';
const path = require('path');
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const [protoDir, ...script] = process.argv.slice(2);
const files = ['logs', 'trace', 'metrics'].map((s) => `opentelemetry/proto/collector/${s}/v1/${s}_service.proto`);
const definition = loader.loadSync(files.concat(['google/rpc/status.proto', 'google/rpc/error_details.proto']),
  { includeDirs: [protoDir], keepCase: true });
const proto = grpc.loadPackageDefinition(definition);
// proto-loader decodes what arrives; protobufjs (what proto-loader is built
// on) encodes it again for the test to compare.
const protobuf = require('protobufjs');
const root = new protobuf.Root();
root.resolvePath = (origin, target) => (path.isAbsolute(target) ? target : path.join(protoDir, target));
root.loadSync(files.concat(['google/rpc/status.proto', 'google/rpc/error_details.proto']), { keepCase: true });

function handler(signal, requestType) {
  const Request = root.lookupType(requestType);
  return (call, callback) => {
    const step = script.shift();
    if (step) {
      const [code, retry] = step.split(':');
      const metadata = new grpc.Metadata();
      if (retry) {
        const RetryInfo = root.lookupType('google.rpc.RetryInfo');
        const info = RetryInfo.encode({ retry_delay: { seconds: Math.floor(retry / 1000), nanos: (retry % 1000) * 1e6 } }).finish();
        const status = root.lookupType('google.rpc.Status').encode({
          code: grpc.status[code], message: 'test says no',
          details: [{ type_url: 'type.googleapis.com/google.rpc.RetryInfo', value: info }] }).finish();
        metadata.set('grpc-status-details-bin', Buffer.from(status));
      }
      console.log(JSON.stringify({ refused: code }));
      callback({ code: grpc.status[code], details: 'test says no', metadata });
      return;
    }
    const bytes = Request.encode(Request.fromObject(call.request)).finish();
    console.log(JSON.stringify({ signal, request: Buffer.from(bytes).toString('base64') }));
    callback(null, {});
  };
}

const server = new grpc.Server();
const v1 = proto.opentelemetry.proto.collector;
server.addService(v1.logs.v1.LogsService.service,
  { Export: handler('logs', 'opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest') });
server.addService(v1.trace.v1.TraceService.service,
  { Export: handler('traces', 'opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest') });
server.addService(v1.metrics.v1.MetricsService.service,
  { Export: handler('metrics', 'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest') });
server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) { console.error(err); process.exit(1); }
  console.log(JSON.stringify({ port }));
});
process.stdin.on('end', () => server.forceShutdown());
process.stdin.resume();
