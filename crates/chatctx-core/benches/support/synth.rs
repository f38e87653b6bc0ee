//! Synthetic conversations for benchmarks and load tests: a deterministic stream of realistic events as JSON
//! (several speakers per chat, forum topics, mentions with UTF-16 offsets, links, bot replies with actions,
//! reactions). The same seed always gives the same stream. Not part of any crate's API: the benchmarks and
//! examples that need it include this file as a module (`#[path = …] mod synth;`).

use serde_json::{Value, json};

const WORDS: &[&str] = &[
    "deploy",
    "migration",
    "failed",
    "again",
    "please",
    "check",
    "the",
    "logs",
    "tomorrow",
    "meeting",
    "poll",
    "lunch",
    "image",
    "review",
    "update",
    "ticket",
    "release",
    "branch",
    "what",
    "about",
    "this",
    "link",
    "summary",
    "budget",
    "plan",
    "trip",
    "hotel",
    "booking",
    "garden",
    "photo",
    "😀",
    "ок",
    "спасибо",
    "日本",
    "draft",
    "ship",
    "it",
    "now",
];

/// Generates events round-robin over `chats` chats.
#[derive(Debug, Clone)]
pub struct Synth {
    chats: u64,
    state: u64,
    next_id: Vec<u64>,
    time: i64,
}

impl Synth {
    /// A generator over `chats` chats (at least one).
    pub fn new(chats: u64, seed: u64) -> Self {
        let chats = chats.max(1);
        Self {
            chats,
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            next_id: vec![0; chats as usize],
            time: 1_770_000_000,
        }
    }

    fn rand(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.rand() % n.max(1)
    }

    fn sentence(&mut self, words: u64) -> String {
        let mut s = String::new();
        for i in 0..words {
            if i > 0 {
                s.push(' ');
            }
            s.push_str(WORDS[self.below(WORDS.len() as u64) as usize]);
        }
        s
    }

    /// The next event (a `message` or `reaction` of docs/protocol.md §3).
    pub fn next_event(&mut self) -> Value {
        let chat = self.below(self.chats);
        let idx = chat as usize;
        self.time += 1 + self.below(3) as i64;
        let chat_id = format!("-100{}", 1_000_000 + chat);
        let forum = chat.is_multiple_of(5);
        let topic = forum.then(|| (1 + self.below(3)).to_string());
        let last = self.next_id[idx];
        let roll = self.below(100);
        if roll < 5 && last > 0 {
            let target = last - self.below(last.min(5));
            let user = self.below(20);
            return json!({"type": "reaction", "chat_id": chat_id, "message_id": target.to_string(), "direction": "inbound",
                          "sender": {"user_id": (1000 + user).to_string(), "username": format!("user{user}")},
                          "emoji": ["👍"], "sent_at": self.time});
        }
        self.next_id[idx] += 1;
        let id = self.next_id[idx];
        let mut v = if roll < 15 && last > 0 {
            let mut v = json!({"type": "message", "chat_id": chat_id, "message_id": id.to_string(), "kind": "outbound_agent",
                "reply_to_message_id": last.to_string(), "sent_at": self.time,
                "sender": {"user_id": "999", "username": "synth_bot", "display_name": "Synth Bot", "is_bot": true},
                "text": self.sentence(12)});
            if roll < 8 {
                v["actions"] = json!(["search_web deploy failure", "fetch_url https://ci.example.org/run/1"]);
            }
            v
        } else {
            let user = self.below(20);
            let words = 5 + self.below(10);
            let mut text = self.sentence(words);
            let mut entities = Vec::new();
            if roll.is_multiple_of(7) {
                let other = self.below(20);
                let mention = format!("@user{other} ");
                entities.push(json!({"type": "mention", "offset": 0, "length": mention.len() - 1}));
                text.insert_str(0, &mention);
            }
            if roll.is_multiple_of(19) {
                let offset = text.encode_utf16().count() + 1;
                text.push_str(" https://example.org/a/");
                text.push_str(&id.to_string());
                entities.push(json!({"type": "url", "offset": offset, "length": text.encode_utf16().count() - offset}));
            }
            let mut v = json!({"type": "message", "chat_id": chat_id, "chat_type": "supergroup", "message_id": id.to_string(),
                "kind": "inbound_user", "sent_at": self.time,
                "sender": {"user_id": (1000 + user).to_string(), "username": format!("user{user}"), "first_name": format!("User {user}")},
                "text": text, "triggered_agent": roll.is_multiple_of(3)});
            if !entities.is_empty() {
                v["entities"] = Value::Array(entities);
            }
            if roll.is_multiple_of(11) && last > 0 {
                v["reply_to_message_id"] = json!((last - self.below(last.min(3))).to_string());
            }
            v
        };
        if let Some(t) = topic {
            v["topic_id"] = json!(t);
        }
        v
    }
}

impl Iterator for Synth {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        Some(self.next_event())
    }
}
