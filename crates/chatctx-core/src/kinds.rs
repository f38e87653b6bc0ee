//! The closed vocabularies of the contract: object kinds, activation events, message kinds and origins, and
//! the [`vocabulary!`](crate::vocabulary) macro that declares every closed set of wire names once (its
//! parser, its serde form and its JSON Schema come from that one list).

use schemars::JsonSchema;
use serde::Serialize;

/// The channel of events and requests that name none.
pub const DEFAULT_CHANNEL: &str = "telegram";

/// A closed set of wire names, declared with [`vocabulary!`](crate::vocabulary).
pub trait Vocabulary: Sized + Copy + 'static {
    /// Every value, in contract order.
    const ALL: &'static [Self];
    /// Every wire name, in the order of [`Vocabulary::ALL`].
    const NAMES: &'static [&'static str];
    /// The value with wire name `s`.
    fn parse(s: &str) -> Option<Self>;
}

/// Declares a closed vocabulary: an enum with its wire names, `ALL`, `NAMES`, `as_str`, `parse`, serde and a
/// JSON Schema (`enum` of the names), so the names a schema advertises are exactly the ones parsed.
#[macro_export]
macro_rules! vocabulary {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $wire:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($(#[$vm])* $variant),+ }

        impl $name {
            /// Every value, in contract order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Every wire name, in contract order.
            pub const NAMES: &'static [&'static str] = &[$($wire),+];

            /// The wire name.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            /// The value with wire name `s`.
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($wire => Some($name::$variant),)+ _ => None }
            }
        }

        impl $crate::kinds::Vocabulary for $name {
            const ALL: &'static [Self] = $name::ALL;
            const NAMES: &'static [&'static str] = $name::NAMES;
            fn parse(s: &str) -> Option<Self> {
                $name::parse(s)
            }
        }

        impl $crate::__private::serde::Serialize for $name {
            fn serialize<S: $crate::__private::serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__private::serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__private::serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| {
                    $crate::__private::serde::de::Error::custom(format!(
                        "expected one of {}, got {s:?}",
                        $name::NAMES.join(", ")
                    ))
                })
            }
        }

        impl $crate::__private::schemars::JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn json_schema(_: &mut $crate::__private::schemars::SchemaGenerator) -> $crate::__private::schemars::Schema {
                $crate::wire::schema([("type", "string".into()), ("enum", $name::NAMES.into())])
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary! {
    /// Something a follow-up can point at (docs/protocol.md §1).
    ObjectKind {
        /// An article the bot read or summarized.
        Article = "article",
        /// A URL in a message.
        Link = "link",
        /// A photo.
        MediaImage = "media.image",
        /// A video, video note or animation.
        MediaVideo = "media.video",
        /// A voice note or audio file.
        MediaVoice = "media.voice",
        /// A file that is not a PDF.
        MediaDocument = "media.document",
        /// A PDF file.
        MediaPdf = "media.pdf",
        /// A poll.
        Poll = "poll",
        /// A reminder the bot keeps.
        Reminder = "reminder",
        /// A summary the bot wrote.
        Summary = "summary",
        /// One of the bot's own messages.
        BotMessage = "bot_message",
        /// Any other message.
        Message = "message",
    }
}

impl ObjectKind {
    /// Whether it is a message (`message`, `bot_message`) rather than a typed object.
    pub fn is_message(self) -> bool {
        matches!(self, ObjectKind::Message | ObjectKind::BotMessage)
    }
}

/// A set of object kinds, one bit each: a kind hint's family, asked about once per candidate without a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct KindSet(u32);

// Every kind has a bit.
const _: () = assert!(ObjectKind::ALL.len() <= 32);

impl KindSet {
    pub(crate) fn of(kinds: &[ObjectKind]) -> Self {
        Self(kinds.iter().fold(0, |bits, &k| bits | 1 << k as u32))
    }

    /// Every kind.
    pub(crate) const ALL: Self = Self(u32::MAX);

    pub(crate) fn contains(self, kind: ObjectKind) -> bool {
        self.0 & 1 << kind as u32 != 0
    }

    /// Whether a candidate of `kind` may win under this kind hint: any kind when there is none (the set is empty).
    pub(crate) fn admits(self, kind: ObjectKind) -> bool {
        self.0 == 0 || self.contains(kind)
    }
}

vocabulary! {
    /// An explicit, meaningful interaction with an object (docs/protocol.md §4).
    Activation {
        /// The bot created it.
        Created = "created",
        /// The bot summarized it.
        Summarized = "summarized",
        /// The bot fetched and discussed it.
        Fetched = "fetched",
        /// The bot described it.
        Described = "described",
        /// The bot transcribed it.
        Transcribed = "transcribed",
        /// The bot listed it.
        Listed = "listed",
        /// The bot changed it.
        Updated = "updated",
        /// A summary was used again.
        Reused = "reused",
        /// `resolve_reference_target` returned it.
        Resolved = "resolved",
        /// The bot attached follow-up buttons.
        ActionsAttached = "actions_attached",
        /// A user replied to its source message.
        RepliedTo = "replied_to",
        /// A user answered the poll.
        Voted = "voted",
    }
}

vocabulary! {
    /// Who produced a history item (docs/protocol.md §5.1).
    ItemKind {
        /// A user's message.
        InboundUser = "inbound_user",
        /// A user's reaction.
        InboundReaction = "inbound_reaction",
        /// The bot's message.
        OutboundAgent = "outbound_agent",
        /// The bot's reaction.
        OutboundReaction = "outbound_reaction",
        /// A system note.
        System = "system",
    }
}

vocabulary! {
    /// Why a message exists (docs/protocol.md §3.1). Only `interactive` items are ordinary conversation.
    Origin {
        /// Ordinary conversation.
        Interactive = "interactive",
        /// Output of a scheduled job.
        Scheduled = "scheduled",
        /// A briefing.
        Briefing = "briefing",
        /// Part of a subtask.
        Subtask = "subtask",
        /// A liveness ping.
        Heartbeat = "heartbeat",
    }
}

impl ItemKind {
    /// Whether the bot produced this item.
    pub fn is_outbound(self) -> bool {
        matches!(self, Self::OutboundAgent | Self::OutboundReaction)
    }
}

vocabulary! {
    /// The words a request names object kinds with, the same in `target_kind_hint`, `allowed_kinds` and
    /// `kinds`: every exact kind, and short names (`image`, `photo`, `file`, …) for the media kinds.
    KindName {
        /// `article`.
        Article = "article",
        /// `link`.
        Link = "link",
        /// `media.image`.
        MediaImage = "media.image",
        /// `media.video`.
        MediaVideo = "media.video",
        /// `media.voice`.
        MediaVoice = "media.voice",
        /// `media.document`.
        MediaDocument = "media.document",
        /// `media.pdf`.
        MediaPdf = "media.pdf",
        /// `poll`.
        Poll = "poll",
        /// `reminder`.
        Reminder = "reminder",
        /// `summary`.
        Summary = "summary",
        /// `bot_message`.
        BotMessage = "bot_message",
        /// `message`.
        Message = "message",
        /// `media.image`.
        Image = "image",
        /// `media.image`.
        Photo = "photo",
        /// `media.video`.
        Video = "video",
        /// `media.voice`.
        Voice = "voice",
        /// `media.voice`.
        Audio = "audio",
        /// `media.document` or `media.pdf`.
        File = "file",
        /// `media.document`.
        Document = "document",
        /// `media.pdf`.
        Pdf = "pdf",
        /// A message (`message` or `bot_message`).
        Quote = "quote",
    }
}

impl KindName {
    /// The kinds the word names in a filter (`allowed_kinds`, `kinds`): an exact kind name means that kind.
    pub fn kinds(self) -> &'static [ObjectKind] {
        use ObjectKind as K;
        match self {
            Self::Article => &[K::Article],
            Self::Link => &[K::Link],
            Self::Message => &[K::Message],
            _ => self.hint_kinds(),
        }
    }

    /// The kinds the word names as a `target_kind_hint`, its family, preferred kind first: `article` and
    /// `link` include each other, and `message` includes the bot's messages.
    pub fn hint_kinds(self) -> &'static [ObjectKind] {
        use ObjectKind as K;
        match self {
            Self::Article => &[K::Article, K::Link],
            Self::Link => &[K::Link, K::Article],
            Self::MediaImage | Self::Image | Self::Photo => &[K::MediaImage],
            Self::MediaVideo | Self::Video => &[K::MediaVideo],
            Self::MediaVoice | Self::Voice | Self::Audio => &[K::MediaVoice],
            Self::MediaDocument | Self::Document => &[K::MediaDocument],
            Self::MediaPdf | Self::Pdf => &[K::MediaPdf],
            Self::File => &[K::MediaDocument, K::MediaPdf],
            Self::Poll => &[K::Poll],
            Self::Reminder => &[K::Reminder],
            Self::Summary => &[K::Summary],
            Self::BotMessage => &[K::BotMessage],
            Self::Message | Self::Quote => &[K::Message, K::BotMessage],
        }
    }
}

/// `resolved` | `ambiguous` | `not_found`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// One clear winner.
    Resolved,
    /// Close candidates; no guess.
    Ambiguous,
    /// Nothing plausible.
    NotFound,
}

/// Where the answer was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// The reply target and its ancestors.
    ReplyChain,
    /// The request's topic.
    Topic,
    /// The chat (a chat without topics, or the fallback to the rest of a forum).
    Chat,
}

/// How the history was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum SelectionMethod {
    /// Everything considered (small history, selection off, or nothing older than the recent items).
    All,
    /// The newest 16 / 8 eligible items (`history.policy = "mode_cap"`).
    Cap,
    /// Model triage chose the older items.
    Triage,
    /// The lexical ranker chose the older items.
    Lexical,
    /// No model (or a failed one with `on_triage_error = "keep_all"`): every older item kept.
    FailOpen,
    /// Only the guaranteed recent items (a failed triage, or a valid empty answer).
    RecentOnly,
}

/// The resolver's reason codes (each scoring rule's name), in output order.
pub(crate) const REASONS: &[&str] = &[
    "exact_reply_target",
    "in_reply_chain",
    "same_topic",
    "kind_match",
    "currently_active",
    "recent_object",
    "bot_created",
    "owned_by_sender",
    "touched_in_interaction",
    "positional_hint",
    "ordinal_hint",
    "carrier_message",
    "stale_penalty",
    "weak_scope_fallback",
];

/// A scoring rule, as the bit of its code in [`REASONS`].
#[derive(Clone, Copy)]
pub(crate) enum R {
    ExactReplyTarget = 0,
    InReplyChain,
    SameTopic,
    KindMatch,
    CurrentlyActive,
    RecentObject,
    BotCreated,
    OwnedBySender,
    TouchedInInteraction,
    PositionalHint,
    OrdinalHint,
    CarrierMessage,
    StalePenalty,
    WeakScopeFallback,
}

/// A candidate's reason codes: the set of scoring rules that gave it points, written out as the list of their codes
/// in output order. Kept as the bits it is scored with, so that an answer's candidates carry their reasons without
/// a list allocated for each.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Reasons(u32);

impl Reasons {
    /// The codes of `mask`'s bits (bits past the last code are not codes, and are left out).
    pub(crate) fn of(mask: u32) -> Self {
        Self(mask & ((1 << REASONS.len()) - 1))
    }

    /// The codes, in output order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'static str> + Clone + use<> {
        Codes(self.0)
    }

    /// Whether `code` is one of them.
    pub fn contains(&self, code: &str) -> bool {
        self.iter().any(|c| c == code)
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.0.count_ones() as usize
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0 == 0
    }

    /// The codes as a list.
    pub fn to_vec(&self) -> Vec<&'static str> {
        self.iter().collect()
    }
}

/// The codes of a set's bits, lowest bit first (visiting only the bits that are set).
#[derive(Clone)]
struct Codes(u32);

impl Iterator for Codes {
    type Item = &'static str;

    fn next(&mut self) -> Option<&'static str> {
        let at = self.0.trailing_zeros() as usize;
        let code = REASONS.get(at)?;
        self.0 &= self.0 - 1;
        Some(code)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.0.count_ones() as usize;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Codes {}

impl std::fmt::Debug for Reasons {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl serde::Serialize for Reasons {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

crate::wire::schema_as!(Reasons => Vec<&'static str>);

impl PartialEq<[&str]> for Reasons {
    fn eq(&self, other: &[&str]) -> bool {
        self.iter().eq(other.iter().copied())
    }
}

impl PartialEq<Vec<&str>> for Reasons {
    fn eq(&self, other: &Vec<&str>) -> bool {
        *self == **other
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    /// Every exact kind is a word of its own, naming exactly that kind in a filter.
    #[test]
    fn every_kind_is_a_word() {
        for kind in ObjectKind::ALL {
            let word = KindName::parse(kind.as_str()).expect("every kind is a word");
            assert_eq!(word.kinds(), &[*kind]);
            assert_eq!(word.hint_kinds()[0], *kind);
        }
    }

    /// A kind set holds exactly the kinds it was made of, and with none it lets every kind win.
    #[test]
    fn kind_sets_are_their_kinds() {
        let families = KindName::ALL.iter().map(|w| w.hint_kinds()).chain([&[][..], ObjectKind::ALL]);
        for family in families {
            let set = KindSet::of(family);
            for kind in ObjectKind::ALL {
                assert_eq!(set.contains(*kind), family.contains(kind), "{family:?} {kind:?}");
                assert_eq!(set.admits(*kind), family.is_empty() || family.contains(kind), "{family:?} {kind:?}");
            }
        }
    }
}

#[cfg(test)]
mod reason_tests {
    use super::{REASONS, Reasons};

    /// Every combination of bits: the codes of the set bits, in output order, each once; as a list, a count, a
    /// membership test and written out. Bits past the last code are none.
    #[test]
    fn reasons_are_the_set_bits_in_output_order() {
        for mask in 0..1u32 << REASONS.len() {
            let want: Vec<&str> =
                REASONS.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, r)| *r).collect();
            for beyond in [0, 1 << REASONS.len(), 1 << 31] {
                let r = Reasons::of(mask | beyond);
                assert_eq!(r.to_vec(), want, "mask {mask:#b}");
                assert_eq!(r, want, "mask {mask:#b}");
                assert_eq!((r.len(), r.iter().len(), r.is_empty()), (want.len(), want.len(), want.is_empty()));
                for code in REASONS {
                    assert_eq!(r.contains(code), want.contains(code), "{code} in {mask:#b}");
                }
                assert!(!r.contains("") && !r.contains("unknown"));
                assert_eq!(serde_json::to_string(&r).ok(), serde_json::to_string(&want).ok());
                assert_eq!(format!("{r:?}"), format!("{want:?}"));
            }
        }
    }
}
