//! The fake's `POST /open-apis/im/v1/images`, as Feishu documents it:
//! a tenant token (99991663 otherwise), multipart `image_type` (`message`
//! or `avatar`) and `image` (234001 when either is missing or the type is
//! another), not empty (234010), at most 10 MB (234006), a known image
//! format by its magic bytes (234011), a PNG at most 12000 x 12000 pixels
//! (234039); answers `{"image_key": "img_v3_<n>"}`. A card whose `img`
//! names a key it did not issue is refused like Feishu refuses bad card
//! content (230099).

use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Value, json};

use super::{
    FakeFeishu, St, State_, api_json, card_rejected, multipart_boundary, multipart_parts, refused,
};

/// Feishu's limit on an uploaded image.
pub(super) const MAX_IMAGE_BYTES: usize = 10 * 1024 * 1024;
/// The body the route takes (an image over the limit still reaches the
/// handler, which answers 234006 as Feishu does).
pub(super) const MAX_BODY_BYTES: usize = MAX_IMAGE_BYTES + 2 * 1024 * 1024;
/// Largest side of a non-GIF image.
const MAX_SIDE_PX: u32 = 12_000;

/// One upload the fake took.
#[derive(Debug, Clone, PartialEq)]
pub struct UploadedImage {
    pub image_key: String,
    pub image_type: String,
    pub bytes: Vec<u8>,
    /// The `image` part's own headers (`Content-Disposition`, `Content-Type`).
    pub part_head: String,
}

impl FakeFeishu {
    /// Images uploaded so far, oldest first.
    pub fn uploaded_images(&self) -> Vec<UploadedImage> {
        self.shared.read(|s| s.uploaded_images.clone())
    }
}

pub(super) async fn upload(State(sh): St, headers: HeaderMap, raw: Bytes) -> Response {
    sh.with(|s| {
        if let Some(r) = refused(s, &headers, true) {
            return r;
        }
        let Some(boundary) = multipart_boundary(&headers) else {
            return api_json(234001, "Invalid request param.", Value::Null);
        };
        let parts = multipart_parts(&raw, &boundary);
        let field = |name: &str| parts.iter().find(|(n, _)| n == name).map(|(_, v)| v);
        let (Some(image_type), Some(image)) = (field("image_type"), field("image")) else {
            return api_json(234001, "Invalid request param.", Value::Null);
        };
        let image_type = String::from_utf8_lossy(image_type).into_owned();
        if image_type != "message" && image_type != "avatar" {
            return api_json(234001, "Invalid request param.", Value::Null);
        }
        if image.is_empty() {
            return api_json(234010, "File's size can't be 0.", Value::Null);
        }
        if image.len() > MAX_IMAGE_BYTES {
            return api_json(234006, "The file size exceed the max value.", Value::Null);
        }
        if !known_format(image) {
            return api_json(234011, "Can't regonnize the image format.", Value::Null);
        }
        if png_size(image).is_some_and(|(w, h)| w > MAX_SIDE_PX || h > MAX_SIDE_PX) {
            return api_json(234039, "Image resolution exceeds limit.", Value::Null);
        }
        let image_key = format!("img_v3_{}", s.uploaded_images.len() + 1);
        s.uploaded_images.push(UploadedImage {
            image_key: image_key.clone(),
            image_type,
            bytes: image.clone(),
            part_head: part_head(&raw, "image"),
        });
        api_json(0, "success", json!({"image_key": image_key}))
    })
}

/// The refusal of a card whose `img` names a key this fake did not issue.
pub(super) fn unknown_image_key(s: &State_, card: &Value) -> Option<Response> {
    let mut keys = Vec::new();
    collect_keys(card, &mut keys);
    keys.iter()
        .find(|k| !s.uploaded_images.iter().any(|u| &u.image_key == *k))
        .map(|_| card_rejected("the image key is invalid"))
}

fn collect_keys<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(map) => {
            if map.get("tag").and_then(Value::as_str) == Some("img")
                && let Some(k) = map.get("img_key").and_then(Value::as_str)
            {
                out.push(k);
            }
            map.values().for_each(|v| collect_keys(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}

/// JPEG, PNG, WEBP, GIF, BMP, ICO or TIFF by their first bytes (HEIC is
/// left out: nothing here sends one).
fn known_format(b: &[u8]) -> bool {
    b.starts_with(b"\x89PNG\r\n\x1a\n")
        || b.starts_with(b"\xff\xd8\xff")
        || b.starts_with(b"GIF8")
        || (b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP"))
        || b.starts_with(b"BM")
        || b.starts_with(b"\x00\x00\x01\x00")
        || b.starts_with(b"II*\x00")
        || b.starts_with(b"MM\x00*")
}

/// A PNG's width and height from its IHDR chunk.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    if !b.starts_with(b"\x89PNG\r\n\x1a\n") || b.get(12..16)? != b"IHDR" {
        return None;
    }
    let be = |r: std::ops::Range<usize>| Some(u32::from_be_bytes(b.get(r)?.try_into().ok()?));
    Some((be(16..20)?, be(20..24)?))
}

/// The header lines of the multipart part named `name`.
fn part_head(raw: &[u8], name: &str) -> String {
    let text = String::from_utf8_lossy(raw);
    let marker = format!("name=\"{name}\"");
    let Some(at) = text.find(&marker) else {
        return String::new();
    };
    let start = text[..at].rfind("\r\n").map_or(0, |i| i + 2);
    let end = text[at..].find("\r\n\r\n").map_or(text.len(), |i| at + i);
    text[start..end].to_string()
}
