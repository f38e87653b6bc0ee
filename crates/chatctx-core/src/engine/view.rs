//! A chat's conversation document borrowed from the engine ([`ConversationView`]): written out, the same bytes as the
//! exported [`ConversationDoc`], without copying the history's strings first. What a snapshot line is written from
//! (the history is most of a busy chat's document, and copying it, then freeing the copy, was about a third of
//! making the line).

use serde::{Serialize, Serializer};

use super::{Engine, unknown_chat};
use crate::chat::Item;
use crate::error::Error;
use crate::kinds::{ItemKind, Origin};
use crate::time::Timestamp;
use crate::transfer::{ConversationDoc, ItemDoc};

/// One history item as a document holds it, borrowed: [`ItemDoc`]'s fields in its order, serialized alike.
#[derive(Serialize)]
struct ItemView<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    topic_id: Option<&'a str>,
    kind: ItemKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    message_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reply_to_message_id: Option<&'a str>,
    sent_at: Timestamp,
    sender: u32,
    text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    quote: Option<(&'a str, &'a str)>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    actions: &'a [String],
    origin: Origin,
    triggered_agent: bool,
}

impl<'a> ItemView<'a> {
    fn of(i: &'a Item, topic: Option<&'a str>) -> Self {
        let extra = i.extra.as_deref();
        Self {
            topic_id: topic,
            kind: i.kind,
            message_id: i.message_id.as_deref(),
            reply_to_message_id: i.reply_to.as_deref(),
            sent_at: i.sent_at,
            sender: i.sender,
            text: &i.text,
            quote: extra.and_then(|x| x.quote.as_ref()).map(|(r, t)| (&**r, &**t)),
            actions: extra.map_or(&[], |x| &x.actions),
            origin: i.origin,
            triggered_agent: i.triggered,
        }
    }

    /// As the exported document holds it. Every field of [`ItemDoc`] is named here, so a field added to it does not
    /// compile until it is added to the view too.
    fn owned(&self) -> ItemDoc {
        ItemDoc {
            topic_id: self.topic_id.map(str::to_owned),
            kind: self.kind,
            message_id: self.message_id.map(str::to_owned),
            reply_to_message_id: self.reply_to_message_id.map(str::to_owned),
            sent_at: self.sent_at,
            sender: self.sender,
            text: self.text.to_owned(),
            quote: self.quote.map(|(r, t)| (r.to_owned(), t.to_owned())),
            actions: self.actions.to_vec(),
            origin: self.origin,
            triggered_agent: self.triggered_agent,
        }
    }
}

/// A chat's conversation document with its history borrowed from the chat ([`Engine::conversation_view`]): serialized,
/// the bytes of the [`ConversationDoc`] that [`Engine::export_conversation`] gives.
pub struct ConversationView<'a> {
    /// Everything but the history (whose place in it stays empty).
    doc: ConversationDoc,
    /// The history: each item with its topic, oldest first.
    items: Vec<(&'a Item, Option<&'a str>)>,
}

impl ConversationView<'_> {
    /// The document, owned.
    pub fn into_doc(self) -> ConversationDoc {
        let history = self.items.iter().map(|(i, topic)| ItemView::of(i, *topic).owned()).collect();
        ConversationDoc { history, ..self.doc }
    }

    /// [`ConversationDoc::nesting_bound`] of the document (its history does not change it).
    pub fn nesting_bound(&self) -> usize {
        self.doc.nesting_bound()
    }
}

/// The history of a [`ConversationView`], serialized item by item.
struct History<'v, 'a>(&'v [(&'a Item, Option<&'a str>)]);

impl Serialize for History<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|(i, topic)| ItemView::of(i, *topic)))
    }
}

impl Serialize for ConversationView<'_> {
    /// [`ConversationDoc`]'s fields in its order, with its attributes. Every field is named (no `..`), so a field
    /// added to the document does not compile until it is written here too; a test holds the bytes to the
    /// document's own serialization.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use std::collections::BTreeMap;
        #[derive(Serialize)]
        struct Shape<'v, 'a> {
            format: &'v str,
            channel: &'v str,
            chat_id: &'v str,
            #[serde(skip_serializing_if = "Option::is_none")]
            chat_type: &'v Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            title: &'v Option<String>,
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            topic_titles: &'v BTreeMap<String, String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            workspace_id: &'v Option<String>,
            people: &'v [crate::transfer::PersonDoc],
            history: History<'v, 'a>,
            objects: &'v [crate::transfer::ObjectDoc],
            scenarios: &'v [crate::transfer::ScenarioDoc],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            summaries: &'v [crate::summary::Summary],
            #[serde(skip_serializing_if = "<[_]>::is_empty")]
            threads: &'v [String],
            #[serde(skip_serializing_if = "BTreeMap::is_empty")]
            mentions: &'v BTreeMap<String, String>,
        }
        let ConversationDoc {
            format,
            channel,
            chat_id,
            chat_type,
            title,
            topic_titles,
            workspace_id,
            people,
            history: _,
            objects,
            scenarios,
            summaries,
            threads,
            mentions,
        } = &self.doc;
        Shape {
            format,
            channel,
            chat_id,
            chat_type,
            title,
            topic_titles,
            workspace_id,
            people,
            history: History(&self.items),
            objects,
            scenarios,
            summaries,
            threads,
            mentions,
        }
        .serialize(s)
    }
}

impl Engine {
    /// The conversation document of one chat, its history borrowed ([`ConversationView`]).
    pub fn conversation_view(&self, channel: &str, chat_id: &str) -> Result<ConversationView<'_>, Error> {
        let chat = self.chat(channel, chat_id).ok_or_else(|| unknown_chat(chat_id))?;
        let mut items: Vec<(&Item, Option<&str>)> =
            chat.convs.iter().flat_map(|c| c.items.iter().map(move |i| (i, c.topic.as_deref()))).collect();
        items.sort_by_key(|(i, _)| i.key());
        Ok(ConversationView { doc: self.export_without_history(channel, chat_id, chat), items })
    }
}
