//! Structured output that survives weak models: ask for JSON matching a schema, validate it
//! by deserialising into the expected type, and on failure repair once by showing the model
//! its error. A second failure is reported, never silently ignored.

use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, LanguageModel, ResponseFormat};
use memory_core::{MemoryError, Result};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::accounting::Meter;

/// A validated reply and whether it needed the repair round.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Structured<T> {
    pub value: T,
    pub repaired: bool,
}

/// Strips a Markdown code fence and any prose around the outermost JSON object.
fn json_slice(text: &str) -> &str {
    let t = text.trim();
    let t = t
        .strip_prefix("```json")
        .or_else(|| t.strip_prefix("```"))
        .map_or(t, |rest| rest.trim_end().trim_end_matches("```"));
    match (t.find('{'), t.rfind('}')) {
        (Some(start), Some(end)) if start < end => &t[start..=end],
        _ => t,
    }
}

fn parse<T: DeserializeOwned>(text: &str) -> std::result::Result<T, String> {
    serde_json::from_str(json_slice(text)).map_err(|e| e.to_string())
}

/// The most output tokens each stage may generate: sized to its reply, so that a model that
/// never closes its JSON stops in seconds instead of running into the timeout (and its
/// retries). A stage not listed gets the last value.
pub(crate) const STAGE_OUTPUT_TOKENS: &[(&str, u32)] = &[
    ("extraction", 4_096),
    ("extraction_detail", 4_096),
    ("verification", 2_048),
    ("classification", 3_072),
    ("query_analysis", 512),
    ("synthesis", 1_024),
    ("", 2_048),
];

/// The output limit of a stage (see [`STAGE_OUTPUT_TOKENS`]).
pub(crate) fn stage_output_tokens(stage: &str) -> u32 {
    STAGE_OUTPUT_TOKENS
        .iter()
        .find(|(name, _)| *name == stage)
        .or(STAGE_OUTPUT_TOKENS.last())
        .map_or(2_048, |(_, limit)| *limit)
}

/// One structured call: `system` + `user` prompts, a JSON schema, one repair attempt, the
/// stage's output limit.
pub(crate) async fn ask_json<T: DeserializeOwned>(
    meter: &Meter,
    stage: &str,
    model: &dyn LanguageModel,
    system: &str,
    user: String,
    schema: Value,
) -> Result<Structured<T>> {
    let mut request = ChatRequest {
        messages: vec![
            ChatMessage::new(ChatRole::System, system),
            ChatMessage::new(ChatRole::User, user),
        ],
        temperature: Some(0.0),
        max_tokens: Some(stage_output_tokens(stage)),
        response_format: ResponseFormat::JsonSchema {
            name: stage.to_owned(),
            schema,
        },
        ..ChatRequest::default()
    };
    let first = meter.chat(stage, model, request.clone()).await?;
    let error = match parse::<T>(&first.content) {
        Ok(value) => {
            return Ok(Structured {
                value,
                repaired: false,
            });
        }
        Err(error) => error,
    };
    tracing::debug!(stage, %error, "structured output invalid; asking for a repair");
    request
        .messages
        .push(ChatMessage::new(ChatRole::Assistant, first.content));
    request.messages.push(ChatMessage::new(
        ChatRole::User,
        format!(
            "Your reply did not match the required JSON schema ({error}). Reply again with only \
             the corrected JSON object, no prose and no code fence."
        ),
    ));
    let second = meter.chat(stage, model, request).await?;
    parse::<T>(&second.content)
        .map(|value| Structured {
            value,
            repaired: true,
        })
        .map_err(|e| {
            MemoryError::serialization(format!(
                "{stage}: the model's output did not match the schema twice (last error: {e})"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_and_prose_around_the_object_are_ignored() {
        assert_eq!(json_slice("```json\n{\"a\":1}\n```"), "{\"a\":1}");
        assert_eq!(
            json_slice("Sure! {\"a\": {\"b\": 2}} hope it helps"),
            "{\"a\": {\"b\": 2}}"
        );
        assert_eq!(json_slice("nothing"), "nothing");
    }
}
