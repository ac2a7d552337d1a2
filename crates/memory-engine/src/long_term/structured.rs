//! Structured output that survives weak models: ask for JSON matching a schema, validate it
//! by deserialising into the expected type, and on failure repair once by showing the model
//! its error (or, when the reply was cut off at the output limit, asking for a shorter one).
//! A second failure is reported, never silently ignored. This is the only repair layer: the
//! adapter finds the JSON in a reply but never asks twice.

use memory_core::ports::{
    ChatMessage, ChatRequest, ChatResponse, ChatRole, FinishReason, LanguageModel, ResponseFormat,
};
use memory_core::structured::json_in_reply;
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

/// Why a reply could not be used.
enum Unusable {
    /// Generation stopped at `max_tokens`: the JSON is unclosed.
    CutOff,
    /// JSON that does not match the expected type.
    Invalid(String),
}

fn parse<T: DeserializeOwned>(reply: &ChatResponse) -> std::result::Result<T, Unusable> {
    if reply.finish_reason == FinishReason::Length {
        return Err(Unusable::CutOff);
    }
    serde_json::from_str(json_in_reply(&reply.content))
        .map_err(|e| Unusable::Invalid(e.to_string()))
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
    let limit = stage_output_tokens(stage);
    let first = meter.chat(stage, model, request.clone()).await?;
    let instruction = match parse::<T>(&first) {
        Ok(value) => {
            return Ok(Structured {
                value,
                repaired: false,
            });
        }
        Err(Unusable::CutOff) => {
            tracing::debug!(
                stage,
                limit,
                "structured output cut off; asking for a shorter one"
            );
            format!(
                "Your reply was cut off at the limit of {limit} tokens before the JSON was \
                 complete. Reply again with a shorter JSON object that matches the schema: \
                 fewer entries and shorter strings, no prose and no code fence."
            )
        }
        Err(Unusable::Invalid(error)) => {
            tracing::debug!(stage, %error, "structured output invalid; asking for a repair");
            format!(
                "Your reply did not match the required JSON schema ({error}). Reply again with \
                 only the corrected JSON object, no prose and no code fence."
            )
        }
    };
    meter.repair(stage);
    request
        .messages
        .push(ChatMessage::new(ChatRole::Assistant, first.content));
    request
        .messages
        .push(ChatMessage::new(ChatRole::User, instruction));
    let second = meter.chat(stage, model, request).await?;
    parse::<T>(&second)
        .map(|value| Structured {
            value,
            repaired: true,
        })
        .map_err(|e| {
            let last = match e {
                Unusable::CutOff => format!("cut off at the output limit of {limit} tokens"),
                Unusable::Invalid(error) => error,
            };
            MemoryError::serialization(format!(
                "{stage}: the model's output did not match the schema twice (last error: {last})"
            ))
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use memory_testkit::in_memory::ScriptedLanguageModel;
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Answer {
        answer: String,
    }

    fn schema() -> Value {
        serde_json::json!({"type": "object"})
    }

    /// Prose around the object costs no second round (one repair layer, which finds the JSON
    /// the same way the adapter does).
    #[tokio::test]
    async fn prose_around_the_json_needs_no_repair() {
        let model = ScriptedLanguageModel::new(["Sure! {\"answer\": \"Lisbon\"} Hope it helps."]);
        let meter = Meter::default();
        let reply: Structured<Answer> =
            ask_json(&meter, "synthesis", &model, "s", "u".into(), schema())
                .await
                .unwrap();
        assert_eq!(
            (reply.value.answer.as_str(), reply.repaired),
            ("Lisbon", false)
        );
        let usage = meter.report().stages["synthesis"];
        assert_eq!((usage.calls, usage.requests, usage.repairs), (1, 1, 0));
    }

    /// A reply cut off at the output limit is not parsed as truncated JSON: the model is asked
    /// for a shorter one, and the repair is counted.
    #[tokio::test]
    async fn a_cut_off_reply_is_asked_again_shorter() {
        let model = ScriptedLanguageModel::default();
        model.push_cut_off("{\"answer\": \"Lis");
        model.push_answer("{\"answer\": \"Lisbon\"}");
        let meter = Meter::default();
        let reply: Structured<Answer> =
            ask_json(&meter, "synthesis", &model, "s", "u".into(), schema())
                .await
                .unwrap();
        assert!(reply.repaired);
        let requests = model.requests();
        let repair = &requests[1].messages.last().unwrap().content;
        assert!(
            repair.contains("cut off at the limit of 1024 tokens"),
            "{repair}"
        );
        let usage = meter.report().stages["synthesis"];
        assert_eq!((usage.calls, usage.requests, usage.repairs), (2, 2, 1));
    }

    /// Cut off twice: a clear failure naming the limit.
    #[tokio::test]
    async fn cut_off_twice_is_a_clear_failure() {
        let model = ScriptedLanguageModel::default();
        model.push_cut_off("{\"answer\": \"Lis");
        model.push_cut_off("{\"answer\": \"Li");
        let meter = Meter::default();
        let err = ask_json::<Answer>(&meter, "synthesis", &model, "s", "u".into(), schema())
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("output limit of 1024 tokens"),
            "{err}"
        );
    }
}
