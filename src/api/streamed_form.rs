//! A multipart/form-data body handed to its handler unread, so that the handler takes it
//! field by field as it arrives (files are spooled, never buffered whole). The form type
//! `F` only documents the fields in the OpenAPI document. A body that is not multipart is
//! a 400 naming `body`. Used by every upload route (media, mail attachments, room avatars).

use std::marker::PhantomData;

use poem::web::Multipart;
use poem_openapi::registry::{MetaMediaType, MetaRequest, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ExtractParamOptions};

use crate::error::AppError;

/// The unread multipart body (`.0`), documented as the form `F`.
pub struct StreamedForm<F>(pub Multipart, PhantomData<fn() -> F>);

impl<'a, F: Type> ApiExtractor<'a> for StreamedForm<F> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        F::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType {
                content_type: "multipart/form-data",
                schema: F::schema_ref(),
            }],
            required: true,
        })
    }

    async fn from_request(
        request: &'a poem::Request,
        body: &mut poem::RequestBody,
        _param_opts: ExtractParamOptions<Self::ParamType>,
    ) -> poem::Result<Self> {
        <Multipart as poem::FromRequest>::from_request(request, body)
            .await
            .map(|m| Self(m, PhantomData))
            .map_err(|e| AppError::invalid("body", format!("not multipart/form-data: {e}")).into())
    }
}
