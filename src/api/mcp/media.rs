//! The MCP tools whose routes do not speak JSON: `get_attachment` (the bytes of an
//! attachment: image content for images, an embedded blob resource otherwise) and
//! `send_file` (base64 in, a multipart upload out). Each is still exactly one request
//! through the application as the caller, so it passes the route's own checks.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use poem::http::{header, HeaderValue, Method, StatusCode};
use poem::Request;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ResourceContents};
use rmcp::ErrorData;
use serde_json::{json, Value};

use super::{route_error, tools::ToolSpec, Core};

/// Largest attachment `get_attachment` returns (base64 in a JSON-RPC answer).
pub const MAX_ATTACHMENT_BYTES: usize = 8 * 1024 * 1024;
/// Largest file `send_file` takes, decoded (its base64 must fit the 1 MiB `/mcp` body).
pub const MAX_SEND_FILE_BYTES: usize = 700 * 1024;
const BOUNDARY: &str = "switchboard-mcp-7f3a9c2e";

fn invalid(why: String) -> ErrorData {
    route_error(StatusCode::BAD_REQUEST, "invalid_request", &why)
}

fn text_arg<'a>(args: &'a JsonObject, name: &str) -> Result<Option<&'a str>, ErrorData> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(invalid(format!("{name}: must be a string"))),
    }
}

/// `durationMs` of `send_file`: a whole number (the route checks its range and names the
/// field when it is out of it).
fn duration_arg(args: &JsonObject) -> Result<Option<u64>, ErrorData> {
    match args.get("durationMs") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| invalid("durationMs: must be a whole number of milliseconds".into())),
    }
}

/// Runs `get_attachment` or `send_file`; `None` for every other tool.
pub async fn call(
    core: &Core,
    spec: &ToolSpec,
    args: &JsonObject,
    bearer: HeaderValue,
) -> Option<Result<CallToolResult, ErrorData>> {
    match spec.name {
        "get_attachment" => Some(get_attachment(core, spec, args, bearer).await),
        "send_file" => Some(send_file(core, spec, args, bearer).await),
        _ => None,
    }
}

async fn get_attachment(
    core: &Core,
    spec: &ToolSpec,
    args: &JsonObject,
    bearer: HeaderValue,
) -> Result<CallToolResult, ErrorData> {
    let (path, _) = spec.request(args).map_err(invalid)?;
    // Only the thumbnail flag of the route's query is passed on.
    let path = path.split('?').next().unwrap_or_default();
    let path = if args.get("thumbnail").and_then(Value::as_bool) == Some(true) {
        format!("{path}?thumbnail=true")
    } else {
        path.to_owned()
    };
    let req = Request::builder()
        .method(Method::GET)
        .uri(path.parse().map_err(|_| invalid("path: invalid".into()))?)
        .header(header::AUTHORIZATION, bearer)
        .finish();
    let resp = match core.call(req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let ctype = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/octet-stream")
        .to_owned();
    let bytes = resp
        .into_body()
        .into_bytes_limit(MAX_ATTACHMENT_BYTES)
        .await
        .map_err(|_| {
            route_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                &format!("the attachment is larger than {MAX_ATTACHMENT_BYTES} bytes (the MCP limit); download it from the route"),
            )
        })?;
    if !status.is_success() {
        return Err(refusal(
            status,
            &serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        ));
    }
    let block = attachment_block(args, &ctype, STANDARD.encode(&bytes));
    let mut result = CallToolResult::success(vec![block]);
    result.structured_content = Some(json!({"mimetype": ctype, "size": bytes.len()}));
    Ok(result)
}

/// The route's own refusal (its status, code and message) as the tool's error.
fn refusal(status: StatusCode, body: &Value) -> ErrorData {
    let code = body["error"].as_str().unwrap_or("upstream_error");
    let message = body["message"].as_str().unwrap_or("the route failed");
    route_error(status, code, message)
}

/// Image content for an image, an embedded blob resource named by the event otherwise.
fn attachment_block(args: &JsonObject, ctype: &str, data: String) -> ContentBlock {
    if ctype.starts_with("image/") {
        return ContentBlock::image(data, ctype.to_owned());
    }
    let event = args
        .get("eventId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ContentBlock::resource(ResourceContents::BlobResourceContents {
        uri: format!(
            "switchboard:media/{}",
            crate::clients::matrix::encode(event)
        ),
        mime_type: Some(ctype.to_owned()),
        blob: data,
        meta: None,
    })
}

async fn send_file(
    core: &Core,
    spec: &ToolSpec,
    args: &JsonObject,
    bearer: HeaderValue,
) -> Result<CallToolResult, ErrorData> {
    for name in spec.required {
        if args.get(*name).is_none_or(Value::is_null) {
            return Err(invalid(format!("{name}: is required")));
        }
    }
    let room = text_arg(args, "roomId")?.unwrap_or_default();
    let bytes = decoded_file(args)?;
    let body = multipart_body(args, &bytes)?;
    let room =
        crate::clients::segment::segment("roomId", room).map_err(|e| invalid(e.to_string()))?;
    let path = format!("/api/rooms/{room}/media");
    let req = Request::builder()
        .method(Method::POST)
        .uri(
            path.parse()
                .map_err(|_| invalid("roomId: invalid".into()))?,
        )
        .header(header::AUTHORIZATION, bearer)
        .content_type(&format!("multipart/form-data; boundary={BOUNDARY}"))
        .body(body);
    let resp = match core.call(req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let status = resp.status();
    let bytes = resp.into_body().into_bytes().await.unwrap_or_default();
    let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if !status.is_success() {
        return Err(refusal(status, &value));
    }
    let text = serde_json::to_string_pretty(&value).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
    result.structured_content = Some(value);
    Ok(result)
}

/// The file of `send_file`: its base64 `data`, at most [`MAX_SEND_FILE_BYTES`] decoded.
fn decoded_file(args: &JsonObject) -> Result<Vec<u8>, ErrorData> {
    let data = text_arg(args, "data")?.unwrap_or_default();
    if data.len() > MAX_SEND_FILE_BYTES.div_ceil(3) * 4 + 4 {
        return Err(invalid(format!(
            "data: at most {MAX_SEND_FILE_BYTES} bytes (decoded)"
        )));
    }
    STANDARD
        .decode(data.trim())
        .map_err(|_| invalid("data: must be standard base64".into()))
}

/// The multipart form of the media route: the optional text fields, then the file (its
/// name and type stripped of what would break the part's headers).
fn multipart_body(args: &JsonObject, bytes: &[u8]) -> Result<Vec<u8>, ErrorData> {
    let name = text_arg(args, "name")?.unwrap_or("file");
    let mimetype = text_arg(args, "mimetype")?.unwrap_or("");
    let mut fields: Vec<(&str, String)> = Vec::new();
    for field in ["txnId", "caption", "replyTo"] {
        if let Some(v) = text_arg(args, field)? {
            fields.push((field, v.to_owned()));
        }
    }
    if let Some(ms) = duration_arg(args)? {
        fields.push(("durationMs", ms.to_string()));
    }
    let mut body = Vec::with_capacity(bytes.len() + 1024);
    for (field, v) in fields {
        body.extend_from_slice(
            format!(
                "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"{field}\"\r\n\r\n{v}\r\n"
            )
            .as_bytes(),
        );
    }
    let safe_name: String = name
        .chars()
        .filter(|c| !c.is_control() && *c != '"')
        .collect();
    let safe_type: String = mimetype.chars().filter(|c| !c.is_control()).collect();
    body.extend_from_slice(
        format!(
            "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{safe_name}\"\r\nContent-Type: {safe_type}\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{BOUNDARY}--\r\n").as_bytes());
    Ok(body)
}
