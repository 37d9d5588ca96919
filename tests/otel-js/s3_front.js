// An S3 for the tests (tests/integration/s3.py): s3rver (npm, nobody here
// wrote it) behind a front that does what s3rver 3.7.1 does not:
// - it checks every request's SigV4 signature by signing the request again
//   with the AWS SDK's own signer (@smithy/signature-v4) under the key the
//   Authorization header names, and refuses a wrong one as S3 does (403
//   SignatureDoesNotMatch, InvalidAccessKeyId), and a body whose hash is not
//   x-amz-content-sha256 (400 XAmzContentSHA256Mismatch);
// - it takes a whole body before handing the request on, so a PUT cut off
//   mid-body is never stored.
// Usage: node s3_front.js PORT DIR '{"AKID": "secret", ...}' BUCKET...
// Prints "ready PORT" once both listen; logs each request's method and URL
// on stderr as it comes; with S3_FRONT_DELAY_MS, answers that much later
// (a slow S3, for a test to act in the middle of an upload); with
// S3_FRONT_SINK=1 (B34, bench/s3.py), checks every request as ever but
// stores nothing: it answers as S3 does (an ETag, an UploadId, a completion)
// so that what is measured is drover, not s3rver writing to disk. Faults,
// for the tests: S3_FRONT_SLOWDOWN=N answers the first N writes 503
// SlowDown; S3_FRONT_REFUSE_COMPLETE=1 answers every multipart completion
// 400 InvalidPart (the parts stay in s3rver until they are aborted).
// With S3_FRONT_TLS_CERT and S3_FRONT_TLS_KEY (PEM files) it serves HTTPS.
// s3rver 3.7.1 has no AbortMultipartUpload nor ListMultipartUploads: the
// front keeps the uploads begun and neither completed nor aborted, answers
// an abort itself (204), and says how many are open at GET /__front/uploads.
const fs = require('fs');
const http = require('http');
const https = require('https');
const crypto = require('crypto');
const S3rver = require('s3rver');
const { SignatureV4 } = require('@smithy/signature-v4');
const { Sha256 } = require('@aws-crypto/sha256-js');

const [port, dir, keysJson, ...buckets] = process.argv.slice(2);
const keys = JSON.parse(keysJson);
const delay = Number(process.env.S3_FRONT_DELAY_MS || 0);
const sink = process.env.S3_FRONT_SINK === '1';
let slowdowns = Number(process.env.S3_FRONT_SLOWDOWN || 0);
const refuseComplete = process.env.S3_FRONT_REFUSE_COMPLETE === '1';
const open = new Set();

function answerAsS3(req, url, body, res) {
  const etag = `"${crypto.createHash('md5').update(body).digest('hex')}"`;
  let xml = '';
  if (req.method === 'POST' && url.searchParams.has('uploads')) {
    xml = `<InitiateMultipartUploadResult><UploadId>${crypto.randomUUID()}</UploadId></InitiateMultipartUploadResult>`;
  } else if (req.method === 'POST' && url.searchParams.has('uploadId')) {
    xml = `<CompleteMultipartUploadResult><ETag>${etag}</ETag></CompleteMultipartUploadResult>`;
  }
  res.writeHead(req.method === 'DELETE' ? 204 : 200, { ETag: etag, 'Content-Length': Buffer.byteLength(xml) });
  res.end(xml);
}

function refuse(res, status, code, message) {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message></Error>`;
  res.writeHead(status, { 'Content-Type': 'application/xml', 'Content-Length': Buffer.byteLength(body) });
  res.end(body);
}

async function verify(req, url, body) {
  const auth = req.headers.authorization || '';
  const m = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(auth);
  if (!m) return ['AccessDenied', 403, 'no SigV4 Authorization header'];
  const [, akid, , region, signedHeaders, signature] = m;
  if (!(akid in keys)) return ['InvalidAccessKeyId', 403, 'The AWS Access Key Id you provided does not exist in our records.'];
  const claimed = req.headers['x-amz-content-sha256'];
  if (!claimed) return ['InvalidRequest', 400, 'Missing required header for this request: x-amz-content-sha256'];
  if (claimed !== 'UNSIGNED-PAYLOAD' && claimed !== crypto.createHash('sha256').update(body).digest('hex')) {
    return ['XAmzContentSHA256Mismatch', 400, 'The provided x-amz-content-sha256 header does not match what was computed.'];
  }
  const names = signedHeaders.split(';');
  const headers = {};
  for (const name of names) headers[name] = req.headers[name];
  const query = {};
  for (const [k, v] of url.searchParams) query[k] = v;
  const date = req.headers['x-amz-date'] || '';
  const signingDate = new Date(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`);
  const signer = new SignatureV4({
    credentials: { accessKeyId: akid, secretAccessKey: keys[akid], sessionToken: req.headers['x-amz-security-token'] },
    region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false,
  });
  const signed = await signer.sign({
    method: req.method, protocol: 'http:', hostname: (req.headers.host || '').split(':')[0], path: url.pathname,
    query, headers, body,
  }, { signingDate, signableHeaders: new Set(names) });
  const again = /Signature=([0-9a-f]{64})/.exec(signed.headers.authorization)[1];
  if (again !== signature) {
    return ['SignatureDoesNotMatch', 403, 'The request signature we calculated does not match the signature you provided.'];
  }
  return null;
}

async function main() {
  // serviceEndpoint: BUCKET.s3.localhost is virtual-host style (curl takes
  // any *.localhost to be the loopback).
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory: dir, serviceEndpoint: 'localhost',
    configureBuckets: buckets.map((name) => ({ name })) });
  const { port: inner } = await server.run();
  const tls = process.env.S3_FRONT_TLS_CERT
    ? { cert: fs.readFileSync(process.env.S3_FRONT_TLS_CERT), key: fs.readFileSync(process.env.S3_FRONT_TLS_KEY) }
    : null;
  const serve = (handler) => (tls ? https.createServer(tls, handler) : http.createServer(handler));
  const front = serve((req, res) => {
    process.stderr.write(`${req.method} ${req.url}\n`);
    if (req.method === 'GET' && req.url === '/__front/uploads') {
      const body = JSON.stringify({ open: open.size });
      res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
      return res.end(body);
    }
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('aborted', () => {}); // cut off: nothing goes on
    req.on('end', async () => {
      if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
      const body = Buffer.concat(chunks);
      if (req.headers['content-length'] !== undefined && body.length !== Number(req.headers['content-length'])) return;
      const url = new URL(req.url, 'http://x');
      const wrong = await verify(req, url, body);
      if (wrong) return refuse(res, wrong[1], wrong[0], wrong[2]);
      if (slowdowns > 0 && req.method !== 'GET') {
        slowdowns--;
        return refuse(res, 503, 'SlowDown', 'Please reduce your request rate.');
      }
      if (refuseComplete && req.method === 'POST' && url.searchParams.has('uploadId')) {
        return refuse(res, 400, 'InvalidPart', 'One or more of the specified parts could not be found.');
      }
      if (sink) return answerAsS3(req, url, body, res);
      const id = url.searchParams.get('uploadId');
      if (req.method === 'DELETE' && id !== null) {
        open.delete(id);
        res.writeHead(204);
        return res.end();
      }
      const headers = { ...req.headers };
      delete headers.authorization; // s3rver takes it anonymously: the front checked it
      const inward = http.request({ host: '127.0.0.1', port: inner, method: req.method, path: req.url, headers }, (r) => {
        const answer = [];
        r.on('data', (c) => answer.push(c));
        r.on('end', () => {
          const text = Buffer.concat(answer);
          const began = /<UploadId>([^<]+)<\/UploadId>/.exec(text.toString());
          if (req.method === 'POST' && url.searchParams.has('uploads') && began) open.add(began[1]);
          if (req.method === 'POST' && id !== null && r.statusCode === 200) open.delete(id);
          res.writeHead(r.statusCode, r.headers);
          res.end(text);
        });
      });
      inward.on('error', (e) => refuse(res, 500, 'InternalError', String(e)));
      inward.end(body);
    });
  });
  front.listen(Number(port), '127.0.0.1', () => console.log(`ready ${front.address().port}`));
}

main();
