// The official Node SDK uploads an image to the local Feishu server
// (tests/oracles/feishu_sdk.rs). Usage: node image_upload.js <base URL>
// <app id> <app secret> <png file>. Prints the SDK's answer as one JSON line.
const fs = require('fs');
const lark = require('@larksuiteoapi/node-sdk');

const [baseUrl, appId, appSecret, file] = process.argv.slice(2);
const client = new lark.Client({ appId, appSecret, domain: baseUrl, loggerLevel: lark.LoggerLevel.warn });

client.im.image
  .create({ data: { image_type: 'message', image: fs.readFileSync(file) } })
  .then((res) => process.stdout.write(JSON.stringify({ kind: 'answer', res }) + '\n'))
  .catch((e) => {
    process.stdout.write(JSON.stringify({ kind: 'error', error: String(e && e.message) }) + '\n');
    process.exit(1);
  });
