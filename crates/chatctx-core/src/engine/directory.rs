//! The engine's side of people directories ([`crate::directory`]): what the service logs them under, their
//! documents, and keeping every chat of a workspace in step with its directory.

use super::Engine;
use crate::chat::Chat;
use crate::directory::DirectoryDoc;
use crate::event::PersonEvent;

/// What a directory's log is stored under in place of a chat id: no chat id can start with a control character.
const LOG_PREFIX: &str = "\u{1}people:";

/// The chat id a workspace's directory is logged under.
pub fn directory_log_key(workspace: &str) -> String {
    format!("{LOG_PREFIX}{workspace}")
}

/// The workspace a log key names, when it is a directory's.
pub fn directory_of_log_key(chat_id: &str) -> Option<&str> {
    chat_id.strip_prefix(LOG_PREFIX)
}

impl Engine {
    /// Whether a `person` event would change its directory (an unchanged one need not be logged).
    pub fn person_changes(&self, p: &PersonEvent) -> bool {
        self.directories.would_change(&p.channel, self.person_workspace(p), &p.person)
    }

    /// The workspace a chat belongs to (`""`: the channel's own directory), if the chat is held.
    pub fn workspace_of(&self, channel: &str, chat_id: &str) -> Option<&str> {
        self.chat(channel, chat_id).map(Chat::workspace)
    }

    /// The workspace whose people directory should leave with `chat_id` when it is deleted: the chat's, when no
    /// other chat belongs to it (docs/protocol.md §3.11: people shared with other chats stay).
    pub fn orphaned_workspace(&self, channel: &str, chat_id: &str) -> Option<String> {
        let chats = self.chats.get(channel)?;
        let workspace = chats.get(chat_id)?.workspace();
        let shared = chats.iter().any(|(id, c)| id != chat_id && c.workspace() == workspace);
        (!shared && self.directories.get(channel, workspace).is_some()).then(|| workspace.to_owned())
    }

    /// Every directory held, as `(channel, workspace, people)`, sorted.
    pub fn directories(&self) -> Vec<(String, String, usize)> {
        self.directories.list()
    }

    /// A workspace's directory as a document, if held.
    pub fn export_directory(&self, channel: &str, workspace: &str) -> Option<DirectoryDoc> {
        self.directories.export(channel, workspace)
    }

    /// Replaces a workspace's directory with a document's, and shows its names in the workspace's chats.
    pub fn import_directory(&mut self, doc: &DirectoryDoc) {
        self.directories.import(doc, self.settings.conversation.max_people);
        self.show_people(&doc.channel, &doc.workspace_id, None);
    }

    /// Forgets a workspace's directory; whether it was held. Names already shown in stored texts stay.
    pub fn remove_directory(&mut self, channel: &str, workspace: &str) -> bool {
        self.directories.remove(channel, workspace)
    }

    /// Shows in every chat that reads `(channel, workspace)`'s directory (the channel's own, `""`, is every chat's
    /// fallback) the names it holds now: of `user` only, or of everyone. Each chat sees the person as its own view
    /// of the directories gives them (its workspace's entry before the channel's).
    pub(crate) fn show_people(&mut self, channel: &str, workspace: &str, user: Option<&str>) {
        let Some(chats) = self.chats.get_mut(channel) else { return };
        for chat in chats.values_mut().filter(|c| workspace.is_empty() || c.workspace() == workspace) {
            show(chat, channel, self.directories.view(channel, chat.workspace()), user);
        }
    }

    /// [`Engine::show_people`] for one chat, everyone (after the chat was loaded from a document).
    pub(crate) fn sync_chat(&mut self, channel: &str, chat_id: &str) {
        let Some(chat) = self.chats.get_mut(channel).and_then(|c| c.get_mut(chat_id)) else { return };
        show(chat, channel, self.directories.view(channel, chat.workspace()), None);
    }
}

fn show(chat: &mut Chat, channel: &str, view: crate::directory::View<'_>, user: Option<&str>) {
    match user {
        Some(u) => {
            if let Some(p) = view.by_id(u) {
                chat.learn(channel, p, super::apply::stored_tokens);
            }
        }
        None => {
            for p in view.everyone() {
                chat.learn(channel, p, super::apply::stored_tokens);
            }
        }
    }
}
