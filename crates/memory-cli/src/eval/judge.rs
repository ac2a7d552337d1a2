//! End-to-end answers (`--answer`): recall, the configured `[llm]` answers from what was
//! recalled (the synthesis stage), and a judge model grades the answer with the benchmark's
//! own published judge prompt.
//!
//! The prompts are the benchmarks' own, so accuracy here is comparable with what peers
//! publish with the same judge model:
//! - LongMemEval: `get_anscheck_prompt` of `src/evaluation/evaluate_qa.py` in
//!   xiaowu0162/LongMemEval (MIT), one prompt per question type and one for abstention; the
//!   reply is correct when it contains "yes", as there.
//! - LoCoMo (categories 1-4): the `ACCURACY_PROMPT` of mem0's `evaluation/metrics/llm_judge.py`
//!   (Apache-2.0), the judge most LoCoMo accuracy figures are published with; the reply's
//!   JSON `label` is `CORRECT` or `WRONG`.

use std::time::Instant;

use memory_core::ports::{ChatMessage, ChatRequest, ChatRole, LanguageModel};
use memory_engine::long_term::{MemoryService, RecallRequest};
use serde::{Deserialize, Serialize};

use crate::commands::CliError;

/// Which judge grades a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rubric<'a> {
    /// LongMemEval, by question type.
    LongMemEval {
        /// `question_type`.
        kind: &'a str,
        /// An abstention question (`_abs`).
        abstention: bool,
    },
    /// LoCoMo.
    Locomo,
}

const LME_HEAD: &str = "I will give you a question, a correct answer, and a response from a model. Please answer yes if the response contains the correct answer. Otherwise, answer no.";
const LME_STEPS: &str = " If the response is equivalent to the correct answer or contains all the intermediate steps to get the correct answer, you should also answer yes. If the response only contains a subset of the information required by the answer, answer no.";
const LME_TAIL: &str = "\n\nQuestion: {q}\n\nCorrect Answer: {a}\n\nModel Response: {r}\n\nIs the model response correct? Answer yes or no only.";

const LOCOMO_JUDGE: &str = "
Your task is to label an answer to a question as ’CORRECT’ or ’WRONG’. You will be given the following data:
    (1) a question (posed by one user to another user), 
    (2) a ’gold’ (ground truth) answer, 
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT. 

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like \"last Tuesday\" or \"next month\"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., \"May 7th\" vs \"7 May\"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {q}
Gold answer: {a}
Generated answer: {r}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG. 
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as \"label\".
";

/// The judge's prompt for `question`, its gold `answer` and the model's `response` (refused
/// for a LongMemEval question type the benchmark publishes no prompt for).
pub fn prompt(
    rubric: Rubric<'_>,
    question: &str,
    answer: &str,
    response: &str,
) -> Result<String, CliError> {
    let template = match rubric {
        Rubric::Locomo => LOCOMO_JUDGE.to_owned(),
        Rubric::LongMemEval {
            abstention: true, ..
        } => "I will give you an unanswerable question, an explanation, and a response from a model. Please answer yes if the model correctly identifies the question as unanswerable. The model could say that the information is incomplete, or some other information is given but the asked information is not.\n\nQuestion: {q}\n\nExplanation: {a}\n\nModel Response: {r}\n\nDoes the model correctly identify the question as unanswerable? Answer yes or no only.".to_owned(),
        Rubric::LongMemEval { kind, .. } => match kind {
            "single-session-user" | "single-session-assistant" | "multi-session" => {
                format!("{LME_HEAD}{LME_STEPS} {LME_TAIL}")
            }
            "temporal-reasoning" => format!(
                "{LME_HEAD}{LME_STEPS} In addition, do not penalize off-by-one errors for the number of days. If the question asks for the number of days/weeks/months, etc., and the model makes off-by-one errors (e.g., predicting 19 days when the answer is 18), the model's response is still correct. {LME_TAIL}"
            ),
            "knowledge-update" => format!(
                "{LME_HEAD} If the response contains some previous information along with an updated answer, the response should be considered as correct as long as the updated answer is the required answer.{LME_TAIL}"
            ),
            "single-session-preference" => "I will give you a question, a rubric for desired personalized response, and a response from a model. Please answer yes if the response satisfies the desired response. Otherwise, answer no. The model does not need to reflect all the points in the rubric. The response is correct as long as it recalls and utilizes the user's personal information correctly.\n\nQuestion: {q}\n\nRubric: {a}\n\nModel Response: {r}\n\nIs the model response correct? Answer yes or no only.".to_owned(),
            other => {
                return Err(CliError::Input(format!(
                    "LongMemEval publishes no judge prompt for question type {other:?}"
                )));
            }
        },
    };
    // One pass, so a `{a}` inside the question is not replaced.
    let mut out = String::with_capacity(template.len() + question.len() + response.len());
    let mut rest = template.as_str();
    while let Some(at) = rest.find('{') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let (value, skip) = if tail.starts_with("{q}") {
            (question, 3)
        } else if tail.starts_with("{a}") {
            (answer, 3)
        } else if tail.starts_with("{r}") {
            (response, 3)
        } else {
            ("{", 1)
        };
        out.push_str(value);
        rest = &tail[skip..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Whether the judge's `reply` says correct.
pub fn verdict(rubric: Rubric<'_>, reply: &str) -> bool {
    match rubric {
        // As evaluate_qa.py: `'yes' in eval_response.lower()`.
        Rubric::LongMemEval { .. } => reply.to_lowercase().contains("yes"),
        Rubric::Locomo => {
            #[derive(Deserialize)]
            struct Label {
                label: String,
            }
            let json = memory_core::structured::json_in_reply(reply);
            match serde_json::from_str::<Label>(json) {
                Ok(label) => label.label.trim().eq_ignore_ascii_case("correct"),
                // No JSON: the last of the two words decides.
                Err(_) => match (reply.rfind("CORRECT"), reply.rfind("WRONG")) {
                    (Some(c), Some(w)) => c > w,
                    (Some(_), None) => true,
                    _ => false,
                },
            }
        }
    }
}

/// What `--answer` brings to a run: the judge, and how many items the answer is written
/// from.
#[derive(Clone)]
pub struct Answering {
    /// The judge model.
    pub judge: std::sync::Arc<dyn LanguageModel>,
    /// Items recalled for the answer.
    pub limit: usize,
}

impl std::fmt::Debug for Answering {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answering")
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

/// Totals of the answered questions of a run, per question.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct AnswerCosts {
    /// Questions answered.
    pub answered: usize,
    /// Accuracy over every answered question (abstention included, as published).
    pub accuracy: f64,
    /// Questions whose answer could not be written (graded wrong).
    pub failed: usize,
    /// Mean tokens of the answer's recall (query analysis and answer), in and out.
    pub answer_tokens: f64,
    /// Mean tokens of the judge.
    pub judge_tokens: f64,
    /// Mean seconds of the answer's recall.
    pub answer_seconds: f64,
    /// Mean seconds of the judge.
    pub judge_seconds: f64,
}

impl AnswerCosts {
    /// The totals of `answers` (`None` when there is none).
    pub fn of<'a>(answers: impl IntoIterator<Item = &'a Answered>) -> Option<Self> {
        let answers: Vec<&Answered> = answers.into_iter().collect();
        if answers.is_empty() {
            return None;
        }
        let n = answers.len() as f64;
        let mean = |f: fn(&Answered) -> f64| answers.iter().map(|a| f(a)).sum::<f64>() / n;
        Some(Self {
            answered: answers.len(),
            accuracy: mean(|a| f64::from(u8::from(a.correct))),
            failed: answers.iter().filter(|a| a.failed.is_some()).count(),
            answer_tokens: mean(|a| a.answer_tokens as f64),
            judge_tokens: mean(|a| a.judge_tokens as f64),
            answer_seconds: mean(|a| a.answer_seconds),
            judge_seconds: mean(|a| a.judge_seconds),
        })
    }

    /// One line for a rendered report.
    pub fn render(&self) -> String {
        format!(
            "answers: {} judged, accuracy {:.3} (every answered question){}; per question: answer {:.0} tokens in {:.1} s, judge {:.0} tokens in {:.1} s\n",
            self.answered,
            self.accuracy,
            if self.failed > 0 {
                format!(", {} could not be answered", self.failed)
            } else {
                String::new()
            },
            self.answer_tokens,
            self.answer_seconds,
            self.judge_tokens,
            self.judge_seconds
        )
    }
}

/// One question answered and graded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answered {
    /// The model's answer (empty when synthesis failed; see `failed`).
    pub hypothesis: String,
    /// The judge's verdict.
    pub correct: bool,
    /// Why no answer was written, when synthesis failed (graded wrong, never judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Tokens of the recall's LLM calls (query analysis and the answer), in and out.
    pub answer_tokens: u64,
    /// Tokens of the judge's call, in and out.
    pub judge_tokens: u64,
    /// Seconds for the recall with its answer.
    pub answer_seconds: f64,
    /// Seconds for the judge.
    pub judge_seconds: f64,
}

/// Recalls `request` with an answer from `service`'s `[llm]`, and has `judge` grade it.
pub async fn answer_and_judge(
    service: &MemoryService,
    judge: &dyn LanguageModel,
    profile: &str,
    request: RecallRequest,
    rubric: Rubric<'_>,
    gold: &str,
) -> Result<Answered, CliError> {
    let question = request.query.clone();
    let started = Instant::now();
    let response = service.recall(profile, request.with_answer()).await?;
    let answer_seconds = started.elapsed().as_secs_f64();
    let usage = response.usage.total();
    let answer_tokens = usage.input_tokens + usage.output_tokens;
    let Some(answer) = response.answer else {
        let reason = response
            .degraded
            .iter()
            .find(|d| d.feature == "synthesis")
            .map_or_else(|| "no answer".to_owned(), |d| d.reason.clone());
        return Ok(Answered {
            hypothesis: String::new(),
            correct: false,
            failed: Some(reason),
            answer_tokens,
            judge_tokens: 0,
            answer_seconds,
            judge_seconds: 0.0,
        });
    };
    let started = Instant::now();
    let reply = judge
        .complete(ChatRequest {
            messages: vec![ChatMessage::new(
                ChatRole::User,
                prompt(rubric, &question, gold, &answer.answer)?,
            )],
            temperature: Some(0.0),
            ..ChatRequest::default()
        })
        .await?;
    Ok(Answered {
        correct: verdict(rubric, &reply.content),
        hypothesis: answer.answer,
        failed: None,
        answer_tokens,
        judge_tokens: reply.usage.input_tokens + reply.usage.output_tokens,
        answer_seconds,
        judge_seconds: started.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn each_rubric_has_its_published_prompt_with_the_three_parts_in_place() {
        let lme = |kind, abstention| Rubric::LongMemEval { kind, abstention };
        let temporal = prompt(
            lme("temporal-reasoning", false),
            "How many days?",
            "18",
            "19 days",
        )
        .unwrap();
        assert!(temporal.contains("do not penalize off-by-one errors"));
        assert!(temporal.ends_with("Question: How many days?\n\nCorrect Answer: 18\n\nModel Response: 19 days\n\nIs the model response correct? Answer yes or no only."));
        let update = prompt(lme("knowledge-update", false), "q", "a", "r").unwrap();
        assert!(update.contains("the updated answer is the required answer.\n\nQuestion: q"));
        let preference = prompt(lme("single-session-preference", false), "q", "a", "r").unwrap();
        assert!(preference.contains("Rubric: a"));
        let abstention = prompt(lme("multi-session", true), "q", "a", "r").unwrap();
        assert!(abstention.contains("Explanation: a"));
        assert!(prompt(lme("nonesuch", false), "q", "a", "r").is_err());
        // A brace in the question is the question's, not a slot.
        let locomo = prompt(Rubric::Locomo, "What is {a}?", "Oslo", "In Oslo.").unwrap();
        assert!(
            locomo.contains(
                "Question: What is {a}?\nGold answer: Oslo\nGenerated answer: In Oslo.\n"
            )
        );
    }

    #[test]
    fn verdicts_are_read_as_the_benchmarks_read_them() {
        let lme = Rubric::LongMemEval {
            kind: "multi-session",
            abstention: false,
        };
        assert!(verdict(lme, "Yes."));
        assert!(!verdict(lme, "no"));
        assert!(verdict(
            Rubric::Locomo,
            r#"It matches. {"label": "CORRECT"}"#
        ));
        assert!(!verdict(Rubric::Locomo, r#"{"label": "WRONG"}"#));
        assert!(verdict(Rubric::Locomo, "Same city, so CORRECT"));
        assert!(!verdict(Rubric::Locomo, "CORRECT topic but WRONG"));
        assert!(!verdict(Rubric::Locomo, "unsure"));
    }
}
