// The official Node SDK's long-connection client against the local Feishu
// server (tests/oracles/feishu_sdk.rs). Usage: node ws_client.js <base URL>
// <app id> <app secret>. Prints one JSON line per event it handles; answers
// card actions with a toast the server checks in its ack.
const lark = require('@larksuiteoapi/node-sdk');

const [baseUrl, appId, appSecret] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const dispatcher = new lark.EventDispatcher({}).register({
  'im.message.receive_v1': async (data) => {
    out({ kind: 'message', message_id: data.message.message_id, text: JSON.parse(data.message.content).text });
  },
  'card.action.trigger': async (data) => {
    out({ kind: 'card', open_message_id: data.context.open_message_id, value: data.action.value });
    return { toast: { type: 'success', content: 'from the node sdk' } };
  },
});

const client = new lark.WSClient({
  appId,
  appSecret,
  domain: baseUrl,
  loggerLevel: lark.LoggerLevel.warn,
  onReady: () => out({ kind: 'ready' }),
  onError: (e) => out({ kind: 'error', error: String(e && e.message) }),
});
client.start({ eventDispatcher: dispatcher });
