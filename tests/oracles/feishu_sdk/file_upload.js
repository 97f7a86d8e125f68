// The official Node SDK uploads a file to the local Feishu server
// (tests/oracles/feishu_sdk.rs). Usage: node file_upload.js <base URL>
// <app id> <app secret> <file> <file name>. Prints the SDK's answer as one
// JSON line.
const fs = require('fs');
const lark = require('@larksuiteoapi/node-sdk');

const [baseUrl, appId, appSecret, file, fileName] = process.argv.slice(2);
const client = new lark.Client({ appId, appSecret, domain: baseUrl, loggerLevel: lark.LoggerLevel.warn });

client.im.file
  .create({ data: { file_type: 'stream', file_name: fileName, file: fs.readFileSync(file) } })
  .then((res) => process.stdout.write(JSON.stringify({ kind: 'answer', res }) + '\n'))
  .catch((e) => {
    process.stdout.write(JSON.stringify({ kind: 'error', error: String(e && e.message) }) + '\n');
    process.exit(1);
  });
