//! The official Feishu SDKs as oracles: the Node SDK's `WSClient` against the
//! local Feishu server, and (in `webhook_vectors.py` and `.js`) each SDK's
//! own decryption, signature checks and webhook handlers judging the vectors
//! clawmux must accept or refuse.
//!
//! The SDKs are installed on first use into `target/feishu-sdk` (npm into a
//! prefix, pip into a target dir), pinned to the versions checked against.
//! A test skips, saying so on stderr, only when node/npm or python3 is
//! missing; a failed install fails the test.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;
use tokio::time::{Duration, Instant, timeout_at};

use std::sync::Arc;

use clawmux::feishu::{Domain, FeishuConfig, Intake, IntakeEvent, MemoryDedupe, ws};

use crate::support::fake_feishu::{APP_ID, APP_SECRET, FakeFeishu};

/// The Node SDK version the local server was checked against.
pub const NODE_SDK_VERSION: &str = "1.74.0";
/// The Python SDK version the webhook vectors were checked against.
pub const PYTHON_SDK_VERSION: &str = "1.7.5";

/// One install at a time (tests run in parallel threads).
static INSTALL: Mutex<()> = Mutex::new(());

fn sdk_root() -> PathBuf {
    match std::env::var_os("CLAWMUX_FEISHU_SDK_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("target/feishu-sdk"),
    }
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `node_modules` holding `@larksuiteoapi/node-sdk`, installed if needed;
/// the test fails when node or npm is missing.
pub fn node_sdk() -> PathBuf {
    if !runs("node", "--version") || !runs("npm", "--version") {
        crate::support::missing("Node.js with npm", "apt-get install nodejs npm");
    }
    let prefix = sdk_root().join("node");
    let modules = prefix.join("node_modules");
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let package = modules.join("@larksuiteoapi/node-sdk/package.json");
    let installed = std::fs::read_to_string(&package)
        .ok()
        .and_then(|p| serde_json::from_str::<Value>(&p).ok())
        .is_some_and(|p| p["version"] == NODE_SDK_VERSION);
    if !installed {
        let status = Command::new("npm")
            .args(["install", "--no-fund", "--no-audit", "--prefix"])
            .arg(&prefix)
            .arg(format!("@larksuiteoapi/node-sdk@{NODE_SDK_VERSION}"))
            .status()
            .expect("run npm");
        assert!(status.success(), "npm install of the Node SDK failed");
    }
    modules
}

/// A directory to put on PYTHONPATH with `lark_oapi`, installed if needed;
/// the test fails when python3 is missing.
pub fn python_sdk() -> PathBuf {
    if !runs("python3", "--version") {
        crate::support::missing("python3", "apt-get install python3");
    }
    let target = sdk_root().join("python");
    let _guard = INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let version = Command::new("python3")
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('lark-oapi'))",
        ])
        .env("PYTHONPATH", &target)
        .env("PYTHONNOUSERSITE", "1")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if version.as_deref() != Some(PYTHON_SDK_VERSION) {
        let status = Command::new("python3")
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--upgrade",
                "--target",
            ])
            .arg(&target)
            .arg(format!("lark-oapi=={PYTHON_SDK_VERSION}"))
            .status()
            .expect("run pip");
        assert!(status.success(), "pip install of lark-oapi failed");
    }
    target
}

/// The official Node SDK running `tests/oracles/feishu_sdk/<script>` against
/// `fake` (its URL, app id and secret first, then `args`), its modules
/// from `modules`; stdout piped for [`lines_of`].
fn node_script(
    script: &str,
    fake: &FakeFeishu,
    modules: &Path,
    args: &[&std::ffi::OsStr],
) -> tokio::process::Child {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/oracles/feishu_sdk")
        .join(script);
    tokio::process::Command::new("node")
        .arg(&script)
        .args([fake.base_url().as_str(), APP_ID, APP_SECRET])
        .args(args)
        .env("NODE_PATH", modules)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start node")
}

/// The JSON lines a child prints, as they come.
fn lines_of(child: &mut tokio::process::Child) -> mpsc::Receiver<Value> {
    let stdout = child.stdout.take().expect("piped stdout");
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && tx.send(v).await.is_err()
            {
                return;
            }
        }
    });
    rx
}

/// The next printed line of `kind`, within the deadline.
async fn next_of(rx: &mut mpsc::Receiver<Value>, kind: &str, deadline: Instant) -> Value {
    loop {
        match timeout_at(deadline, rx.recv()).await {
            Ok(Some(v)) if v["kind"] == kind => return v,
            Ok(Some(v)) if v["kind"] == "error" => panic!("the Node SDK client failed: {v}"),
            Ok(Some(_)) => {}
            Ok(None) => panic!("the Node SDK client exited before printing {kind}"),
            Err(_) => panic!("no {kind} from the Node SDK client in time"),
        }
    }
}

/// How long the Node client may take to start and connect (it loads the
/// whole SDK) and to answer each pushed event.
const NODE_WAIT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn the_official_node_ws_client_works_against_the_local_server() {
    let modules = node_sdk();
    let fake = FakeFeishu::start().await;
    // Pings every second, so the client's pings and our pongs are seen.
    fake.set_client_config(1, -1, 1, 0);
    let mut child = node_script("ws_client.js", &fake, &modules, &[]);
    let mut lines = lines_of(&mut child);
    next_of(&mut lines, "ready", Instant::now() + NODE_WAIT).await;

    // A chat message: the SDK's dispatcher gets it and the frame is acked.
    let msg = fake.push_message("oc_sdk", "ou_user", "/gsd:progress");
    let ack = fake
        .wait_ack(&msg.frame_id, NODE_WAIT)
        .await
        .expect("the Node SDK acked the message frame");
    assert_eq!(ack.code, 200);
    assert!(ack.biz_rt.is_some(), "ack without biz_rt");
    let got = next_of(&mut lines, "message", Instant::now() + NODE_WAIT).await;
    assert_eq!(got["message_id"], msg.message_id.as_str());
    assert_eq!(got["text"], "@_user_1 /gsd:progress");

    // A card click, as Feishu sends it (a type=event frame): routed through
    // the SDK's event dispatcher, its answer comes back in the ack.
    let click = fake.push_card_action_frame("ou_user", "om_card", json!({"action": "approval"}));
    let ack = fake
        .wait_ack(&click.frame_id, NODE_WAIT)
        .await
        .expect("the Node SDK acked the card action frame");
    assert_eq!(ack.code, 200);
    assert_eq!(
        ack.answer,
        json!({"toast": {"type": "success", "content": "from the node sdk"}})
    );
    let got = next_of(&mut lines, "card", Instant::now() + NODE_WAIT).await;
    assert_eq!(got["open_message_id"], "om_card");
    assert_eq!(got["value"], json!({"action": "approval"}));

    // Its pings are well formed and answered (our pong is a full ClientConfig
    // it parses; a bad one would log an error and stop nothing, so check
    // the pings themselves).
    let pings = fake
        .wait_until(NODE_WAIT, |f| Some(f.pings()).filter(|(n, _)| *n >= 2))
        .await
        .expect("the Node SDK pinged");
    assert_eq!(pings.1, 0, "malformed pings from the Node SDK");
    assert_eq!(fake.unacked(), 0);
    child.kill().await.ok();
}

/// The official Node SDK's image upload (`client.im.image.create`) is
/// taken by the local server, and clawmux's request has the same shape:
/// the same multipart field names, `image_type=message`, and image bytes
/// that arrive unchanged.
#[tokio::test]
async fn image_uploads_have_the_official_node_sdks_shape() {
    let modules = node_sdk();
    let fake = FakeFeishu::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let png = {
        let mut out = Vec::new();
        let mut enc = png::Encoder::new(&mut out, 2, 1);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().expect("png header");
        w.write_image_data(&[255, 0, 0, 0, 0, 255])
            .expect("png data");
        w.finish().expect("png end");
        out
    };
    let file = dir.path().join("screen.png");
    std::fs::write(&file, &png).expect("write png");
    let mut child = node_script("image_upload.js", &fake, &modules, &[file.as_os_str()]);
    let mut lines = lines_of(&mut child);
    let got = next_of(&mut lines, "answer", Instant::now() + NODE_WAIT).await;
    let sdk_key = got
        .pointer("/res/image_key")
        .or_else(|| got.pointer("/res/data/image_key"));
    let ours = clawmux::feishu::Api::new(fake.config())
        .upload_image(&png)
        .await
        .expect("clawmux's upload");
    let uploads = fake.uploaded_images();
    assert_eq!(uploads.len(), 2, "both accepted: {got}");
    assert_eq!(
        sdk_key.and_then(Value::as_str),
        Some(uploads[0].image_key.as_str()),
        "{got}"
    );
    assert_eq!(ours, uploads[1].image_key);
    for u in &uploads {
        assert_eq!(u.image_type, "message");
        assert_eq!(u.bytes, png, "the image arrives unchanged");
        assert!(
            u.part_head
                .contains("Content-Disposition: form-data; name=\"image\""),
            "{}",
            u.part_head
        );
    }
    child.kill().await.ok();
}

/// The official Node SDK's file upload (`client.im.file.create`) and
/// clawmux's (reqwest's multipart form) are both taken by the local
/// server, with the same fields: `file_type`, the same `file_name` (not
/// ASCII here), and bytes that arrive unchanged (every byte value, CR LF
/// and a fake boundary line included).
#[tokio::test]
async fn file_uploads_have_the_official_node_sdks_shape() {
    let modules = node_sdk();
    let fake = FakeFeishu::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes: Vec<u8> = (0..=255u8).collect();
    bytes.extend_from_slice(b"\r\n--not-the-boundary--\r\n\r\n");
    let file = dir.path().join("blob.bin");
    std::fs::write(&file, &bytes).expect("write file");
    let name = "résumé 2026.txt";
    let mut child = node_script(
        "file_upload.js",
        &fake,
        &modules,
        &[file.as_os_str(), name.as_ref()],
    );
    let mut lines = lines_of(&mut child);
    let got = next_of(&mut lines, "answer", Instant::now() + NODE_WAIT).await;
    let sdk_key = got
        .pointer("/res/file_key")
        .or_else(|| got.pointer("/res/data/file_key"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let ours = clawmux::feishu::Api::new(fake.config())
        .upload_file("stream", name, &bytes)
        .await
        .expect("clawmux's upload");
    let files = fake.files();
    assert_eq!(files.len(), 2, "both accepted: {got}");
    let by_key = |k: &str| files.iter().find(|(key, _, _)| key == k).cloned();
    let sdk = by_key(sdk_key.as_deref().unwrap_or_default()).expect("the SDK's file");
    let mine = by_key(&ours).expect("clawmux's file");
    assert_eq!((sdk.1.as_str(), &sdk.2), (name, &bytes), "the SDK's upload");
    assert_eq!(
        (mine.1.as_str(), &mine.2),
        (name, &bytes),
        "clawmux's upload"
    );
    child.kill().await.ok();
}

const VECTOR_KEY: &str = "vector-encrypt-key";
const VECTOR_TOKEN: &str = "vector-verification-token";

/// Every webhook vector the Python SDK judged (both signature schemes,
/// forgeries, url_verification for both) gets the same verdict from
/// clawmux's webhook: accepted ones answered 200 with their event
/// delivered, refused ones 401.
#[tokio::test]
async fn webhook_verdicts_agree_with_the_official_python_sdk() {
    let py = python_sdk();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/feishu_sdk/webhook_vectors.py");
    let out = Command::new("python3")
        .arg(&script)
        .args([VECTOR_KEY, VECTOR_TOKEN])
        .env("PYTHONPATH", &py)
        .env("PYTHONNOUSERSITE", "1")
        .output()
        .expect("run the vector script");
    assert!(
        out.status.success(),
        "vector script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let vectors: Value = serde_json::from_slice(&out.stdout).expect("vectors are JSON");
    assert_eq!(vectors["sdk"], format!("lark-oapi {PYTHON_SDK_VERSION}"));
    let vectors = vectors["vectors"].as_array().expect("a list").clone();
    assert!(vectors.len() >= 10, "{vectors:?}");
    let verdicts: Vec<Verdict> = vectors
        .iter()
        .map(|v| {
            let sdk_answer: Value =
                serde_json::from_str(v["sdk_answer"].as_str().unwrap_or("")).unwrap_or(Value::Null);
            Verdict {
                accept: v["sdk_accepts"] == true,
                challenge: sdk_answer.get("challenge").cloned(),
                event: v["event"].as_str().map(str::to_string),
            }
        })
        .collect();
    feed_vectors(&vectors, &verdicts).await;
}

/// The same with the Node SDK: its AESCipher decrypts every encrypted body,
/// and its own webhook path (adaptDefault in front of its EventDispatcher
/// and CardActionHandler) accepts each good request and refuses each
/// forgery (one byte changed, the other scheme, another key, unsigned).
/// clawmux gives the same verdict on every one, except where it is
/// stricter on purpose: the Node SDK does not check the verification token
/// (not even in url_verification); clawmux, like the Python SDK, does.
#[tokio::test]
async fn webhook_verdicts_agree_with_the_official_node_sdk() {
    let vectors = node_vectors();
    let named = |name: &str| {
        vectors
            .iter()
            .find(|v| v["name"] == name)
            .unwrap_or_else(|| panic!("no vector {name}"))
    };
    // The SDK judged what it had to: the good requests of every kind
    // accepted, their one-byte forgeries refused.
    for good in [
        "event_encrypted_signed",
        "card_v2_signed",
        "card_v2_encrypted_signed",
        "card_v1_signed",
        // A 1.0 callback's `token` is the card's update token (`c-…`).
        "card_v1_signed_with_an_update_token",
        "url_verification_plain",
        "url_verification_encrypted",
    ] {
        assert_eq!(named(good)["sdk_accepts"], true, "{good}");
    }
    for forged in [
        "event_signature_one_byte_changed",
        "event_ciphertext_one_byte_changed",
        "card_v2_body_one_byte_changed",
        "card_v1_signature_one_byte_changed",
        "card_v1_body_one_byte_changed",
        "event_signed_sha1_with_the_token",
        "card_v1_signed_like_an_event",
        "event_unsigned",
    ] {
        assert_eq!(named(forged)["sdk_accepts"], false, "{forged}");
    }
    // Where the Node SDK is laxer: it answers a challenge with the wrong token.
    assert_eq!(named("url_verification_wrong_token")["sdk_accepts"], true);
    let verdicts: Vec<Verdict> = vectors
        .iter()
        .map(|v| Verdict {
            accept: v["sdk_accepts"] == true && v["token_ok"] == true,
            challenge: Some(v["challenge"].clone()).filter(|c| !c.is_null()),
            event: v["event"].as_str().map(str::to_string),
        })
        .collect();
    feed_vectors(&vectors, &verdicts).await;
}

/// The vectors the Node SDK judged (tests/oracles/feishu_sdk/webhook_vectors.js);
fn node_vectors() -> Vec<Value> {
    let modules = node_sdk();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/feishu_sdk/webhook_vectors.js");
    let out = Command::new("node")
        .arg(&script)
        .args([VECTOR_KEY, VECTOR_TOKEN])
        .env("NODE_PATH", &modules)
        .output()
        .expect("run the vector script");
    assert!(
        out.status.success(),
        "vector script failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let vectors: Value = serde_json::from_slice(&out.stdout).expect("vectors are JSON");
    assert_eq!(
        vectors["sdk"],
        format!("@larksuiteoapi/node-sdk {NODE_SDK_VERSION}")
    );
    vectors["vectors"].as_array().expect("a list").clone()
}

/// What clawmux must do with one vector.
struct Verdict {
    accept: bool,
    /// The challenge to answer (url_verification).
    challenge: Option<Value>,
    /// The event it delivers: `message`, `card` or `card_v1`.
    event: Option<String>,
}

/// Posts every vector to clawmux's webhook (through the Intake, as Feishu
/// would) and checks its answer against `verdicts`: accepted ones answered
/// 200 (with the challenge, or their event delivered), refused ones 401
/// with nothing delivered.
async fn feed_vectors(vectors: &[Value], verdicts: &[Verdict]) {
    let mut config = FeishuConfig::new(
        APP_ID,
        APP_SECRET,
        Domain::Custom("http://127.0.0.1:9".into()),
    );
    config.encrypt_key = Some(VECTOR_KEY.into());
    config.verification_token = Some(VECTOR_TOKEN.into());
    let mut intake = Intake::webhook(
        config,
        "127.0.0.1:0".parse().expect("addr"),
        Arc::new(MemoryDedupe::default()),
    )
    .await
    .expect("bind webhook");
    let url = format!(
        "http://{}/webhook/event",
        intake.local_addr().expect("addr")
    );
    // Delivered events, as (kind, message id); card actions answered at once.
    let (seen_tx, mut seen) = mpsc::channel::<(String, String)>(16);
    tokio::spawn(async move {
        while let Some(ev) = intake.recv().await {
            let item = match ev {
                IntakeEvent::MessageReceived(m) => ("message".to_string(), m.message_id),
                IntakeEvent::CardAction(a) => {
                    let _ = a.respond.send(Default::default());
                    ("card".to_string(), a.message_id)
                }
                IntakeEvent::ClockSkew { skew_secs, .. } => {
                    ("clock_skew".to_string(), skew_secs.to_string())
                }
            };
            if seen_tx.send(item).await.is_err() {
                return;
            }
        }
    });

    let http = reqwest::Client::new();
    let (mut accepted, mut refused) = (0, 0);
    for (v, verdict) in vectors.iter().zip(verdicts) {
        let name = v["name"].as_str().unwrap_or_default();
        let mut req = http
            .post(&url)
            .header("content-type", "application/json")
            .header(
                "X-Lark-Request-Timestamp",
                v["timestamp"].as_str().unwrap_or_default(),
            )
            .header(
                "X-Lark-Request-Nonce",
                v["nonce"].as_str().unwrap_or_default(),
            )
            .body(v["body"].as_str().unwrap_or_default().to_string());
        let signature = v["signature"].as_str().unwrap_or_default();
        if !signature.is_empty() {
            req = req.header("X-Lark-Signature", signature);
        }
        let resp = req.send().await.expect("post a vector");
        let status = resp.status().as_u16();
        let answer = resp.text().await.unwrap_or_default();
        if verdict.accept {
            accepted += 1;
            assert_eq!(
                status, 200,
                "{name}: the SDK accepts it, clawmux answered {status} {answer}"
            );
            if let Some(challenge) = &verdict.challenge {
                let ours: Value = serde_json::from_str(&answer).expect("a JSON answer");
                assert_eq!(ours["challenge"], *challenge, "{name}");
            }
            if let Some(kind) = verdict.event.as_deref() {
                let kind = if kind == "card_v1" { "card" } else { kind };
                let got = timeout_at(Instant::now() + Duration::from_secs(10), seen.recv())
                    .await
                    .expect("the event is delivered")
                    .expect("intake running");
                assert_eq!(got.0, kind, "{name}");
            }
        } else {
            refused += 1;
            assert_eq!(
                status, 401,
                "{name}: refused (by the SDK or for its token), clawmux answered {status} {answer}"
            );
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "{accepted} accepted, {refused} refused"
    );
    // Nothing refused slipped through.
    assert!(seen.try_recv().is_err(), "an extra event was delivered");
}

/// The local server's handshake refusals, judged by the official Python
/// SDK's long-connection client: 514 with `handshake-autherrcode`
/// 1000040350 (too many connections) and 403 make it give up at once
/// (ClientException), as clawmux does; 514 with another auth code is
/// retried, as clawmux does.
#[tokio::test]
async fn the_python_ws_client_sorts_the_local_handshake_refusals_as_clawmux_does() {
    let py = python_sdk();
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracles/feishu_sdk/ws_refusal.py");
    let start = |fake: &FakeFeishu| {
        tokio::process::Command::new("python3")
            .arg(&script)
            .args([fake.base_url().as_str(), APP_ID, APP_SECRET])
            .env("PYTHONPATH", &py)
            .env("PYTHONNOUSERSITE", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start python3")
    };
    for (status, code) in [(514, 1000040350), (403, 0)] {
        let fake = FakeFeishu::start().await;
        fake.refuse_handshake(Some((status, code, "refused")));
        let mut child = start(&fake);
        let mut lines = lines_of(&mut child);
        let got = next_of(
            &mut lines,
            "gave_up",
            Instant::now() + Duration::from_secs(30),
        )
        .await;
        assert_eq!(got["class"], "ClientException", "{status}/{code}: {got}");
        assert_eq!(fake.endpoint_requests(), 1, "{status}/{code}: no retry");
        let refused = ws::check_endpoint(&fake.config())
            .await
            .expect_err("refused");
        assert!(
            refused.is_fatal(),
            "clawmux agrees: {status}/{code} is final"
        );
    }
    let fake = FakeFeishu::start().await;
    fake.set_client_config(120, -1, 0, 0);
    fake.refuse_handshake(Some((514, 1000040343, "try again")));
    let mut child = start(&fake);
    let retried = fake
        .wait_until(Duration::from_secs(30), |f| {
            Some(()).filter(|_| f.endpoint_requests() >= 2)
        })
        .await;
    child.kill().await.ok();
    assert!(retried.is_some(), "the SDK retries a 514 with another code");
    let refused = ws::check_endpoint(&fake.config())
        .await
        .expect_err("refused");
    assert!(!refused.is_fatal(), "clawmux agrees: retried");
}
