//! The closed vocabularies of the contract: object kinds, activation events, message kinds and origins.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
                $name::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown {} {s:?}", stringify!($name))))
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
    /// Something a follow-up can point at (SPEC §1).
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

vocabulary! {
    /// An explicit, meaningful interaction with an object (SPEC §4).
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
    /// Who produced a history item (SPEC §5.1).
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
    /// Why a message exists (SPEC §3.1). Only `interactive` items are ordinary conversation.
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
