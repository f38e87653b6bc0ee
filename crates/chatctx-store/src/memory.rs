//! [`MemoryStore`]: the log in a `Vec`, for bots that must not write anything to disk.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::{Log as LogStore, Op, SharedLog, Store, StoreError, by_chat};

#[derive(Debug, Default)]
struct Log {
    /// Every operation with its position, in the order appended.
    ops: Vec<(u64, Op)>,
    /// Each chat's newest position.
    heads: HashMap<(String, String), u64>,
    /// Platform ids to their chats.
    externals: HashMap<String, (String, String)>,
    /// Revoked scope ids and their expiry.
    revoked: HashMap<String, i64>,
}

impl Log {
    /// Appends `lines` to a chat at its next positions.
    fn push(&mut self, channel: &str, chat_id: &str, lines: &[&str]) {
        let head = self.heads.entry((channel.to_owned(), chat_id.to_owned())).or_default();
        for line in lines {
            *head += 1;
            let op = Op { channel: channel.to_owned(), chat_id: chat_id.to_owned(), line: (*line).to_owned() };
            self.ops.push((*head, op));
        }
    }

    fn head(&self, channel: &str, chat_id: &str) -> u64 {
        // Keyed by owned strings; chats are few enough per call that the allocation does not matter here.
        self.heads.get(&(channel.to_owned(), chat_id.to_owned())).copied().unwrap_or(0)
    }
}

/// Keeps everything in memory. As a [`SharedLog`], several services in one process can use one as they would
/// use one PostgreSQL database (for tests).
#[derive(Debug, Default)]
pub struct MemoryStore {
    log: Mutex<Log>,
}

impl MemoryStore {
    fn log(&self) -> Result<MutexGuard<'_, Log>, StoreError> {
        self.log.lock().map_err(|_| StoreError::Poisoned)
    }
}

fn is(o: &Op, channel: &str, chat_id: &str) -> bool {
    o.channel == channel && o.chat_id == chat_id
}

impl Store for MemoryStore {
    fn revoke_scope(&self, id: &str, until: i64) -> Result<(), StoreError> {
        self.log()?.revoked.insert(id.to_owned(), until);
        Ok(())
    }

    fn revoked_scopes(&self, now: i64) -> Result<Vec<(String, i64)>, StoreError> {
        let log = self.log()?;
        Ok(log.revoked.iter().filter(|(_, t)| **t > now).map(|(k, t)| (k.clone(), *t)).collect())
    }

    fn load(&self, each: &mut dyn FnMut(u64, Op)) -> Result<u64, StoreError> {
        let log = self.log()?;
        log.ops.iter().for_each(|(pos, op)| each(*pos, op.clone()));
        Ok(log.ops.len() as u64)
    }
}

impl LogStore for MemoryStore {
    fn load_chat(&self, channel: &str, chat_id: &str, each: &mut dyn FnMut(u64, String)) -> Result<(), StoreError> {
        SharedLog::since(self, channel, chat_id, 0, each)
    }

    fn append(&self, ops: &[Op]) -> Result<(), StoreError> {
        let mut log = self.log()?;
        for ((channel, chat), lines) in by_chat(ops) {
            log.push(channel, chat, &lines);
        }
        Ok(())
    }

    fn delete_chat(&self, channel: &str, chat_id: &str) -> Result<u64, StoreError> {
        let mut log = self.log()?;
        let before = log.ops.len();
        log.ops.retain(|(_, o)| !is(o, channel, chat_id));
        Ok((before - log.ops.len()) as u64)
    }

    fn rewrite_chat(&self, channel: &str, chat_id: &str, ops: &[Op]) -> Result<(), StoreError> {
        let mut log = self.log()?;
        log.ops.retain(|(_, o)| !is(o, channel, chat_id));
        let lines: Vec<&str> = ops.iter().map(|o| o.line.as_str()).collect();
        log.push(channel, chat_id, &lines);
        Ok(())
    }
}

impl SharedLog for MemoryStore {
    fn since(
        &self,
        channel: &str,
        chat_id: &str,
        after: u64,
        each: &mut dyn FnMut(u64, String),
    ) -> Result<(), StoreError> {
        let log = self.log()?;
        for (pos, o) in log.ops.iter().filter(|(pos, o)| *pos > after && is(o, channel, chat_id)) {
            each(*pos, o.line.clone());
        }
        Ok(())
    }

    fn append_at(&self, channel: &str, chat_id: &str, head: u64, lines: &[String]) -> Result<Option<u64>, StoreError> {
        if lines.is_empty() {
            return Ok(Some(head));
        }
        let mut log = self.log()?;
        if log.head(channel, chat_id) != head {
            return Ok(None);
        }
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        log.push(channel, chat_id, &lines);
        Ok(Some(head + lines.len() as u64))
    }

    fn compact_at(&self, channel: &str, chat_id: &str, at: u64, line: &str) -> Result<(), StoreError> {
        let mut log = self.log()?;
        if !log.ops.iter().any(|(pos, o)| *pos == at && is(o, channel, chat_id)) {
            return Ok(());
        }
        log.ops.retain(|(pos, o)| !(*pos < at && is(o, channel, chat_id)));
        if let Some((_, o)) = log.ops.iter_mut().find(|(pos, o)| *pos == at && is(o, channel, chat_id)) {
            o.line = line.to_owned();
        }
        Ok(())
    }

    fn note_external(&self, channel: &str, chat_id: &str, external_id: &str) -> Result<(), StoreError> {
        self.log()?.externals.insert(external_id.to_owned(), (channel.to_owned(), chat_id.to_owned()));
        Ok(())
    }

    fn find_external(&self, external_id: &str) -> Result<Option<(String, String)>, StoreError> {
        Ok(self.log()?.externals.get(external_id).cloned())
    }

    fn forget_externals(&self, channel: &str, chat_id: &str) -> Result<(), StoreError> {
        self.log()?.externals.retain(|_, (ch, c)| !(ch == channel && c == chat_id));
        Ok(())
    }
}
