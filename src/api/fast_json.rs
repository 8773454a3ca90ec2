//! [`FastJson`]: a JSON response body written once (and cacheable) but documented like
//! poem-openapi's `Json<S>`.

use std::marker::PhantomData;

use bytes::Bytes;
use poem::IntoResponse;
use poem_openapi::payload::{Json, Payload};
use poem_openapi::registry::{MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::{ToJSON, Type};
use poem_openapi::ApiResponse;
use serde::Serialize;

use crate::error::AppError;
use crate::services::pages::Page;

/// A JSON body serialized directly with serde and documented with the OpenAPI schema of
/// `S`. The history route is hot: poem-openapi's `Json` first builds a `serde_json::Value`
/// tree of the whole page, and needs owned values.
pub struct FastJson<S> {
    body: Bytes,
    /// A cached page that may be sent gzip-compressed: the outermost layer
    /// ([`super::observe`]) picks the representation the request accepts.
    page: Option<Page>,
    schema: PhantomData<fn() -> S>,
}

impl<S> FastJson<S> {
    pub fn new(value: &impl Serialize, size_hint: usize) -> Result<Self, AppError> {
        let mut body = Vec::with_capacity(size_hint);
        serde_json::to_writer(&mut body, value).map_err(AppError::internal)?;
        Ok(Self::from_bytes(body.into()))
    }

    /// The body of a poem-openapi object, written as `Json` would write it (for pages that
    /// are rendered once and cached).
    pub fn object_bytes(value: &impl ToJSON) -> Result<Bytes, AppError> {
        let value = value
            .to_json()
            .ok_or_else(|| AppError::internal("response not representable as JSON"))?;
        serde_json::to_vec(&value)
            .map(Bytes::from)
            .map_err(AppError::internal)
    }

    /// A body already written (e.g. a cached page).
    pub fn from_bytes(body: Bytes) -> Self {
        Self {
            body,
            page: None,
            schema: PhantomData,
        }
    }

    /// A page of the page cache: its body, or its gzip form for requests that accept it.
    pub fn from_page(page: Page) -> Self {
        Self {
            body: page.body.clone(),
            page: page.compressible().then_some(page),
            schema: PhantomData,
        }
    }
}

impl<S: Type> Payload for FastJson<S> {
    const CONTENT_TYPE: &'static str = "application/json; charset=utf-8";

    fn schema_ref() -> MetaSchemaRef {
        S::schema_ref()
    }

    fn register(registry: &mut Registry) {
        S::register(registry);
    }
}

impl<S> IntoResponse for FastJson<S> {
    fn into_response(self) -> poem::Response {
        let mut resp = poem::Response::builder()
            .content_type("application/json; charset=utf-8")
            .body(self.body);
        if let Some(page) = self.page {
            resp.extensions_mut().insert(page);
        }
        resp
    }
}

/// Documented exactly like `Json<S>`.
impl<S: Type + ToJSON> ApiResponse for FastJson<S> {
    fn meta() -> MetaResponses {
        <Json<S> as ApiResponse>::meta()
    }

    fn register(registry: &mut Registry) {
        S::register(registry);
    }
}
