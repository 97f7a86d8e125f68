"""Webhook vectors judged by the official Python SDK (lark-oapi).

Usage: python3 webhook_vectors.py <encrypt_key> <verification_token>

Builds signed (and forged) webhook requests for both signature schemes:
events and 2.0 callbacks (sha256 with the encrypt key) and old 1.0 card
callbacks (sha1 with the verification token), plus url_verification for
both. Every request is run through the SDK's own handlers
(EventDispatcherHandler.do, CardActionHandler.do); the vector records what
the SDK did with it. Prints {"vectors": [...]} as JSON; clawmux must agree
with the SDK on every one (tests/oracles/feishu_sdk.rs).
"""

import base64
import hashlib
import json
import os
import sys
import time

from Crypto.Cipher import AES

import lark_oapi as lark
from lark_oapi.card.action_handler import CardActionHandler
from lark_oapi.core.model import RawRequest
from lark_oapi.core.utils import AESCipher
from lark_oapi.event.callback.model.p2_card_action_trigger import P2CardActionTriggerResponse

lark.logger.setLevel(50)  # the forged vectors would log stack traces

EK, VT = sys.argv[1], sys.argv[2]


def encrypt(key, plain):
    """Feishu's encryption: AES-256-CBC, key sha256(encrypt key), IV first."""
    k = hashlib.sha256(key.encode()).digest()
    iv = os.urandom(16)
    pad = 16 - len(plain) % 16
    ct = AES.new(k, AES.MODE_CBC, iv).encrypt(plain + bytes([pad]) * pad)
    out = base64.b64encode(iv + ct).decode()
    # The SDK's own decryption must give the plaintext back.
    assert AESCipher(key).decrypt_str(out).encode() == plain
    return out


def sign_event(ts, nonce, key, body):
    return hashlib.sha256((ts + nonce + key).encode() + body).hexdigest()


def sign_card_v1(ts, nonce, token, body):
    return hashlib.sha1((ts + nonce + token).encode() + body).hexdigest()


handled = []


def event_handler():
    return (
        lark.EventDispatcherHandler.builder(EK, VT)
        .register_p2_im_message_receive_v1(lambda d: handled.append("message"))
        .register_p2_card_action_trigger(
            lambda d: handled.append("card") or P2CardActionTriggerResponse({"toast": {"type": "info", "content": "ok"}}))
        .build()
    )


def card_v1_handler():
    return CardActionHandler.builder(EK, VT).register(lambda c: handled.append("card_v1")).build()


def judge(handler, body, ts, nonce, signature):
    req = RawRequest()
    req.uri = "/webhook/event"
    req.body = body
    req.headers = {
        "X-Lark-Request-Timestamp": ts,
        "X-Lark-Request-Nonce": nonce,
        "X-Lark-Signature": signature,
    }
    handled.clear()
    resp = handler.do(req)
    content = resp.content.decode() if resp.content else ""
    return resp.status_code, content, list(handled)


ts = str(int(time.time()))
vectors = []


def vector(name, handler, body, signature, nonce="nonce-1", expect=None):
    status, content, got = judge(handler, body, ts, nonce, signature)
    accepted = status == 200
    if expect is not None:
        assert got == [expect] if accepted else got == [], (name, got)
    vectors.append(
        {
            "name": name,
            "body": body.decode(),
            "timestamp": ts,
            "nonce": nonce,
            "signature": signature,
            "sdk_accepts": accepted,
            "sdk_answer": content,
            "event": expect if accepted else None,
        }
    )


message = {
    "schema": "2.0",
    "header": {"event_id": "ev-py-1", "event_type": "im.message.receive_v1", "create_time": "1700000000000",
               "token": VT, "app_id": "cli_a1b2c3d4e5f60718", "tenant_key": "tk"},
    "event": {
        "sender": {"sender_id": {"open_id": "ou_user"}, "sender_type": "user", "tenant_key": "tk"},
        "message": {"message_id": "om_py_1", "chat_id": "oc_py", "chat_type": "p2p", "message_type": "text",
                    "content": json.dumps({"text": "/gsd:progress \"quoted\""}), "create_time": "1700000000000"},
    },
}
card_v2 = {
    "schema": "2.0",
    "header": {"event_id": "ev-py-2", "event_type": "card.action.trigger", "token": VT,
               "app_id": "cli_a1b2c3d4e5f60718", "tenant_key": "tk", "create_time": "1700000000000"},
    "event": {"operator": {"open_id": "ou_user", "tenant_key": "tk"}, "token": "c-1",
              "action": {"value": {"action": "approval", "option": "1"}, "tag": "button"},
              "context": {"open_message_id": "om_card_2", "open_chat_id": "oc_py"}},
}
card_v1 = {"open_id": "ou_user", "user_id": "u1", "open_message_id": "om_card_1", "open_chat_id": "oc_py",
           "tenant_key": "tk", "token": VT, "action": {"value": {"action": "approval", "option": "3"}, "tag": "button"}}

# Events: encrypted and signed with the encrypt key.
enc = json.dumps({"encrypt": encrypt(EK, json.dumps(message).encode())}).encode()
vector("event_encrypted_signed", event_handler(), enc, sign_event(ts, "nonce-1", EK, enc), expect="message")
vector("event_signed_with_wrong_key", event_handler(), enc, sign_event(ts, "nonce-1", EK + "x", enc), expect="message")
vector("event_signed_with_the_token_sha1", event_handler(), enc, sign_card_v1(ts, "nonce-1", VT, enc), expect="message")

# 2.0 card callbacks: plain body, signed like events.
body = json.dumps(card_v2).encode()
vector("card_v2_signed", event_handler(), body, sign_event(ts, "nonce-2", EK, body), "nonce-2", expect="card")
tampered = body.replace(b'"option": "1"', b'"option": "2"')
vector("card_v2_tampered", event_handler(), tampered, sign_event(ts, "nonce-2", EK, body), "nonce-2", expect="card")

# 1.0 card callbacks: signed sha1 with the verification token.
body = json.dumps(card_v1).encode()
vector("card_v1_signed", card_v1_handler(), body, sign_card_v1(ts, "nonce-3", VT, body), "nonce-3", expect="card_v1")
vector("card_v1_signed_like_an_event", card_v1_handler(), body, sign_event(ts, "nonce-3", EK, body), "nonce-3",
       expect="card_v1")
tampered = body.replace(b'"option": "3"', b'"option": "1"')
vector("card_v1_tampered", card_v1_handler(), tampered, sign_card_v1(ts, "nonce-3", VT, body), "nonce-3",
       expect="card_v1")

# 1.0 card callbacks encrypted (the app has an encrypt key): still signed
# only sha1 with the verification token over the body as sent; the SDK's
# card handler decrypts, then checks that.
# (Its own card token: a 1.0 callback's dedupe key is its token.)
card_v1_enc = dict(card_v1, token="c-enc", open_message_id="om_card_3")
enc = json.dumps({"encrypt": encrypt(EK, json.dumps(card_v1_enc).encode())}).encode()
vector("card_v1_encrypted_signed", card_v1_handler(), enc, sign_card_v1(ts, "nonce-4", VT, enc), "nonce-4",
       expect="card_v1")
vector("card_v1_encrypted_signed_like_an_event", card_v1_handler(), enc, sign_event(ts, "nonce-4", EK, enc),
       "nonce-4", expect="card_v1")

# url_verification, for both: unsigned, checked by the token.
body = json.dumps({"challenge": "ch-card", "token": VT, "type": "url_verification"}).encode()
vector("card_v1_url_verification", card_v1_handler(), body, "")
body = json.dumps({"encrypt": encrypt(EK, json.dumps(
    {"challenge": "ch-event", "token": VT, "type": "url_verification"}).encode())}).encode()
vector("event_url_verification_encrypted", event_handler(), body, "")
body = json.dumps({"challenge": "ch-bad", "token": VT + "x", "type": "url_verification"}).encode()
vector("url_verification_wrong_token", card_v1_handler(), body, "")

from importlib.metadata import version

print(json.dumps({"sdk": "lark-oapi " + version("lark-oapi"), "vectors": vectors}))
