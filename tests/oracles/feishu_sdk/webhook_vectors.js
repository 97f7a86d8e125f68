// Webhook vectors judged by the official Node SDK (@larksuiteoapi/node-sdk).
//
// Usage: node webhook_vectors.js <encrypt_key> <verification_token>
//
// The SDK decrypts and verifies but never encrypts or signs, so this script
// builds each request itself (node's crypto) and lets the SDK judge it:
// its AESCipher must decrypt every encrypted body back to the plaintext, and
// every request goes through the SDK's own webhook path on a loopback HTTP
// server (adaptDefault with autoChallenge, in front of its EventDispatcher
// for events and 2.0 callbacks and its CardActionHandler for old 1.0 card
// callbacks). A vector records whether the SDK's handler ran (accepted) or
// not (refused), and the challenge it answered. Forgeries are the good
// request with one byte changed. Prints {"sdk", "vectors"} as JSON on
// stdout; clawmux must agree (tests/oracles/feishu_sdk.rs).
//
// The Node SDK signs over JSON.stringify of the parsed body, not the raw
// bytes, so every body here is JSON.stringify output (compact), where the
// two are the same.
const crypto = require('crypto');
const http = require('http');
const lark = require('@larksuiteoapi/node-sdk');

const [EK, VT] = process.argv.slice(2);
if (!EK || !VT) {
  process.stderr.write('usage: node webhook_vectors.js <encrypt_key> <verification_token>\n');
  process.exit(2);
}

// The SDK logs through this; stdout carries the vectors only.
const quiet = { error() {}, warn() {}, info() {}, debug() {}, trace() {} };

function fail(why) {
  process.stderr.write(`webhook_vectors.js: ${why}\n`);
  process.exit(1);
}

/** Feishu's encryption: AES-256-CBC, key sha256(encrypt key), IV first, base64. */
function encrypt(key, plain) {
  const k = crypto.createHash('sha256').update(key).digest();
  const iv = crypto.randomBytes(16);
  const c = crypto.createCipheriv('aes-256-cbc', k, iv);
  const out = Buffer.concat([iv, c.update(plain, 'utf8'), c.final()]).toString('base64');
  // The SDK's own decryption must give the plaintext back.
  if (new lark.AESCipher(key).decrypt(out) !== plain) fail('the SDK does not decrypt our ciphertext');
  return out;
}

const signEvent = (ts, nonce, key, body) =>
  crypto.createHash('sha256').update(ts + nonce + key + body).digest('hex');
const signCardV1 = (ts, nonce, token, body) =>
  crypto.createHash('sha1').update(ts + nonce + token + body).digest('hex');

/** `s` with the byte at `at` changed (a hex digit or base64 letter stays one). */
function oneByteChanged(s, at) {
  const i = at < 0 ? s.length + at : at;
  const c = s[i];
  const swapped = c === 'a' ? 'b' : c === '0' ? '1' : c === 'A' ? 'B' : /[0-9]/.test(c) ? '0' : 'a';
  return s.slice(0, i) + swapped + s.slice(i + 1);
}

// What the SDK's handlers saw, per request.
let handled = [];
const events = new lark.EventDispatcher({ encryptKey: EK, verificationToken: VT, logger: quiet }).register({
  'im.message.receive_v1': async (d) => {
    handled.push({ event: 'message', id: d.message.message_id });
    return {};
  },
  'card.action.trigger': async (d) => {
    handled.push({ event: 'card', id: d.context.open_message_id });
    return { toast: { type: 'info', content: 'ok' } };
  },
});
const cardsV1 = new lark.CardActionHandler(
  { encryptKey: EK, verificationToken: VT, logger: quiet },
  async (d) => {
    handled.push({ event: 'card_v1', id: d.open_message_id });
    return {};
  },
);
const onEvent = lark.adaptDefault('/event', events, { autoChallenge: true });
const onCardV1 = lark.adaptDefault('/card', cardsV1, { autoChallenge: true });

const ts = String(Math.floor(Date.now() / 1000));
const vectors = [];

async function judge(base, path, body, nonce, signature) {
  handled = [];
  const headers = {
    'content-type': 'application/json',
    'x-lark-request-timestamp': ts,
    'x-lark-request-nonce': nonce,
  };
  if (signature) headers['x-lark-signature'] = signature;
  const resp = await fetch(base + path, { method: 'POST', headers, body });
  const answer = await resp.text();
  return { answer, got: handled };
}

/**
 * Runs one request through the SDK and records it. `expect`: the handler
 * that must run if the SDK accepts it (null for url_verification).
 * `tokenOk`: the body carries the right verification token (the Node SDK
 * does not check it; clawmux and the Python SDK do).
 */
async function vector(base, { name, path, body, nonce, signature, expect, tokenOk = true }) {
  const { answer, got } = await judge(base, path, body, nonce, signature);
  let challenge = null;
  try {
    challenge = JSON.parse(answer).challenge ?? null;
  } catch (_) {
    // An empty answer: the SDK refused it.
  }
  const accepted = expect === null ? challenge !== null : got.length > 0;
  if (accepted && expect !== null && (got.length !== 1 || got[0].event !== expect)) {
    fail(`${name}: the SDK ran ${JSON.stringify(got)}, expected ${expect}`);
  }
  vectors.push({
    name,
    body,
    timestamp: ts,
    nonce,
    signature: signature || '',
    sdk_accepts: accepted,
    token_ok: tokenOk,
    challenge,
    event: accepted ? expect : null,
  });
}

const message = (id) => ({
  schema: '2.0',
  header: {
    event_id: `ev-node-${id}`, event_type: 'im.message.receive_v1', create_time: '1700000000000',
    token: VT, app_id: 'cli_a1b2c3d4e5f60718', tenant_key: 'tk',
  },
  event: {
    sender: { sender_id: { open_id: 'ou_user' }, sender_type: 'user', tenant_key: 'tk' },
    message: {
      message_id: `om_node_${id}`, chat_id: 'oc_node', chat_type: 'p2p', message_type: 'text',
      content: JSON.stringify({ text: '/gsd:progress "quoted" ✓' }), create_time: '1700000000000',
    },
  },
});
const cardV2 = (id, token = VT) => ({
  schema: '2.0',
  header: {
    event_id: `ev-node-card-${id}`, event_type: 'card.action.trigger', token,
    app_id: 'cli_a1b2c3d4e5f60718', tenant_key: 'tk', create_time: '1700000000000',
  },
  event: {
    operator: { open_id: 'ou_user', tenant_key: 'tk' }, token: 'c-1',
    action: { value: { action: 'approval', option: '1' }, tag: 'button' },
    context: { open_message_id: `om_node_card_${id}`, open_chat_id: 'oc_node' },
  },
});
const cardV1 = {
  open_id: 'ou_user', user_id: 'u1', open_message_id: 'om_node_card_v1', open_chat_id: 'oc_node',
  tenant_key: 'tk', token: VT, action: { value: { action: 'approval', option: '3' }, tag: 'button' },
};

async function main(base) {
  // Events: encrypted, signed sha256 with the encrypt key.
  let body = JSON.stringify({ encrypt: encrypt(EK, JSON.stringify(message(1))) });
  let good = signEvent(ts, 'n-1', EK, body);
  await vector(base, { name: 'event_encrypted_signed', path: '/event', body, nonce: 'n-1', signature: good, expect: 'message' });
  await vector(base, { name: 'event_signature_one_byte_changed', path: '/event', body, nonce: 'n-1', signature: oneByteChanged(good, 7), expect: 'message' });
  await vector(base, { name: 'event_ciphertext_one_byte_changed', path: '/event', body: oneByteChanged(body, 20), nonce: 'n-1', signature: good, expect: 'message' });
  await vector(base, { name: 'event_nonce_changed', path: '/event', body, nonce: 'n-2', signature: good, expect: 'message' });
  await vector(base, { name: 'event_signed_with_another_key', path: '/event', body, nonce: 'n-1', signature: signEvent(ts, 'n-1', EK + 'x', body), expect: 'message' });
  await vector(base, { name: 'event_signed_sha1_with_the_token', path: '/event', body, nonce: 'n-1', signature: signCardV1(ts, 'n-1', VT, body), expect: 'message' });
  await vector(base, { name: 'event_unsigned', path: '/event', body, nonce: 'n-1', signature: '', expect: 'message' });

  // 2.0 card callbacks: signed like events, plain or encrypted.
  body = JSON.stringify(cardV2(1));
  good = signEvent(ts, 'n-3', EK, body);
  await vector(base, { name: 'card_v2_signed', path: '/event', body, nonce: 'n-3', signature: good, expect: 'card' });
  await vector(base, { name: 'card_v2_body_one_byte_changed', path: '/event', body: body.replace('"option":"1"', '"option":"2"'), nonce: 'n-3', signature: good, expect: 'card' });
  await vector(base, { name: 'card_v2_signed_sha1_with_the_token', path: '/event', body, nonce: 'n-3', signature: signCardV1(ts, 'n-3', VT, body), expect: 'card' });
  body = JSON.stringify({ encrypt: encrypt(EK, JSON.stringify(cardV2(2))) });
  await vector(base, { name: 'card_v2_encrypted_signed', path: '/event', body, nonce: 'n-4', signature: signEvent(ts, 'n-4', EK, body), expect: 'card' });
  // Rightly signed, but its token is not ours: the Node SDK does not look.
  body = JSON.stringify(cardV2(3, VT + 'x'));
  await vector(base, { name: 'card_v2_signed_wrong_token', path: '/event', body, nonce: 'n-5', signature: signEvent(ts, 'n-5', EK, body), expect: 'card', tokenOk: false });

  // 1.0 card callbacks: signed sha1 with the verification token.
  body = JSON.stringify(cardV1);
  good = signCardV1(ts, 'n-6', VT, body);
  await vector(base, { name: 'card_v1_signed', path: '/card', body, nonce: 'n-6', signature: good, expect: 'card_v1' });
  await vector(base, { name: 'card_v1_signature_one_byte_changed', path: '/card', body, nonce: 'n-6', signature: oneByteChanged(good, -1), expect: 'card_v1' });
  await vector(base, { name: 'card_v1_body_one_byte_changed', path: '/card', body: body.replace('"option":"3"', '"option":"1"'), nonce: 'n-6', signature: good, expect: 'card_v1' });
  await vector(base, { name: 'card_v1_signed_like_an_event', path: '/card', body, nonce: 'n-6', signature: signEvent(ts, 'n-6', EK, body), expect: 'card_v1' });
  await vector(base, { name: 'card_v1_unsigned', path: '/card', body, nonce: 'n-6', signature: '', expect: 'card_v1' });
  // In a 1.0 callback `token` is the card's update token (`c-…`), not the
  // verification token; the signature carries the verification token.
  body = JSON.stringify({ ...cardV1, open_message_id: 'om_node_card_v1_c', token: 'c-0123456789abcdef' });
  await vector(base, { name: 'card_v1_signed_with_an_update_token', path: '/card', body, nonce: 'n-10', signature: signCardV1(ts, 'n-10', VT, body), expect: 'card_v1' });

  // url_verification, plain and encrypted, unsigned: answered by the SDK's
  // generateChallenge, which does not check the token.
  body = JSON.stringify({ challenge: 'ch-plain', token: VT, type: 'url_verification' });
  await vector(base, { name: 'url_verification_plain', path: '/card', body, nonce: 'n-7', signature: '', expect: null });
  body = JSON.stringify({ encrypt: encrypt(EK, JSON.stringify({ challenge: 'ch-encrypted', token: VT, type: 'url_verification' })) });
  await vector(base, { name: 'url_verification_encrypted', path: '/event', body, nonce: 'n-8', signature: '', expect: null });
  body = JSON.stringify({ challenge: 'ch-wrong-token', token: VT + 'x', type: 'url_verification' });
  await vector(base, { name: 'url_verification_wrong_token', path: '/event', body, nonce: 'n-9', signature: '', expect: null, tokenOk: false });
}

const server = http.createServer((req, res) => {
  const route = req.url === '/card' ? onCardV1 : onEvent;
  route(req, res).catch((e) => {
    res.statusCode = 500;
    res.end(String(e));
  });
});
server.listen(0, '127.0.0.1', async () => {
  try {
    await main(`http://127.0.0.1:${server.address().port}`);
  } catch (e) {
    fail(e && e.stack ? e.stack : String(e));
  }
  const version = require('@larksuiteoapi/node-sdk/package.json').version;
  process.stdout.write(JSON.stringify({ sdk: `@larksuiteoapi/node-sdk ${version}`, vectors }) + '\n');
  server.close();
});
