// An OpAMP server (plain HTTP transport) whose messages are decoded and
// encoded by the schemas the npm package @elastic/opamp-client-node ships
// (generated from the OpAMP specification's .proto, run by @bufbuild/protobuf):
// code nobody here wrote. It prints one JSON line per AgentToServer it gets
// (the message as @bufbuild/protobuf's toJson writes it), and puts a remote
// config in its answers once asked to:
//
//   node opamp_server.js serve             prints {"port": N}; then reads
//        lines on stdin: {"remote_config": "<drover.yaml text>", "hash": "<hex>"}
//        is sent in every answer from then on; stdin's end stops it.
//   node opamp_server.js selfcheck         the package's own client against
//        this server: it must connect, be heard, and get a remote config.
'use strict';
const http = require('http');
const readline = require('readline');
const { create, toBinary, fromBinary, toJson } = require('@bufbuild/protobuf');
const pb = require('@elastic/opamp-client-node/lib/generated/opamp_pb');

function serve(onMessage) {
  let offer = null;
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const message = fromBinary(pb.AgentToServerSchema, new Uint8Array(Buffer.concat(chunks)));
      onMessage(message, req.headers);
      const answer = create(pb.ServerToAgentSchema, {
        instanceUid: message.instanceUid,
        capabilities: BigInt(pb.ServerCapabilities.ServerCapabilities_AcceptsStatus |
          pb.ServerCapabilities.ServerCapabilities_OffersRemoteConfig |
          pb.ServerCapabilities.ServerCapabilities_AcceptsEffectiveConfig),
      });
      if (offer) {
        answer.remoteConfig = create(pb.AgentRemoteConfigSchema, {
          config: create(pb.AgentConfigMapSchema, {
            configMap: { 'drover.yaml': create(pb.AgentConfigFileSchema, {
              body: new TextEncoder().encode(offer.remote_config), contentType: 'text/yaml' }) },
          }),
          configHash: Buffer.from(offer.hash, 'hex'),
        });
      }
      const body = Buffer.from(toBinary(pb.ServerToAgentSchema, answer));
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf', 'Content-Length': body.length });
      res.end(body);
    });
  });
  return { server, setOffer: (o) => { offer = o; } };
}

async function selfcheck() {
  const { createOpAMPClient } = require('@elastic/opamp-client-node');
  let heard = null;
  const { server, setOffer } = serve((m) => { heard = heard || m; });
  setOffer({ remote_config: 'groups: {}\n', hash: 'abcd' });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const got = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no remote config reached the client')), 10000);
    const client = createOpAMPClient({
      endpoint: `http://127.0.0.1:${server.address().port}/v1/opamp`,
      capabilities: BigInt(pb.AgentCapabilities.AgentCapabilities_AcceptsRemoteConfig),
      heartbeatIntervalSeconds: 0.1,
      onMessage: ({ remoteConfig }) => {
        if (remoteConfig) {
          clearTimeout(timer);
          client.shutdown().then(() => resolve(remoteConfig));
        }
      },
    });
    client.setAgentDescription({ identifyingAttributes: { 'service.name': 'selfcheck' } });
    client.start();
  });
  server.close();
  const body = new TextDecoder().decode(got.config.configMap['drover.yaml'].body);
  if (!heard || body !== 'groups: {}\n') {
    throw new Error(`selfcheck: heard=${Boolean(heard)} body=${JSON.stringify(body)}`);
  }
  console.log(JSON.stringify({ selfcheck: 'ok', agent: Buffer.from(heard.instanceUid).toString('hex') }));
}

async function main() {
  if (process.argv[2] === 'selfcheck') {
    await selfcheck();
    return;
  }
  const { server, setOffer } = serve((m, headers) => {
    console.log(JSON.stringify({ message: toJson(pb.AgentToServerSchema, m), authorization: headers.authorization }));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  console.log(JSON.stringify({ port: server.address().port }));
  const lines = readline.createInterface({ input: process.stdin });
  lines.on('line', (line) => setOffer(JSON.parse(line)));
  lines.on('close', () => { server.close(); process.exit(0); });
}

main().catch((e) => { console.error(e); process.exit(1); });
