// Reads back what drover wrote to S3, with the official AWS SDK for
// JavaScript (@aws-sdk/client-s3): every object of a bucket (a prefix, if
// given) downloaded into DIR under its key; prints one JSON line per object
// {key, size}, then {"objects": N}; on an S3 error prints {"error": code}.
// Usage: node s3_read.js ENDPOINT BUCKET DIR AKID SECRET [PREFIX]
const fs = require('fs');
const path = require('path');
const { S3Client, ListObjectsV2Command, GetObjectCommand } = require('@aws-sdk/client-s3');

const [endpoint, bucket, dir, akid, secret, prefix] = process.argv.slice(2);

async function main() {
  const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true,
    credentials: { accessKeyId: akid, secretAccessKey: secret } });
  let token;
  let n = 0;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents || []) {
      const got = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: o.Key }));
      const bytes = Buffer.from(await got.Body.transformToByteArray());
      const file = path.join(dir, o.Key);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, bytes);
      console.log(JSON.stringify({ key: o.Key, size: bytes.length }));
      n++;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  console.log(JSON.stringify({ objects: n }));
}

main().catch((e) => { console.log(JSON.stringify({ error: e.name || String(e) })); process.exit(0); });
