//! Validated settings the engine runs with (docs/protocol.md §8). The binary reads TOML and the environment into these;
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
    /// `[resolver]`.
    pub resolver: ResolverSettings,
    /// `[decisions]`.
    pub decisions: DecisionSettings,
    /// `[summary]`: what the engine does with a conversation's summary (the background summarizer's own
    /// settings are the server's).
    pub summary: SummarySettings,
}

/// The summary slot of each conversation (docs/protocol.md §6.6).
#[derive(Debug, Clone, PartialEq)]
pub struct SummarySettings {
    /// The longest summary text accepted, in characters.
    pub max_chars: usize,
    /// The share of `conversation.max_context_tokens` the summary may take in a prompt (0–1); a longer
    /// summary is cut there.
    pub max_share: f64,
}

impl Default for SummarySettings {
    fn default() -> Self {
        Self { max_chars: 8_000, max_share: 0.25 }
    }
}

/// `[decisions]`: the decision records of tool answers (docs/protocol.md §6.7), kept in memory by the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionSettings {
    /// Records kept per chat, newest first; 0 turns records off (a request's `"explain": true` still gets one).
    pub keep: usize,
    /// Estimated bytes all chats' records may hold together; past it the oldest go first, whatever the chat.
    pub max_bytes: usize,
}

impl Default for DecisionSettings {
    /// Off: an embedding program asks per request (`explain`); the server's configuration keeps 32.
    fn default() -> Self {
        Self { keep: 0, max_bytes: 64 << 20 }
    }
}

crate::vocabulary! {
    /// Which inbound items are recorded for the prompt (docs/protocol.md §5.3).
    #[derive(Default)]
    Mode {
        /// Every inbound message and reaction, and every bot output. Cap 16.
        Talkative = "talkative",
        /// Inbound items only when they triggered the bot, plus the bot's outputs. Cap 8.
        #[default]
        Smart = "smart",
        /// As `smart`.
        Strict = "strict",
    }
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

crate::vocabulary! {
    /// How prompt history is chosen from the eligible items.
    #[derive(Default)]
    Policy {
        /// The selection of docs/protocol.md §6.3.
        #[default]
        Selection = "selection",
        /// The newest 16 / 8 eligible items.
        ModeCap = "mode_cap",
    }
}

crate::vocabulary! {
    /// Which items count as one conversation's history.
    #[derive(Default)]
    Scope {
        /// Items of the same forum topic (the whole chat where there are no topics).
        #[default]
        Topic = "topic",
        /// Every item of the chat.
        Chat = "chat",
    }
}

crate::vocabulary! {
    /// How history is rendered into the prompt (docs/protocol.md §5.4).
    #[derive(Default)]
    Format {
        /// One user message holding the `chat_history_context` JSON.
        #[default]
        Single = "single",
        /// One message per item.
        PerItem = "per_item",
    }
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

crate::vocabulary! {
    /// What to keep when triage fails.
    #[derive(Default)]
    OnTriageError {
        /// Only the guaranteed recent items.
        #[default]
        RecentOnly = "recent_only",
        /// Every older item.
        KeepAll = "keep_all",
    }
}

crate::vocabulary! {
    /// How older items are chosen.
    #[derive(Default)]
    Selector {
        /// Triage by a model.
        #[default]
        Model = "model",
        /// Deterministic lexical ranking.
        Lexical = "lexical",
    }
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
    /// Speaker profiles one chat keeps (past it, those no kept item refers to are dropped), and people one
    /// workspace's directory keeps (past it, the one learned longest ago leaves).
    pub max_people: usize,
    /// People directories (workspaces) held; past it, the one written longest ago leaves.
    pub max_workspaces: usize,
    /// Topics (threads) one chat keeps; a new one past it takes the place of the least recently active,
    /// whose items, state and summary go.
    pub max_topics: usize,
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
            max_people: 10_000,
            max_workspaces: 1_000,
            max_topics: 1_000,
            on_triage_error: OnTriageError::RecentOnly,
            selector: Selector::Model,
            lexical_keep: 10,
            max_context_tokens: 0,
        }
    }
}

/// `[objects]` and `[objects.ttl]`: per-kind sliding lifetimes, the close grace, the per-chat cap.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectSettings {
    ttl: [Span; ObjectKind::ALL.len()],
    /// How long a closed object stays listable.
    pub close_grace: Span,
    /// Objects kept per chat; beyond it the oldest inactive ones are dropped.
    pub max_per_chat: usize,
}

impl ObjectSettings {
    /// The TTL of `kind`.
    pub fn ttl(&self, kind: ObjectKind) -> Span {
        self.ttl[kind as usize]
    }

    /// The longest TTL of any kind plus the close grace: nothing activated longer ago than this is active.
    pub fn horizon(&self) -> Span {
        Span::from_secs(self.ttl.iter().map(|t| t.secs()).max().unwrap_or(0) + self.close_grace.secs())
    }

    /// Sets the TTL of `kind`.
    pub fn set_ttl(&mut self, kind: ObjectKind, span: Span) {
        self.ttl[kind as usize] = span;
    }
}

impl Default for ObjectSettings {
    fn default() -> Self {
        let h = |n: i64| Span::from_secs(n * 3600);
        let mut s = Self { ttl: [h(1); ObjectKind::ALL.len()], close_grace: h(1), max_per_chat: 1000 };
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
#[derive(Debug, Clone, PartialEq)]
pub struct StateSettings {
    /// Largest state, in bytes of compact JSON.
    pub max_bytes: usize,
    /// Deepest nesting of objects and arrays in the state (the state object itself is level 1).
    pub max_depth: usize,
    /// Merge depth (0 = unlimited).
    pub merge_depth: u32,
    /// Merge depth per top-level key.
    pub merge_depth_by_key: BTreeMap<String, u32>,
    /// Revisions kept.
    pub keep_revisions: usize,
    /// The schema every state must satisfy (`state.schema_file`), if any.
    pub schema: Option<crate::schema::Schema>,
}

impl Default for StateSettings {
    fn default() -> Self {
        Self {
            max_bytes: 8192,
            max_depth: 32,
            merge_depth: 0,
            merge_depth_by_key: BTreeMap::new(),
            keep_revisions: 50,
            schema: None,
        }
    }
}

/// `[prompt]` (an extension of docs/protocol.md §8): the system message that opens every prompt.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PromptSettings {
    /// The system prompt; empty means the prompt opens with history (the bot adds its own system prompt).
    pub system: String,
}

/// `[resolver]`: the weights, thresholds and windows of `resolve_reference_target` (docs/protocol.md §6.1). Scores are
/// points; the reasoning behind each default is in docs/resolver.md.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolverSettings {
    /// The candidate is (an object of) the message the user replied to.
    pub exact_reply_target: f64,
    /// The candidate is further up the reply chain.
    pub in_reply_chain: f64,
    /// Same forum topic as the request.
    pub same_topic: f64,
    /// Active (activated within its TTL).
    pub currently_active: f64,
    /// Kind matches `target_kind_hint`.
    pub kind_match: f64,
    /// Bot-created, when `ownership_hint = bot_created`.
    pub bot_created: f64,
    /// Created by the sender, when `ownership_hint = mine`.
    pub owned_by_sender: f64,
    /// Created by someone else, when `ownership_hint = mine` (negative).
    pub not_owned: f64,
    /// The most recency can add; it decays hyperbolically with `recency_half_life`.
    pub recency: f64,
    /// Age at which the recency bonus has halved.
    pub recency_half_life: crate::time::Span,
    /// Activated while handling the current message.
    pub touched_in_interaction: f64,
    /// Found only in the chat-wide fallback (another topic) (negative).
    pub weak_scope_fallback: f64,
    /// Closed, or a message older than its TTL (negative).
    pub stale_penalty: f64,
    /// A positional hint picks this candidate.
    pub positional_hint: f64,
    /// An ordinal hint picks this candidate.
    pub ordinal_hint: f64,
    /// Every typed object starts with this over a bare message.
    pub typed_object: f64,
    /// A message whose typed objects are also candidates (the object, not its carrier, is meant) (negative).
    pub carrier_message: f64,
    /// Below this the answer is `not_found`.
    pub min_score: f64,
    /// A lead smaller than this over the runner-up is `ambiguous`.
    pub ambiguity_gap: f64,
    /// Reply-chain messages followed upward from the reply target.
    pub reply_chain_depth: usize,
    /// Newest objects read per scope (and per hinted kind).
    pub scope_window: usize,
    /// Newest messages of the topic offered as `message` candidates.
    pub message_window: usize,
    /// Resolve only where something refers: a reply target, a hint, objects of the current message, or a
    /// referring expression in its words (docs/resolver.md); otherwise `not_found` with `why: no_reference`.
    pub require_reference: bool,
}

impl Default for ResolverSettings {
    fn default() -> Self {
        Self {
            exact_reply_target: 100.0,
            in_reply_chain: 40.0,
            same_topic: 30.0,
            currently_active: 25.0,
            kind_match: 60.0,
            bot_created: 30.0,
            owned_by_sender: 35.0,
            not_owned: -20.0,
            recency: 20.0,
            recency_half_life: crate::time::Span::from_secs(3600),
            touched_in_interaction: 25.0,
            weak_scope_fallback: -30.0,
            stale_penalty: -25.0,
            positional_hint: 45.0,
            ordinal_hint: 45.0,
            typed_object: 10.0,
            carrier_message: -30.0,
            min_score: 40.0,
            ambiguity_gap: 15.0,
            reply_chain_depth: 3,
            scope_window: 32,
            message_window: 12,
            require_reference: true,
        }
    }
}
