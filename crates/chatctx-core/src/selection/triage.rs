//! Model triage: the [`Triage`] a caller installs to choose the older items, the prompt it is given, and how
//! its answer is read.

use std::fmt;

use serde_json::Value;

use crate::render::{PromptMessage, Role};

/// A model that picks the relevant older items. The answer is the ids of the triage prompt (`"1"`, `"2"`,
/// …), as parsed by [`parse_relevant_ids`]; an error is any failure (transport, timeout, status, garbage).
pub trait Triage: Send + Sync {
    /// Whether a model is configured at all (without one, triage fails open).
    fn configured(&self) -> bool;
    /// Runs one triage within `request.timeout_secs` (retries included).
    fn triage(&self, request: &TriageRequest) -> Result<Vec<usize>, String>;
}

/// One triage call.
#[derive(Debug, Clone, PartialEq)]
pub struct TriageRequest {
    /// The role alias of the model (`conversation.selection_model`).
    pub model: String,
    /// The whole budget, retries included.
    pub timeout_secs: f64,
    /// The prompt.
    pub messages: Vec<PromptMessage>,
    /// How many older items were listed (ids `1..=count`).
    pub count: usize,
}

/// The installed triage, if any.
#[derive(Default)]
pub struct TriageSlot(pub Option<Box<dyn Triage>>);

impl fmt::Debug for TriageSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "TriageSlot(installed)" } else { "TriageSlot(none)" })
    }
}

/// The instruction of the triage prompt.
pub const TRIAGE_SYSTEM: &str = "You pick which earlier chat messages are relevant to the current message. \
Reply with JSON only: {\"relevant_ids\": [ids]} listing the ids of the relevant earlier messages, or an empty list if none are.";

/// Builds the triage prompt: the older items with ids `1..=n` (oldest first), then the current message.
pub fn triage_prompt(older: &[String], current: Option<&str>) -> Vec<PromptMessage> {
    let mut listing = String::from("Earlier messages:\n");
    for (i, line) in older.iter().enumerate() {
        listing.push_str(&format!("[{}] {}\n", i + 1, line));
    }
    listing.push_str("\nCurrent message:\n");
    listing.push_str(current.unwrap_or("(none)"));
    vec![
        PromptMessage { role: Role::System, content: TRIAGE_SYSTEM.to_owned() },
        PromptMessage { role: Role::User, content: listing },
    ]
}

/// Reads a triage answer: `{"relevant_ids": [...]}`, possibly inside a code fence or surrounded by prose;
/// ids may be numbers or numeric strings; ids outside `1..=count` are ignored. Returns 0-based indexes,
/// sorted and unique. Anything without such an object is an error.
pub fn parse_relevant_ids(text: &str, count: usize) -> Result<Vec<usize>, String> {
    let mut from = 0;
    while let Some(rel) = text.get(from..).and_then(|t| t.find('{')) {
        let start = from + rel;
        let mut stream = serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
        if let Some(Ok(Value::Object(map))) = stream.next()
            && let Some(Value::Array(ids)) = map.get("relevant_ids")
        {
            let mut out: Vec<usize> = ids
                .iter()
                .filter_map(|v| match v {
                    Value::Number(n) => n.as_u64(),
                    Value::String(s) => s.trim().trim_start_matches('[').trim_end_matches(']').parse().ok(),
                    _ => None,
                })
                .filter_map(|n| usize::try_from(n).ok())
                .filter(|&n| (1..=count).contains(&n))
                .map(|n| n - 1)
                .collect();
            out.sort_unstable();
            out.dedup();
            return Ok(out);
        }
        from = start + 1;
    }
    Err("the answer holds no {\"relevant_ids\": [...]} object".to_owned())
}
