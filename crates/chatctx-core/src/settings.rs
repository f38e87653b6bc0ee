//! Validated settings the engine runs with (SPEC §8). The binary reads TOML and the environment into these;
//! here every value is already checked and defaulted.

use std::collections::BTreeMap;

use crate::kinds::ObjectKind;
use crate::time::Span;

/// Everything the engine is configured with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Settings {
    /// `[history]`.
    pub history: HistorySettings,
    /// `[conversation]`.
    pub conversation: ConversationSettings,
    /// `[objects.ttl]`.
    pub objects: ObjectSettings,
    /// `[state]`.
    pub state: StateSettings,
    /// `[prompt]`.
    pub prompt: PromptSettings,
}

/// Which inbound items are recorded for the prompt (SPEC §5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Every inbound message and reaction, and every bot output. Cap 16.
    Talkative,
    /// Inbound items only when they triggered the bot, plus the bot's outputs. Cap 8.
    #[default]
    Smart,
    /// As `smart`.
    Strict,
}

impl Mode {
    /// The prompt-history cap of the mode.
    pub fn cap(self) -> usize {
        match self {
            Mode::Talkative => 16,
            Mode::Smart | Mode::Strict => 8,
        }
    }
}

/// How prompt history is chosen from the eligible items.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// The selection of SPEC §6.3.
    #[default]
    Selection,
    /// The newest 16 / 8 eligible items.
    ModeCap,
}

/// Which items count as one conversation's history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scope {
    /// Items of the same forum topic (the whole chat where there are no topics).
    #[default]
    Topic,
    /// Every item of the chat.
    Chat,
}

/// How history is rendered into the prompt (SPEC §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One user message holding the `chat_history_context` JSON.
    #[default]
    Single,
    /// One message per item.
    PerItem,
}

/// `[history]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HistorySettings {
    /// Write policy.
    pub mode: Mode,
    /// Selection policy.
    pub policy: Policy,
    /// Conversation scope.
    pub scope: Scope,
    /// Rendering.
    pub format: Format,
}

/// What to keep when triage fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnTriageError {
    /// Only the guaranteed recent items.
    #[default]
    RecentOnly,
    /// Every older item.
    KeepAll,
}

/// How older items are chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selector {
    /// Triage by a model.
    #[default]
    Model,
    /// Deterministic lexical ranking.
    Lexical,
}

/// `[conversation]`, names and defaults from the context-selection design (seed 001).
#[derive(Debug, Clone, PartialEq)]
pub struct ConversationSettings {
    /// Whether history is used at all.
    pub enabled: bool,
    /// Items considered.
    pub lookback_count: usize,
    /// At or below this many, keep everything.
    pub skip_selection_threshold: usize,
    /// Role alias of the triage model.
    pub selection_model: String,
    /// Seconds for the whole triage, retries included.
    pub selection_timeout: f64,
    /// `false` keeps every item.
    pub use_selection: bool,
    /// Newest items always kept.
    pub always_include_recent: usize,
    /// Characters kept of each bot reply (0 = all).
    pub context_truncation: usize,
    /// Recency window in hours from the newest item (0 = off).
    pub context_recency_hours: f64,
    /// Items kept regardless of the recency window.
    pub context_min_messages: usize,
    /// Scheduled or briefing items put back into interactive context.
    pub previous_tasks_count: usize,
    /// Messages kept per conversation (per topic, or per chat without topics).
    pub cache_max_per_conversation: usize,
    /// What to keep when triage fails.
    pub on_triage_error: OnTriageError,
    /// Model triage or lexical ranking.
    pub selector: Selector,
    /// Older items kept by the lexical selector.
    pub lexical_keep: usize,
    /// Token budget of the history (0 = none).
    pub max_context_tokens: usize,
}

impl Default for ConversationSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            lookback_count: 25,
            skip_selection_threshold: 3,
            selection_model: "fast".to_owned(),
            selection_timeout: 30.0,
            use_selection: true,
            always_include_recent: 5,
            context_truncation: 0,
            context_recency_hours: 0.0,
            context_min_messages: 10,
            previous_tasks_count: 3,
            cache_max_per_conversation: 200,
            on_triage_error: OnTriageError::RecentOnly,
            selector: Selector::Model,
            lexical_keep: 10,
            max_context_tokens: 0,
        }
    }
}

/// `[objects.ttl]`: per-kind sliding lifetimes and the close grace.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectSettings {
    ttl: [Span; ObjectKind::ALL.len()],
    /// How long a closed object stays listable.
    pub close_grace: Span,
}

impl ObjectSettings {
    /// The TTL of `kind`.
    pub fn ttl(&self, kind: ObjectKind) -> Span {
        self.ttl[kind as usize]
    }

    /// Sets the TTL of `kind`.
    pub fn set_ttl(&mut self, kind: ObjectKind, span: Span) {
        self.ttl[kind as usize] = span;
    }
}

impl Default for ObjectSettings {
    fn default() -> Self {
        let h = |n: i64| Span::from_secs(n * 3600);
        let mut s = Self { ttl: [h(1); ObjectKind::ALL.len()], close_grace: h(1) };
        s.set_ttl(ObjectKind::Article, h(2));
        s.set_ttl(ObjectKind::Poll, h(24));
        s.set_ttl(ObjectKind::Reminder, h(24));
        s.set_ttl(ObjectKind::Summary, h(2));
        s.set_ttl(ObjectKind::BotMessage, Span::from_secs(1800));
        s.set_ttl(ObjectKind::Message, Span::from_secs(1800));
        s
    }
}

/// `[state]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateSettings {
    /// Largest state, in bytes of compact JSON.
    pub max_bytes: usize,
    /// Merge depth (0 = unlimited).
    pub merge_depth: u32,
    /// Merge depth per top-level key.
    pub merge_depth_by_key: BTreeMap<String, u32>,
    /// Revisions kept.
    pub keep_revisions: usize,
}

impl Default for StateSettings {
    fn default() -> Self {
        Self { max_bytes: 8192, merge_depth: 0, merge_depth_by_key: BTreeMap::new(), keep_revisions: 50 }
    }
}

/// `[prompt]` (an extension of SPEC §8): the system message that opens every prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptSettings {
    /// The system prompt; empty means the prompt opens with history (the bot adds its own system prompt).
    pub system: String,
}
