//! Export and import of one chat as a conversation document ([`crate::transfer`]): the engine's side of it.

use serde_json::Value;

use super::Engine;
use crate::chat::{Chat, Extra, Item};
use crate::error::Error;
use crate::objects::Object;
use crate::scenario::Scenario;
use crate::transfer::{ConversationDoc, FORMAT, ItemDoc, ObjectDoc};

fn object_doc(o: &Object) -> ObjectDoc {
    ObjectDoc {
        object_id: o.object_id.clone(),
        kind: o.kind,
        source_message_id: o.source_message_id.clone(),
        topic_id: o.topic_id.clone(),
        title_or_label: o.title_or_label.clone(),
        created_by_user_id: o.created_by_user_id.clone(),
        created_by_bot: o.created_by_bot,
        created_at: o.created_at,
        last_touched_at: o.last_touched_at,
        activation: o.activation,
        activated_at: o.activated_at,
        activated_by: o.activated_by.as_deref().map(str::to_owned),
        closed_at: o.closed_at,
        external_id: o.external_id.clone(),
        file: o.file.as_deref().cloned(),
        caption: o.caption.clone(),
        author: o.author.clone(),
    }
}

impl Engine {
    /// The whole conversation of one chat as a document.
    pub fn export_conversation(&self, channel: &str, chat_id: &str) -> Result<ConversationDoc, Error> {
        self.conversation_view(channel, chat_id).map(super::view::ConversationView::into_doc)
    }

    /// Everything of a chat's document but its history ([`Engine::conversation_view`] borrows that).
    pub(super) fn export_without_history(&self, channel: &str, chat_id: &str, chat: &Chat) -> ConversationDoc {
        ConversationDoc {
            format: FORMAT.to_owned(),
            channel: channel.to_owned(),
            chat_id: chat_id.to_owned(),
            chat_type: chat.chat_type.as_deref().map(str::to_owned),
            title: chat.title.as_deref().map(str::to_owned),
            topic_titles: chat.topic_titles(),
            workspace_id: chat.workspace.as_deref().map(str::to_owned),
            people: chat.people.export(),
            history: Vec::new(),
            objects: chat.objects.in_order().map(object_doc).collect(),
            scenarios: chat.scenarios.iter().map(|(t, s)| s.export(t.clone())).collect(),
            summaries: chat.summaries.values().cloned().collect(),
            threads: self.threads_of(channel, chat_id),
            mentions: chat.mentions.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    /// Loads a conversation document, replacing whatever the engine held for that chat. The document is
    /// checked whole first; a bad one changes nothing.
    pub fn import_conversation(&mut self, v: &Value) -> Result<(), Error> {
        self.import_document(&ConversationDoc::from_value(v)?)
    }

    /// The first thread of `doc` that [`Engine::thread_conflict`] refuses, and why: an import through the
    /// service is refused with it.
    pub fn import_conflict(&self, doc: &ConversationDoc) -> Option<String> {
        doc.threads
            .iter()
            .filter(|t| **t != doc.chat_id)
            .find_map(|t| self.thread_conflict(&doc.channel, &doc.chat_id, t))
    }

    /// [`Engine::import_conversation`] of a document already read.
    pub fn import_document(&mut self, doc: &ConversationDoc) -> Result<(), Error> {
        if doc.format != FORMAT {
            return Err(Error::invalid_request(format!("field `format`: expected {FORMAT:?}, got {:?}", doc.format)));
        }
        if doc.chat_id.is_empty() || doc.channel.is_empty() {
            return Err(Error::invalid_request("fields `channel` and `chat_id` must not be empty"));
        }
        if let Some((i, it)) = doc.history.iter().enumerate().find(|(_, it)| it.sender as usize >= doc.people.len()) {
            return Err(Error::invalid_request(format!(
                "field `history[{i}].sender`: no person {} in `people`",
                it.sender
            )));
        }
        let titles = doc.title.iter().map(|t| ("title".to_owned(), t));
        let topics = doc.topic_titles.iter().map(|(k, t)| (format!("topic_titles.{k}"), t));
        if let Some((field, _)) = titles.chain(topics).find(|(_, t)| !crate::event::TitleEvent::fits(t)) {
            return Err(Error::invalid_request(format!(
                "field `{field}`: a title is a non-blank string of at most {} bytes",
                crate::event::MAX_NAME_BYTES
            )));
        }
        let settings = self.settings().clone();
        let mut chat = Chat::default();
        chat.chat_type = doc.chat_type.as_deref().map(Into::into);
        chat.workspace = doc.workspace_id.as_deref().map(Into::into);
        chat.mentions = doc.mentions.iter().map(|(k, v)| (k.as_str().into(), v.as_str().into())).collect();
        for p in &doc.people {
            chat.people.import(p);
        }
        // A message id the document repeats: the later copy replaces the earlier (`Chat::insert`; docs/protocol.md §7).
        for (seq, it) in doc.history.iter().enumerate() {
            // A document is taken whole (one written by this engine holds at most `max_topics` topics).
            let conv = chat.conv_for(it.topic_id.as_deref(), usize::MAX);
            chat.insert(
                conv,
                item_of(seq, it),
                settings.conversation.cache_max_per_conversation.max(doc.history.len()),
            );
        }
        chat.next_seq = doc.history.len() as u64;
        chat.title = doc.title.as_deref().map(Into::into);
        for (topic, title) in &doc.topic_titles {
            chat.set_title(Some(topic), title, usize::MAX);
        }
        // After the history, so that each object's source message, when stored, learns of it.
        for o in &doc.objects {
            chat.register(
                Object {
                    object_id: o.object_id.clone(),
                    kind: o.kind,
                    source_message_id: o.source_message_id.clone(),
                    topic_id: o.topic_id.clone(),
                    title_or_label: o.title_or_label.clone(),
                    created_by_user_id: o.created_by_user_id.clone(),
                    created_by_bot: o.created_by_bot,
                    created_at: o.created_at,
                    last_touched_at: o.last_touched_at,
                    activation: o.activation,
                    activated_at: o.activated_at,
                    closed_at: o.closed_at,
                    external_id: o.external_id.clone(),
                    activated_by: o.activated_by.as_deref().map(Into::into),
                    file: o.file.clone().map(std::sync::Arc::new),
                    caption: o.caption.clone(),
                    author: o.author.clone(),
                },
                settings.objects.max_per_chat.max(doc.objects.len()),
                &settings.objects,
            );
        }
        for s in &doc.scenarios {
            chat.scenarios.insert(s.topic_id.clone(), Scenario::import(s));
        }
        for s in &doc.summaries {
            chat.summaries.insert(s.topic_id.clone(), s.clone());
        }
        let externals: Vec<(String, String)> =
            doc.objects.iter().filter_map(|o| o.external_id.clone().map(|e| (e, o.object_id.to_string()))).collect();
        // Threads the rule refuses are left out (a document written before the rule may hold them).
        let threads: Vec<&String> = doc
            .threads
            .iter()
            .filter(|t| **t != doc.chat_id && self.thread_conflict(&doc.channel, &doc.chat_id, t).is_none())
            .collect();
        self.replace_chat(&doc.channel, &doc.chat_id, chat, externals);
        for t in threads {
            self.add_thread(&doc.channel, &doc.chat_id, t);
        }
        // A document written before the directory learned a name shows it now, as the chat would have.
        self.sync_chat(&doc.channel, &doc.chat_id);
        Ok(())
    }
}

/// A document's history item as the chat keeps it (`seq` is its place in the document).
fn item_of(seq: usize, it: &ItemDoc) -> Item {
    let quote = it.quote.as_ref().map(|(r, t)| (r.as_str().into(), t.as_str().into()));
    Item {
        seq: seq as u64,
        sent_at: it.sent_at,
        sender: it.sender,
        kind: it.kind,
        origin: it.origin,
        triggered: it.triggered_agent,
        tokens: crate::engine::item_tokens(&it.text, quote.as_ref(), &it.actions),
        message_id: it.message_id.as_deref().map(Into::into),
        reply_to: it.reply_to_message_id.as_deref().map(Into::into),
        text: it.text.as_str().into(),
        refs: crate::chat::may_refer(&it.text),
        objects: false, // the document's objects come after its history (`Chat::register`)
        extra: Extra::boxed(quote, it.actions.clone()),
    }
}
