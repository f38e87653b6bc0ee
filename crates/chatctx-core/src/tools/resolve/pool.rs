//! The candidate pool: bounded whatever the chat's size (reply chain, scope, activations, newest messages,
//! the chat fallback), each candidate once.

use super::{ResolveReferenceTarget, Tier};
use crate::chat::{Chat, Item, RequestScope};
use crate::engine::Engine;
use crate::kinds::R;
use crate::kinds::{ItemKind, KindSet, ObjectKind};
use crate::objects::{Live, LivenessAt, Object};
use crate::time::Timestamp;
use crate::tools::seen::Seen;
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
        // Sized once and written in three copies (`concat` measures and checks each part in a generic loop).
        let mut id = String::with_capacity(a.len() + b.len() + c.len());
        id.push_str(a);
        id.push_str(b);
        id.push_str(c);
        id
    }

    /// Its id as a shared string, allocated once (a short id is written on the stack first).
    pub(super) fn shared(&self) -> std::sync::Arc<str> {
        let (a, b, c) = self.parts();
        let mut buf = [0u8; 64];
        let Some(out) = buf.get_mut(..a.len() + b.len() + c.len()) else { return self.render().into() };
        let (head, rest) = out.split_at_mut(a.len());
        let (mid, tail) = rest.split_at_mut(b.len());
        head.copy_from_slice(a.as_bytes());
        mid.copy_from_slice(b.as_bytes());
        tail.copy_from_slice(c.as_bytes());
        std::str::from_utf8(out).map_or_else(|_| self.render().into(), Into::into)
    }

    /// Orders as the rendered ids would.
    pub(super) fn cmp(&self, other: &Self) -> Ordering {
        let (a1, a2, a3) = self.parts();
        let (b1, b2, b3) = other.parts();
        a1.bytes().chain(a2.bytes()).chain(a3.bytes()).cmp(b1.bytes().chain(b2.bytes()).chain(b3.bytes()))
    }
}

/// Whether two ids (message, topic) are the same string, read where ids that differ mostly differ first: their
/// lengths, then their last bytes (message ids count up). Most comparisons of a resolution end there, without the
/// library call a string comparison makes.
#[inline]
pub(super) fn same_id(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    a.len() == b.len() && a.last() == b.last() && (a.len() <= 1 || a == b)
}

/// [`same_id`] of two ids that may be absent: equal when both are absent, or both present and the same.
#[inline]
pub(super) fn same_opt(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => same_id(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// One candidate while scoring.
pub(super) struct Cand<'a> {
    /// What it was made from, where its strings are read when asked for (a candidate stays small to move).
    pub(super) of: Of<'a>,
    pub(super) kind: ObjectKind,
    pub(super) created_at: Timestamp,
    pub(super) last_touched: Timestamp,
    pub(super) by_bot: bool,
    pub(super) active: bool,
    pub(super) stale: bool,
    pub(super) tier: Tier,
    pub(super) chain_depth: Option<usize>,
    /// A message whose live typed objects are candidates in their own right.
    pub(super) carrier: bool,
    /// Found through the index of the request's own topic (or, outside a topic, of the chat's general
    /// conversation), which holds only objects of that topic: its topic is the request's without comparing.
    pub(super) in_topic: bool,
    pub(super) score: f64,
    pub(super) mask: u32,
}

/// What a candidate is made from (a raw reference points at the same).
#[derive(Clone, Copy)]
pub(super) enum Of<'a> {
    /// A registered object (a message candidate that was activated before has one).
    Obj(&'a Object),
    /// A stored message, in its conversation's topic (the conversation's own string, which a descriptor shares).
    Msg { chat: &'a Chat, item: &'a Item, mid: &'a std::sync::Arc<str>, topic: Option<&'a std::sync::Arc<str>> },
}

// About fifty are built per resolution and moved into the pool: they stay small (they were 296 bytes while
// they copied their strings' references).
const _: () = assert!(std::mem::size_of::<Cand<'static>>() <= 96);

impl Of<'_> {
    /// Identity for de-duplication: the address of the object or stored message.
    pub(super) fn key(&self) -> usize {
        match *self {
            Of::Obj(o) => o as *const Object as usize,
            Of::Msg { item, .. } => item as *const Item as usize,
        }
    }
}

impl<'a> Cand<'a> {
    /// Its id, without allocating.
    pub(super) fn id(&self) -> CandId<'a> {
        match self.of {
            Of::Obj(o) => CandId::Obj(&o.object_id),
            Of::Msg { mid, .. } => CandId::Msg(mid, self.kind),
        }
    }

    pub(super) fn topic(&self) -> Option<&'a str> {
        match self.of {
            Of::Obj(o) => o.topic_id.as_deref(),
            Of::Msg { topic, .. } => topic.map(|t| &**t),
        }
    }

    /// Who created or posted it.
    pub(super) fn by_user(&self) -> Option<&'a str> {
        match self.of {
            Of::Obj(o) => o.created_by_user_id.as_deref(),
            Of::Msg { chat, item, .. } => chat.people.user_id(item.sender),
        }
    }

    /// Its title or label (a message's text).
    pub(super) fn label(&self) -> Option<&'a str> {
        match self.of {
            Of::Obj(o) => o.title_or_label.as_deref(),
            Of::Msg { item, .. } => Some(&item.text),
        }
    }

    /// The message that last activated it.
    pub(super) fn activated_by(&self) -> Option<&'a str> {
        match self.of {
            Of::Obj(o) => o.activated_by.as_deref(),
            Of::Msg { .. } => None,
        }
    }
}

impl Cand<'_> {
    pub(super) fn add(&mut self, points: f64, reason: R) {
        self.score += points;
        self.mask |= 1 << reason as u32;
    }
}

/// What the pool is built for.
pub(super) struct Ctx<'a> {
    pub(super) settings: &'a crate::settings::Settings,
    pub(super) now: Timestamp,
    /// Candidates newer than this (the current message) are not offered.
    pub(super) cutoff: Option<(Timestamp, u64)>,
    /// The cutoff's time, or the last a timestamp holds when there is none: objects created after it are newer than
    /// the current message (one comparison an object, without asking whether there is a cutoff).
    pub(super) newest: Timestamp,
    pub(super) current_id: &'a str,
    /// The current message, when it is stored.
    pub(super) current: Option<&'a Item>,
    pub(super) topic: Option<&'a str>,
    /// The kinds the request allows (every kind when it names none), asked about without a scan.
    pub(super) allowed: KindSet,
    /// Liveness at `now`, its thresholds computed once for the objects the pool admits.
    pub(super) live: LivenessAt,
}

impl<'a> Ctx<'a> {
    pub(super) fn allowed(&self, kind: ObjectKind) -> bool {
        self.allowed.contains(kind)
    }

    pub(super) fn tier_for(&self, topic: Option<&str>) -> Tier {
        match self.topic {
            Some(t) if topic.is_some_and(|own| same_id(own, t)) => Tier::Topic,
            _ => Tier::Chat,
        }
    }

    /// Whether an object may be a candidate at all, and if so whether it is active and whether stale: of an
    /// allowed kind, not newer than the current message, and not a typed object past its TTL (an expired
    /// message is a candidate, stale).
    pub(super) fn admit(&self, o: &Object) -> Option<(bool, bool)> {
        debug_assert_eq!(o.created_at > self.newest, self.cutoff.is_some_and(|(t, _)| o.created_at > t));
        if !self.allowed(o.kind) || o.created_at > self.newest {
            return None;
        }
        debug_assert_eq!(self.live.of(o), o.liveness(self.now, &self.settings.objects).into());
        match self.live.of(o) {
            Live::Expired if !o.kind.is_message() => None,
            Live::Expired => Some((false, true)),
            Live::Active => Some((true, o.closed_at.is_some())),
            Live::Known => Some((false, o.closed_at.is_some())),
        }
    }

    pub(super) fn object(&self, o: &'a Object, tier: Tier, depth: Option<usize>) -> Option<Cand<'a>> {
        let live = self.admit(o)?;
        self.admitted(o, live, tier, depth)
    }

    /// The candidate of an object [`Ctx::admit`] let in, with what it found.
    fn admitted(
        &self,
        o: &'a Object,
        (active, stale): (bool, bool),
        tier: Tier,
        depth: Option<usize>,
    ) -> Option<Cand<'a>> {
        let is_message = o.kind.is_message();
        if is_message && o.source_message_id.as_deref().is_some_and(|s| same_id(s, self.current_id)) {
            return None; // the current message is the request, not a candidate
        }
        Some(Cand {
            of: Of::Obj(o),
            kind: o.kind,
            created_at: o.created_at,
            last_touched: o.last_touched_at,
            by_bot: o.created_by_bot,
            active,
            stale,
            tier,
            chain_depth: depth,
            carrier: false,
            in_topic: false,
            score: if is_message { 0.0 } else { self.settings.resolver.typed_object },
            mask: 0,
        })
    }

    /// The `message` / `bot_message` candidate of a stored message (or its registry entry, which carries
    /// its activations).
    pub(super) fn message(&self, of: Of<'a>, tier: Tier, depth: Option<usize>) -> Option<Cand<'a>> {
        let Of::Msg { chat, item, mid, .. } = of else { return None };
        // A message id names one stored message (an edit or a repeated import replaces the earlier copy), so the
        // stored current message is told by address, without reading ids.
        let is_current = match self.current {
            Some(current) => std::ptr::eq(item, current),
            None => mid.as_ref() == self.current_id,
        };
        debug_assert_eq!(is_current, mid.as_ref() == self.current_id, "one stored message per id");
        if is_current || self.cutoff.is_some_and(|c| item.key() > c) {
            return None;
        }
        let kind = if item.kind == ItemKind::OutboundAgent { ObjectKind::BotMessage } else { ObjectKind::Message };
        if !self.allowed(kind) || item.kind == ItemKind::System {
            return None;
        }
        // One look at the message's objects: a message candidate that was activated before is registered
        // (its entry carries the activation), and a message carrying live typed objects is their carrier. Most
        // messages are the source of none, and the item says so without a lookup.
        debug_assert!(item.objects || chat.objects.of_source(mid).next().is_none(), "message {mid} has objects");
        let mut registered = None;
        let mut carrier = false;
        for o in item.objects.then(|| chat.objects.of_source(mid)).into_iter().flatten() {
            if o.kind == kind {
                registered = Some(o);
            } else if !o.kind.is_message() && self.allowed(o.kind) && self.live.of(o) != Live::Expired {
                carrier = true;
            }
        }
        if let Some(o) = registered {
            return self.object(o, tier, depth).map(|c| Cand { carrier, ..c });
        }
        Some(Cand {
            of,
            kind,
            created_at: item.sent_at,
            last_touched: item.sent_at,
            by_bot: item.kind == ItemKind::OutboundAgent,
            active: false,
            stale: !self.live.within_ttl(kind, item.sent_at),
            tier,
            chain_depth: depth,
            carrier,
            in_topic: false,
            score: 0.0,
            mask: 0,
        })
    }
}

/// The candidate pool of a request, before scoring, with what scoring needs to know about the request.
pub(super) struct Gathered<'a> {
    pub(super) ctx: Ctx<'a>,
    pub(super) pool: Vec<Cand<'a>>,
    pub(super) reply_target: Option<&'a str>,
    pub(super) fallback: bool,
}

/// The pool while it is gathered: each reference is de-duplicated against what came before and built on the spot.
/// References come narrowest tier (and shallowest chain depth) first, so the first occurrence is the one kept.
struct Pool<'a, 'c> {
    ctx: &'c Ctx<'a>,
    seen: Seen,
    cands: Vec<Cand<'a>>,
}

impl<'a> Pool<'a, '_> {
    /// A registered object. [`Ctx::admit`] checks the object alone, so what it refuses is refused whichever way
    /// it comes; it runs first, as it costs less than a lookup in `seen` and most of the newest objects of a busy
    /// chat are past their TTL.
    #[inline(always)]
    fn object(&mut self, o: &'a Object, tier: Tier, depth: Option<usize>) {
        self.object_in(o, tier, depth, false);
    }

    /// [`Pool::object`] for an object found through the index of the request's topic (`in_topic`).
    #[inline(always)]
    fn object_in(&mut self, o: &'a Object, tier: Tier, depth: Option<usize>, in_topic: bool) {
        if let Some(live) = self.ctx.admit(o)
            && self.seen.insert(Of::Obj(o).key())
            && let Some(c) = self.ctx.admitted(o, live, tier, depth)
        {
            self.cands.push(Cand { in_topic, ..c });
        }
    }

    /// A stored message; one without an id cannot be named, and is no candidate. A message that was activated
    /// before is built as its registered object, which may have come (or may come) as an object as well.
    fn message(
        &mut self,
        chat: &'a Chat,
        item: &'a Item,
        topic: Option<&'a std::sync::Arc<str>>,
        tier: Tier,
        depth: Option<usize>,
    ) {
        let Some(mid) = &item.message_id else { return };
        let of = Of::Msg { chat, item, mid, topic };
        let key = of.key();
        if self.seen.insert(key)
            && let Some(c) = self.ctx.message(of, tier, depth)
            && (c.of.key() == key || self.seen.insert(c.of.key()))
        {
            self.cands.push(c);
        }
    }
}

/// Builds the bounded candidate pool: reply chain, scope, chat fallback; each candidate once.
pub(super) fn gather<'a>(
    chat: &'a Chat,
    settings: &'a crate::settings::Settings,
    req: &'a ResolveReferenceTarget,
    scope: &RequestScope<'a>,
    now: Timestamp,
) -> Gathered<'a> {
    let cfg = &settings.resolver;
    let (topic, reply_target) = (scope.topic, scope.reply_target);
    let ctx = Ctx {
        settings,
        now,
        cutoff: scope.current.map(Item::key),
        newest: scope.current.map_or(Timestamp::LAST, |c| c.key().0),
        current_id: req.current(),
        current: scope.current,
        topic,
        allowed: req.allowed_kinds.as_deref().map_or(KindSet::ALL, KindSet::of),
        live: LivenessAt::new(now, &settings.objects),
    };
    // Sized for the windows' references (of which most are refused or seen before): rarely grown.
    let mut p = Pool { ctx: &ctx, seen: Seen::with_capacity(128), cands: Vec::with_capacity(64) };

    // 1. The reply chain, a few messages up from the reply target.
    for (depth, (mid, stored)) in chat.reply_chain(reply_target, cfg.reply_chain_depth).into_iter().enumerate() {
        for o in chat.objects.of_source(mid) {
            p.object(o, Tier::ReplyChain, Some(depth));
        }
        if let Some((conv, item)) = stored {
            p.message(chat, item, conv.topic.as_ref(), Tier::ReplyChain, Some(depth));
        }
    }
    // 2. The scope: objects carried by the current message, the newest objects (overall and of the kinds
    //    asked for), the activations within the TTL horizon, the newest messages.
    for o in chat.objects.of_source(req.current()) {
        p.object(o, ctx.tier_for(o.topic_id.as_deref()), None);
    }
    let home = ctx.tier_for(topic);
    if let Some(idx) = chat.objects.scope(topic) {
        // The scope's index holds only objects of `topic` (an object that moves is registered anew).
        for o in chat.objects.newest(idx, None).take(cfg.scope_window) {
            p.object_in(o, home, None, true);
        }
        let focus: &[ObjectKind] = req.allowed_kinds.as_deref().unwrap_or(&req.hints.target_kinds);
        for &k in focus {
            for o in chat.objects.newest(idx, Some(k)).take(cfg.scope_window) {
                p.object_in(o, home, None, true);
            }
        }
        let horizon = settings.objects.horizon();
        let recent =
            chat.objects.activations(idx).take_while(|o| o.activated_at.is_some_and(|a| now < a.plus(horizon)));
        for o in recent.take(cfg.scope_window) {
            p.object_in(o, home, None, true);
        }
    }
    if let Some(conv) = chat.conv_of(topic) {
        // `conv.topic` is `topic` (the conversation of a topic is the one that names it).
        for item in conv.before(ctx.cutoff).rev().take(cfg.message_window) {
            p.message(chat, item, conv.topic.as_ref(), home, None);
        }
    }
    // 3. In a forum topic, the rest of the chat, penalized.
    let fallback = topic.is_some();
    if fallback {
        // A last resort, penalized anyway: a quarter of the window is enough.
        let fallback_window = cfg.scope_window.div_ceil(4);
        for o in chat.objects.newest_in_chat().filter(|o| !same_opt(o.topic_id.as_deref(), topic)).take(fallback_window)
        {
            p.object(o, Tier::Chat, None);
        }
    }
    let pool = p.cands;
    Gathered { ctx, pool, reply_target, fallback }
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
        let g = gather(chat, self.settings(), req, &req.scope_in(chat), now);
        g.pool
            .iter()
            .map(|c| FlatCandidate {
                kind: c.kind,
                chain_depth: c.chain_depth,
                same_topic: g.ctx.topic.is_some() && c.topic() == g.ctx.topic,
                fallback: c.tier == Tier::Chat && g.ctx.topic.is_some(),
                active: c.active,
                stale: c.stale,
                owned: c.by_user() == Some(req.sender()),
                by_bot: c.by_bot,
                is_message: c.kind.is_message(),
                touched: c.activated_by() == Some(req.current()),
                age_secs: (now.unix() - c.last_touched.unix()).max(0),
                created_at: c.created_at.unix(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::CandId;
    use crate::kinds::ObjectKind;

    /// The shared id is the rendered one, whether it fits the stack buffer or not.
    #[test]
    fn a_shared_id_is_the_rendered_one() {
        for len in [0, 1, 40, 55, 56, 57, 63, 64, 65, 200] {
            let mid: std::sync::Arc<str> = "9".repeat(len).into();
            for id in [CandId::Msg(&mid, ObjectKind::BotMessage), CandId::Obj(&mid)] {
                assert_eq!(&*id.shared(), id.render(), "{len}");
            }
        }
    }

    proptest::proptest! {
        /// The quick comparison of ids says what `==` says: for ids of any length (empty, one byte, long), sharing
        /// their last byte or not, and in any characters.
        #[test]
        fn same_id_is_equality(
            a in "[0-9a-zé:]{0,6}", other in "[0-9a-zé:]{0,6}", how in 0u8..5, at in 0usize..8, c in "[0-9aé]",
            some in 0u8..4,
        ) {
            // The other id: the same, one character changed (the last or an earlier one), one added after or before
            // (the same last byte, another length), or any.
            let mut chars: Vec<char> = a.chars().collect();
            let b: String = match how {
                0 => a.clone(),
                1 if !chars.is_empty() => {
                    let i = at % chars.len();
                    chars[i] = c.chars().next().unwrap_or('0');
                    chars.into_iter().collect()
                }
                2 => format!("{a}{c}"),
                3 => format!("{c}{a}"),
                _ => other,
            };
            proptest::prop_assert_eq!(super::same_id(&a, &b), a == b);
            proptest::prop_assert_eq!(super::same_id(&a, &a.clone()), true);
            let (x, y) = (Some(a.as_str()).filter(|_| some & 1 != 0), Some(b.as_str()).filter(|_| some & 2 != 0));
            proptest::prop_assert_eq!(super::same_opt(x, y), x == y);
        }
    }
}
