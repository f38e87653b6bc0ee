//! Model triage for history selection (docs/protocol.md §6.3) over any OpenAI-compatible chat-completions endpoint
//! (Ollama, vLLM, llama.cpp, OpenAI): the [`Triage`] the core calls when `conversation.selector = "model"`.
//!
//! One call posts the core's triage prompt to `{base_url}/chat/completions` and reads
//! `{"relevant_ids": [...]}` from the answer. `selection_timeout` bounds the whole triage: every attempt gets
//! what is left of it, and a transport error, a timeout, 429 or 5xx is retried while time remains (at most
//! three attempts). Any other failure is final; the core then applies `on_triage_error`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use chatctx_core::selection::{Triage, TriageRequest, parse_relevant_ids};
use serde::Serialize;
use serde_json::Value;

use crate::config::LlmSettings;

/// The HTTP triage client.
pub struct HttpTriage {
    client: reqwest::blocking::Client,
    url: String,
    api_key: Option<String>,
    models: BTreeMap<String, String>,
    /// `llm.max_response_bytes`.
    max_response_bytes: usize,
}

/// Installs ring as the process's TLS provider (reqwest is built without one). Idempotent.
pub fn install_tls_provider() {
    // `Err` means a provider is already installed, which is the goal.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The answer's body, at most `max` bytes: a longer one is refused without being read whole
/// (`llm.max_response_bytes`).
fn read_capped(resp: reqwest::blocking::Response, max: usize) -> Result<String, Attempt> {
    use std::io::Read as _;
    if resp.content_length().is_some_and(|n| n > max as u64) {
        return Err(Attempt::Final(format!("the answer is over llm.max_response_bytes ({max})")));
    }
    let mut body = Vec::with_capacity(max.min(64 * 1024));
    let limit = u64::try_from(max).unwrap_or(u64::MAX).saturating_add(1);
    resp.take(limit).read_to_end(&mut body).map_err(|e| Attempt::Retry(format!("reading the answer failed: {e}")))?;
    if body.len() > max {
        return Err(Attempt::Final(format!("the answer is over llm.max_response_bytes ({max})")));
    }
    String::from_utf8(body).map_err(|_| Attempt::Final("the answer is not UTF-8".to_owned()))
}

impl HttpTriage {
    /// A client for `[llm]`, or `None` when no `base_url` is configured (then triage fails open).
    pub fn from_settings(llm: &LlmSettings) -> Result<Option<Self>> {
        let Some(base) = llm.base_url.as_deref().filter(|b| !b.is_empty()) else { return Ok(None) };
        let api_key = match &llm.api_key_env {
            Some(var) => {
                Some(std::env::var(var).with_context(|| format!("llm.api_key_env names {var}, which is not set"))?)
            }
            None => None,
        };
        install_tls_provider();
        // Redirects are not followed: one would re-post the chat's text to wherever the endpoint points.
        let client = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .context("cannot build the HTTP client for [llm]")?;
        Ok(Some(Self {
            client,
            url: format!("{}/chat/completions", base.trim_end_matches('/')),
            api_key,
            models: llm.models.clone(),
            max_response_bytes: llm.max_response_bytes,
        }))
    }

    fn attempt(&self, body: &str, timeout: Duration) -> Result<String, Attempt> {
        let mut req = self.client.post(&self.url).timeout(timeout).header("content-type", "application/json");
        if let Some(key) = &self.api_key {
            req = req.bearer_auth(key);
        }
        let resp = req.body(body.to_owned()).send().map_err(|e| Attempt::Retry(format!("request failed: {e}")))?;
        let status = resp.status();
        let text = read_capped(resp, self.max_response_bytes)?;
        if status.as_u16() == 429 || status.is_server_error() {
            return Err(Attempt::Retry(format!("endpoint answered {status}")));
        }
        if !status.is_success() {
            return Err(Attempt::Final(format!("endpoint answered {status}")));
        }
        let v: Value =
            serde_json::from_str(&text).map_err(|e| Attempt::Final(format!("the answer is not JSON: {e}")))?;
        let content = v["choices"][0]["message"]["content"]
            .as_str()
            .ok_or_else(|| Attempt::Final("the answer has no choices[0].message.content".to_owned()))?;
        Ok(content.to_owned())
    }

    /// One chat completion: `messages` to the model of `role` (a key of `[llm] models`, else the model's own
    /// name), the answer's text. `budget` bounds the whole call: every attempt gets what is left of it, and a
    /// transport error, a timeout, 429 or 5xx is retried while time remains (at most three attempts).
    pub fn complete(
        &self,
        role: &str,
        messages: &[chatctx_core::render::PromptMessage],
        max_tokens: Option<u32>,
        budget: Duration,
    ) -> Result<String, String> {
        let model = self.models.get(role).map_or(role, String::as_str);
        let body = serde_json::to_string(&Body { model, messages, temperature: 0, max_tokens, stream: false })
            .map_err(|e| format!("cannot encode the request: {e}"))?;
        let start = Instant::now();
        let mut last = String::from("no attempt fit in the time allowed");
        for attempt in 0..3u32 {
            let left = budget.saturating_sub(start.elapsed());
            if left.is_zero() {
                break;
            }
            match self.attempt(&body, left) {
                Ok(text) => return Ok(text),
                Err(Attempt::Final(e)) => return Err(e),
                Err(Attempt::Retry(e)) => last = e,
            }
            // A short pause before retrying, never past the budget.
            let pause = Duration::from_millis(100 * u64::from(attempt + 1)).min(budget.saturating_sub(start.elapsed()));
            std::thread::sleep(pause);
        }
        Err(last)
    }
}

/// The chat-completions request body.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: &'a [chatctx_core::render::PromptMessage],
    temperature: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    stream: bool,
}

enum Attempt {
    Retry(String),
    Final(String),
}

impl Triage for HttpTriage {
    fn configured(&self) -> bool {
        true
    }

    fn triage(&self, request: &TriageRequest) -> Result<Vec<usize>, String> {
        let budget = Duration::from_secs_f64(request.timeout_secs.max(0.001));
        let text = self.complete(&request.model, &request.messages, None, budget)?;
        parse_relevant_ids(&text, request.count)
    }
}

/// The triage a service installs in its engine: the model, and the answers to requests the service already
/// sent without holding the engine's lock (`Service::call`), so that one slow model call never holds up the
/// calls of other chats. A request equal to an answered one gets that answer; any other (the chat changed in
/// between) goes to the model.
pub struct Answered {
    model: HttpTriage,
    answers: Mutex<Vec<(TriageRequest, Answer)>>,
}

/// A model's answer: the 0-based ids it picked, or why it failed.
type Answer = Result<Vec<usize>, String>;

/// How many answers wait for their call at most (one per call in flight; older ones are dropped).
const WAITING: usize = 64;

impl Answered {
    /// Answers through `model`.
    pub fn new(model: HttpTriage) -> Self {
        Self { model, answers: Mutex::new(Vec::new()) }
    }

    /// Sends `request` to the model now and keeps the answer for the engine's triage of an equal request.
    pub fn ask(&self, request: TriageRequest) {
        let answer = self.model.triage(&request);
        if let Ok(mut answers) = self.answers.lock() {
            if answers.len() >= WAITING {
                drop(answers.remove(0));
            }
            answers.push((request, answer));
        }
    }

    fn take(&self, request: &TriageRequest) -> Option<Answer> {
        let mut answers = self.answers.lock().ok()?;
        let at = answers.iter().position(|(r, _)| r == request)?;
        Some(answers.remove(at).1)
    }
}

/// [`Answered`] as an engine's triage.
pub struct Installed(pub Arc<Answered>);

impl Triage for Installed {
    fn configured(&self) -> bool {
        true
    }

    fn triage(&self, request: &TriageRequest) -> Result<Vec<usize>, String> {
        match self.0.take(request) {
            Some(answer) => answer,
            None => self.0.model.triage(request),
        }
    }
}
