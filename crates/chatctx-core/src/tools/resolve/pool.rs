//! The candidate pool: bounded whatever the chat's size (reply chain, scope, activations, newest messages,
//! the chat fallback), each candidate once.

use super::reasons::R;
use super::{ResolveReferenceTarget, Tier};
use crate::chat::{Chat, Item};
use crate::engine::Engine;
use crate::kinds::{ItemKind, ObjectKind};
use crate::objects::{Flat, Liveness, Object, Ref};
use crate::time::Timestamp;
use std::cmp::Ordering;

/// A candidate's id without allocating: an object's own id, or a message's `"{message_id}:{kind}"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CandId<'a> {
    Obj(&'a str),
    Msg(&'a std::sync::Arc<str>, ObjectKind),
}

impl CandId<'_> {
    pub(super) fn parts(&self) -> (&str, &str, &str) {
        match self {
            CandId::Obj(id) => (id, "", ""),
            CandId::Msg(mid, kind) => (&**mid, ":", kind.as_str()),
        }
    }

    pub(super) fn render(&self) -> String {
        let (a, b, c) = self.parts();
        [a, b, c].concat()
    }

    /// Orders as the rendered ids would.
    pub(super) fn cmp(&self, other: &Self) -> Ordering {
        let (a1, a2, a3) = self.parts();
        let (b1, b2, b3) = other.parts();
        a1.bytes().chain(a2.bytes()).chain(a3.bytes()).cmp(b1.bytes().chain(b2.bytes()).chain(b3.bytes()))
    }
}

/// What a candidate is: a registered object, or a stored message (with its conversation's topic).
#[derive(Clone, Copy)]
pub(super) enum What<'a> {
    Obj(&'a Object),
    Msg(&'a Item, Option<&'a str>),
}

/// One candidate while scoring: what it is, and the features scoring reads, flat.
pub(super) struct Cand<'a> {
    pub(super) what: What<'a>,
    pub(super) kind: ObjectKind,
    pub(super) tier: Tier,
    pub(super) chain_depth: Option<usize>,
    pub(super) created_at: Timestamp,
    pub(super) last_touched: Timestamp,
    pub(super) active: bool,
    pub(super) stale: bool,
    pub(super) is_message: bool,
    /// A message whose live typed objects are candidates in their own right.
    pub(super) carrier: bool,
    pub(super) by_bot: bool,
    /// Created by the request's sender.
    pub(super) owned: bool,
    /// Activated while handling the current message.
    pub(super) touched: bool,
    /// In the request's topic (a forum topic).
    pub(super) same_topic: bool,
    pub(super) score: f64,
    pub(super) mask: u32,
}

impl<'a> Cand<'a> {
    pub(super) fn add(&mut self, points: f64, reason: R) {
        self.score += points;
        self.mask |= 1 << reason as u32;
    }

    /// The candidate's id, without allocating.
    pub(super) fn id(&self) -> CandId<'a> {
        match self.what {
            What::Obj(o) => CandId::Obj(&o.object_id),
            What::Msg(item, _) => match &item.message_id {
                Some(mid) => CandId::Msg(mid, self.kind),
                None => CandId::Obj(""),
            },
        }
    }
}

/// What the pool is built for.
pub(super) struct Ctx<'a> {
    pub(super) settings: &'a crate::settings::Settings,
    pub(super) now: Timestamp,
    /// Candidates newer than this (the current message) are not offered.
    pub(super) cutoff: Option<(Timestamp, u64)>,
    pub(super) current_id: &'a str,
    pub(super) sender: &'a str,
    pub(super) topic: Option<&'a str>,
    pub(super) allowed: Option<&'a [ObjectKind]>,
    /// The request topic's scope in the registry, when it has a topic and one was ever registered there.
    home_scope: Option<u32>,
}

impl<'a> Ctx<'a> {
    pub(super) fn allowed(&self, kind: ObjectKind) -> bool {
        self.allowed.is_none_or(|a| a.contains(&kind))
    }

    pub(super) fn tier_for(&self, topic: Option<&str>) -> Tier {
        match self.topic {
            Some(t) if topic == Some(t) => Tier::Topic,
            _ => Tier::Chat,
        }
    }

    fn same_topic(&self, topic: Option<&str>) -> bool {
        self.topic.is_some() && topic == self.topic
    }

    /// Whether an object's flat entry is in the request's topic (the request has one).
    fn in_topic(&self, f: &Flat) -> bool {
        self.home_scope == Some(f.scope)
    }

    /// The candidate of a registered object: its flat entry decides whether it is one, the object itself is
    /// read only for those that are.
    pub(super) fn object(
        &self,
        chat: &'a Chat,
        r: Ref,
        f: &Flat,
        tier: Tier,
        depth: Option<usize>,
    ) -> Option<Cand<'a>> {
        if !self.allowed(f.kind) || self.cutoff.is_some_and(|(t, _)| f.created_at > t) {
            return None;
        }
        let is_message = f.is_message();
        let (active, stale) = match f.liveness(self.now, &self.settings.objects) {
            Liveness::Expired if !is_message => return None,
            Liveness::Expired => (false, true),
            Liveness::Active { .. } => (true, f.closed_at.is_some()),
            Liveness::Known => (false, f.closed_at.is_some()),
        };
        let o = chat.objects.at(r)?;
        if is_message && o.source_message_id.as_deref() == Some(self.current_id) {
            return None; // the current message is the request, not a candidate
        }
        Some(Cand {
            what: What::Obj(o),
            kind: f.kind,
            tier,
            chain_depth: depth,
            created_at: f.created_at,
            last_touched: f.last_touched,
            active,
            stale,
            is_message,
            carrier: false,
            by_bot: f.by_bot,
            owned: o.created_by_user_id.as_deref() == Some(self.sender),
            touched: o.activated_by.as_deref() == Some(self.current_id),
            same_topic: self.in_topic(f),
            score: if is_message { 0.0 } else { self.settings.resolver.typed_object },
            mask: 0,
        })
    }

    /// The `message` / `bot_message` candidate of a stored message (or its registry entry, which carries
    /// its activations), with the key to de-duplicate it by when it is the registry entry.
    pub(super) fn message(
        &self,
        chat: &'a Chat,
        item: &'a Item,
        topic: Option<&'a str>,
        tier: Tier,
        depth: Option<usize>,
    ) -> Option<(Cand<'a>, Option<usize>)> {
        let mid: &str = item.message_id.as_deref()?;
        if mid == self.current_id || self.cutoff.is_some_and(|c| item.key() > c) {
            return None;
        }
        let kind = if item.kind == ItemKind::OutboundAgent { ObjectKind::BotMessage } else { ObjectKind::Message };
        if !self.allowed(kind) || item.kind == ItemKind::System {
            return None;
        }
        // One look at the message's objects: a message candidate that was activated before is registered
        // (its entry carries the activation), and a message carrying live typed objects is their carrier.
        let mut registered = None;
        let mut carrier = false;
        for (r, f) in chat.objects.source_refs(mid) {
            if f.kind == kind {
                registered = Some((r, f));
            } else if !f.is_message()
                && self.allowed(f.kind)
                && f.liveness(self.now, &self.settings.objects) != Liveness::Expired
            {
                carrier = true;
            }
        }
        if let Some((r, f)) = registered {
            return self.object(chat, r, f, tier, depth).map(|c| (Cand { carrier, ..c }, Some(key_of(f))));
        }
        let ttl = self.settings.objects.ttl(kind);
        let cand = Cand {
            what: What::Msg(item, topic),
            kind,
            tier,
            chain_depth: depth,
            created_at: item.sent_at,
            last_touched: item.sent_at,
            active: false,
            stale: self.now >= item.sent_at.plus(ttl),
            is_message: true,
            carrier,
            by_bot: item.kind == ItemKind::OutboundAgent,
            owned: chat.people.user_id(item.sender) == Some(self.sender),
            touched: false,
            same_topic: self.same_topic(topic),
            score: 0.0,
            mask: 0,
        };
        Some((cand, None))
    }
}

/// The de-duplication key of a registered object: the address of its flat entry (stable for the call).
fn key_of(f: &Flat) -> usize {
    f as *const Flat as usize
}

/// A set of candidate keys (addresses, never 0) for one call: open addressing with linear probing, sized
/// to the call, so de-duplication costs a multiply and a probe or two per reference.
pub(super) struct Seen {
    pub(super) slots: Vec<usize>,
    pub(super) mask: usize,
}

impl Seen {
    pub(super) fn with_capacity(n: usize) -> Self {
        let size = n.max(16).next_power_of_two();
        Self { slots: vec![0; size], mask: size - 1 }
    }

    /// Inserts `key`; false when it was already there.
    pub(super) fn insert(&mut self, key: usize) -> bool {
        // Fibonacci hashing of the address; its low bits are alignment, so shift them out first.
        let mut i = ((key >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) & self.mask;
        loop {
            match self.slots[i] {
                0 => {
                    self.slots[i] = key;
                    return true;
                }
                k if k == key => return false,
                _ => i = (i + 1) & self.mask,
            }
        }
    }
}

/// Where a raw reference points.
#[derive(Clone, Copy)]
pub(super) enum Src<'a> {
    Obj(Ref, &'a Flat),
    Msg(&'a Item, Option<&'a str>),
}

/// A candidate before de-duplication: identity, tier and where to build it from.
#[derive(Clone, Copy)]
pub(super) struct Raw<'a> {
    pub(super) key: usize,
    pub(super) tier: Tier,
    pub(super) depth: Option<usize>,
    pub(super) src: Src<'a>,
}

/// The candidate pool of a request, before scoring, with what scoring needs to know about the request.
pub(super) struct Gathered<'a> {
    pub(super) ctx: Ctx<'a>,
    pub(super) pool: Vec<Cand<'a>>,
    pub(super) reply_target: Option<&'a str>,
    pub(super) fallback: bool,
}

/// Builds the bounded candidate pool: reply chain, scope, chat fallback; each candidate once.
pub(super) fn gather<'a>(
    chat: &'a Chat,
    settings: &'a crate::settings::Settings,
    req: &'a ResolveReferenceTarget,
    now: Timestamp,
) -> Gathered<'a> {
    let cfg = &settings.resolver;
    let scope =
        chat.request_scope(req.scope.topic_id.as_deref(), Some(req.current()), req.reply_to_message_id.as_deref());
    let (topic, reply_target) = (scope.topic, scope.reply_target);
    let ctx = Ctx {
        settings,
        now,
        cutoff: scope.current.map(Item::key),
        current_id: req.current(),
        sender: req.sender(),
        topic,
        allowed: req.allowed_kinds.as_deref(),
        home_scope: topic.and_then(|t| chat.objects.scope(Some(t))).map(|idx| idx.id),
    };
    // Raw references first (cheap, with duplicates, read from the flat array), full candidates only for the
    // survivors.
    let mut raw: Vec<Raw<'_>> = Vec::with_capacity(128);
    let push_obj = |raw: &mut Vec<Raw<'a>>, (r, f): (Ref, &'a Flat), tier: Tier, depth: Option<usize>| {
        if ctx.allowed(f.kind) && ctx.cutoff.is_none_or(|(t, _)| f.created_at <= t) {
            raw.push(Raw { key: key_of(f), tier, depth, src: Src::Obj(r, f) });
        }
    };
    let push_msg =
        |raw: &mut Vec<Raw<'a>>, item: &'a Item, topic: Option<&'a str>, tier: Tier, depth: Option<usize>| {
            raw.push(Raw { key: item as *const Item as usize, tier, depth, src: Src::Msg(item, topic) });
        };
    let objects = &chat.objects;

    // 1. The reply chain, a few messages up from the reply target.
    for (depth, (mid, stored)) in chat.reply_chain(reply_target, cfg.reply_chain_depth).into_iter().enumerate() {
        for rf in objects.source_refs(mid) {
            push_obj(&mut raw, rf, Tier::ReplyChain, Some(depth));
        }
        if let Some((conv, item)) = stored {
            push_msg(&mut raw, item, conv.topic.as_deref(), Tier::ReplyChain, Some(depth));
        }
    }
    // 2. The scope: objects carried by the current message, the newest objects (overall and of the kinds
    //    asked for), the activations within the TTL horizon, the newest messages.
    for (r, f) in objects.source_refs(req.current()) {
        push_obj(&mut raw, (r, f), if ctx.in_topic(f) { Tier::Topic } else { Tier::Chat }, None);
    }
    let home = ctx.tier_for(topic);
    if let Some(idx) = objects.scope(topic) {
        for rf in objects.newest_refs(idx, None).take(cfg.scope_window) {
            push_obj(&mut raw, rf, home, None);
        }
        let focus: &[ObjectKind] = req.allowed_kinds.as_deref().unwrap_or(&req.hints.target_kinds);
        for &k in focus {
            for rf in objects.newest_refs(idx, Some(k)).take(cfg.scope_window) {
                push_obj(&mut raw, rf, home, None);
            }
        }
        let horizon = settings.objects.horizon();
        let recent =
            objects.activation_refs(idx).take_while(|(_, f)| f.activated_at.is_some_and(|a| now < a.plus(horizon)));
        for rf in recent.take(cfg.scope_window) {
            push_obj(&mut raw, rf, home, None);
        }
    }
    if let Some(conv) = chat.conv_of(topic) {
        for item in conv.before(ctx.cutoff).rev().take(cfg.message_window) {
            push_msg(&mut raw, item, topic, home, None);
        }
    }
    // 3. In a forum topic, the rest of the chat, penalized.
    let fallback = topic.is_some();
    if fallback {
        // A last resort, penalized anyway: a quarter of the window is enough.
        let fallback_window = cfg.scope_window.div_ceil(4);
        let elsewhere = objects.newest_in_chat_refs().filter(|(_, f)| !ctx.in_topic(f));
        for rf in elsewhere.take(fallback_window) {
            push_obj(&mut raw, rf, Tier::Chat, None);
        }
    }

    let pool = candidates(chat, &ctx, &raw);
    Gathered { ctx, pool, reply_target, fallback }
}

/// Each candidate once, built from its raw references. References were pushed narrowest tier (and shallowest
/// chain depth) first, so the first occurrence is the one to keep.
fn candidates<'a>(chat: &'a Chat, ctx: &Ctx<'a>, raw: &[Raw<'a>]) -> Vec<Cand<'a>> {
    // A registered message candidate can arrive both as a message and as an object: its built candidate's
    // key is the object's, checked as well. At most two inserts per reference: four slots each keep the load at or below half.
    let mut seen = Seen::with_capacity(raw.len() * 4);
    let mut pool: Vec<Cand<'_>> = Vec::with_capacity(raw.len());
    for r in raw {
        if !seen.insert(r.key) {
            continue;
        }
        let built = match r.src {
            Src::Obj(o, f) => ctx.object(chat, o, f, r.tier, r.depth).map(|c| (c, None)),
            Src::Msg(item, topic) => ctx.message(chat, item, topic, r.tier, r.depth),
        };
        if let Some((c, key)) = built
            && key.is_none_or(|k| k == r.key || seen.insert(k))
        {
            pool.push(c);
        }
    }
    pool
}

/// The scoring inputs of one gathered candidate, flat (for the side-by-side benchmark against a bare
/// linear pass; not part of the contract).
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub struct FlatCandidate {
    /// Kind.
    pub kind: ObjectKind,
    /// 0 = the reply target.
    pub chain_depth: Option<usize>,
    /// Same topic as the request.
    pub same_topic: bool,
    /// Found in the chat fallback.
    pub fallback: bool,
    /// Active.
    pub active: bool,
    /// Closed or past TTL.
    pub stale: bool,
    /// Created by the sender.
    pub owned: bool,
    /// Created by the bot.
    pub by_bot: bool,
    /// A message candidate.
    pub is_message: bool,
    /// Activated while handling the current message.
    pub touched: bool,
    /// Seconds since the last touch.
    pub age_secs: i64,
    /// Creation time (Unix seconds).
    pub created_at: i64,
}

impl Engine {
    /// The candidates `resolve_reference_target` would score for `req`, flat. For benchmarks.
    #[doc(hidden)]
    pub fn resolve_candidates(&self, req: &ResolveReferenceTarget, now: Timestamp) -> Vec<FlatCandidate> {
        let Some(chat) = self.chat(&req.scope.channel, &req.scope.chat_id) else { return Vec::new() };
        let g = gather(chat, self.settings(), req, now);
        g.pool
            .iter()
            .map(|c| FlatCandidate {
                kind: c.kind,
                chain_depth: c.chain_depth,
                same_topic: c.same_topic,
                fallback: c.tier == Tier::Chat && g.ctx.topic.is_some(),
                active: c.active,
                stale: c.stale,
                owned: c.owned,
                by_bot: c.by_bot,
                is_message: c.is_message,
                touched: c.touched,
                age_secs: (now.unix() - c.last_touched.unix()).max(0),
                created_at: c.created_at.unix(),
            })
            .collect()
    }
}
