//! `list_active_context_objects` (docs/protocol.md §6.2): what is live right now in the request's scope. Only activated
//! objects within their TTL (and close grace) are listed; a forum topic sees its own objects, the reply
//! chain's, and the general conversation's, never another topic's.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

use crate::chat::{Chat, RequestScope};
use crate::engine::{Engine, unknown_chat};
use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::kinds::{Activation, KindName, ObjectKind};
use crate::objects::{Liveness, Object};
use crate::settings::Settings;
use crate::time::Timestamp;
use crate::tools::request::Id;
use crate::tools::request::{Request, Scope, ScopeUse, scoped_request};
use crate::tools::resolve::{Descriptor, Tier, descriptor, kinds_field};
use crate::tools::seen::Seen;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// Most objects a listing returns, and how many when the request names no `limit`.
pub const MAX_LIMIT: u32 = 20;
const DEFAULT_LIMIT: u32 = 5;

fn default_limit() -> usize {
    DEFAULT_LIMIT as usize
}

/// `list_active_context_objects` request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ListActiveContextObjects {
    /// Where: the chat, and the message being handled (its topic and reply chain come first) or the topic.
    #[serde(flatten)]
    pub scope: Scope,
    /// The message it replies to; read from the store when omitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Id>")]
    pub reply_to_message_id: Option<String>,
    /// Only objects of these kinds.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<Vec<KindName>>")]
    pub kinds: Option<Vec<ObjectKind>>,
    /// At most this many objects.
    #[serde(default = "default_limit")]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub limit: usize,
    /// The time the answer is for; default the server's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Timestamp>,
}

impl Request for ListActiveContextObjects {
    const NAME: &'static str = "list_active_context_objects";
    const DESCRIPTION: &'static str = "The conversational objects (articles, links, media, polls, reminders, \
        summaries) active right now, nearest scope first: reply chain, then topic, then chat.";
    const SCOPE: ScopeUse =
        ScopeUse { reads: &["channel", "chat_id", "topic_id", "current_message_id"], requires: &[] };
    type Response = ActiveObjects;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self {
            scope: Scope::decode(&f, Self::SCOPE, defaults)?,
            reply_to_message_id: f.id("reply_to_message_id")?,
            kinds: kinds_field(&f, "kinds")?,
            limit: f.count_in("limit", default_limit(), MAX_LIMIT)?,
            now: f.time("now")?,
        })
    }

    scoped_request!(now);
}

/// One listed object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ActiveObject {
    /// The object.
    #[serde(flatten)]
    pub descriptor: Descriptor,
    /// Its latest activation.
    pub activation: Activation,
    /// When.
    pub activated_at: Timestamp,
    /// When it stops being active.
    pub expires_at: Timestamp,
    /// Which scope tier it matched.
    pub scope_match: Tier,
    /// Why it is listed.
    pub reasons: Vec<&'static str>,
}

/// `ok` when something is active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
#[serde(rename_all = "snake_case")]
pub enum ListStatus {
    /// At least one object.
    Ok,
    /// None.
    Empty,
}

/// `list_active_context_objects` response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ActiveObjects {
    /// `ok` or `empty`.
    pub status: ListStatus,
    /// The request's scope: `topic` in a forum topic, else `chat` (`reply_chain` objects are included in both).
    pub scope_used: Tier,
    /// Ordered by scope tier, then last activation (newer first), then `object_id`.
    pub objects: Vec<ActiveObject>,
    /// More were active than `limit`.
    pub truncated: bool,
    /// Each live object's activation and TTL (docs/protocol.md §6.7): in the answer when the request says
    /// `"explain": true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Box<crate::decision::ListDecision>>,
}

impl Engine {
    /// `list_active_context_objects`.
    pub fn list_active_context_objects(
        &self,
        req: &ListActiveContextObjects,
        now: Timestamp,
    ) -> Result<ActiveObjects, Error> {
        let chat = self.chat(&req.scope.channel, &req.scope.chat_id).ok_or_else(|| unknown_chat(&req.scope.chat_id))?;
        let settings = self.settings();
        let scope = chat.request_scope(
            req.scope.topic_id.as_deref(),
            req.scope.current_message_id.as_deref(),
            req.reply_to_message_id.as_deref(),
        );
        let topic = scope.topic;
        // A record lists every active object; an answer only the first `limit` (found without reading the rest).
        let recorded = self.records(&req.scope);
        let (found, active) = active_objects(chat, req, &scope, settings, now, !recorded);
        let truncated = active > req.limit;
        let explain = recorded.then(|| {
            let objects = found.iter().enumerate().filter_map(|(i, (tier, o, expires_at))| {
                Some(crate::decision::ObjectLiveness {
                    object_id: o.object_id.clone(),
                    kind: o.kind,
                    tier: *tier,
                    activation: o.activation?,
                    activated_at: o.activated_at?,
                    activated_by: o.activated_by.clone(),
                    expires_at: *expires_at,
                    ttl_left_secs: expires_at.unix() - now.unix(),
                    returned: i < req.limit,
                })
            });
            // One per object found (an active object has an activation): sized once, not grown from nothing.
            let mut all = Vec::with_capacity(found.len());
            all.extend(objects);
            Box::new(crate::decision::ListDecision { now, objects: all })
        });
        // One string for the answer's descriptors, each taking a count.
        let chat_id: Arc<str> = req.scope.chat_id.as_str().into();
        let objects: Vec<ActiveObject> = found
            .into_iter()
            .take(req.limit)
            .filter_map(|(tier, o, expires_at)| {
                // At most three codes: sized once (grown from one, each object's list was allocated twice).
                let mut reasons = Vec::with_capacity(3);
                reasons.push("currently_active");
                match tier {
                    Tier::ReplyChain => reasons.push("in_reply_chain"),
                    Tier::Topic => reasons.push("same_topic"),
                    Tier::Chat if topic.is_some() => reasons.push("weak_scope_fallback"),
                    Tier::Chat => {}
                }
                if o.closed_at.is_some() {
                    reasons.push("closed");
                }
                Some(ActiveObject {
                    descriptor: descriptor(&chat_id, o),
                    activation: o.activation?,
                    activated_at: o.activated_at?,
                    expires_at,
                    scope_match: tier,
                    reasons,
                })
            })
            .collect();
        Ok(ActiveObjects {
            status: if objects.is_empty() { ListStatus::Empty } else { ListStatus::Ok },
            scope_used: if topic.is_some() { Tier::Topic } else { Tier::Chat },
            objects,
            truncated,
            explain,
        })
    }
}

/// The objects active now in the request's scope, each once, ordered as listed: nearest tier first (each object in
/// the nearest it is found in: one carried by a message of the reply chain is also among its scope's activations),
/// then latest activation, then id; with when each expires. With `first_only`, only the first `req.limit` of them.
/// And how many were found: all of them, or with `first_only` at least one more than the limit when there are more.
fn active_objects<'a>(
    chat: &'a Chat,
    req: &ListActiveContextObjects,
    scope: &RequestScope<'_>,
    settings: &Settings,
    now: Timestamp,
    first_only: bool,
) -> (Vec<(Tier, &'a Object, Timestamp)>, usize) {
    let chain = chat.reply_chain(scope.reply_target, settings.resolver.reply_chain_depth);
    let horizon = settings.objects.horizon();
    let wanted = |o: &Object| req.kinds.as_ref().is_none_or(|k| k.contains(&o.kind));
    let active = |o: &Object| match o.liveness(now, &settings.objects) {
        Liveness::Active { expires_at } => Some(expires_at),
        _ => None,
    };
    // Found in answer order, and for an answer (no record) only until one more than the limit is found.
    let enough = if first_only { req.limit.saturating_add(1) } else { usize::MAX };
    let by_id = |a: &(Tier, &Object, Timestamp), b: &(Tier, &Object, Timestamp)| a.1.object_id.cmp(&b.1.object_id);
    // Within a tier: latest activation first, then id.
    let newest_first = |a: &(Tier, &Object, Timestamp), b: &(Tier, &Object, Timestamp)| {
        b.1.activated_at.cmp(&a.1.activated_at).then_with(|| by_id(a, b))
    };
    let mut found: Vec<(Tier, &Object, Timestamp)> = Vec::with_capacity(enough.min(32));
    let mut seen = Seen::with_capacity(32);
    let mut first = |o: &Object| seen.insert(o as *const Object as usize);
    // The reply chain's few objects, sorted whole.
    for (mid, _) in &chain {
        for o in chat.objects.of_source(mid).filter(|o| wanted(o)) {
            if let Some(exp) = active(o)
                && first(o)
            {
                found.push((Tier::ReplyChain, o, exp));
            }
        }
    }
    found.sort_by(newest_first);
    // The topic's own activations, then (in a forum topic) the general conversation's. A scope's index gives them
    // newest activation first, so only those activated at the same time are sorted, by id, among themselves; a
    // group of such ties is taken whole before reading stops (its first ids may be among the first `limit`).
    let scopes: &[(Option<&str>, Tier)] = match scope.topic {
        Some(t) => &[(Some(t), Tier::Topic), (None, Tier::Chat)],
        None => &[(None, Tier::Chat)],
    };
    for &(scope, tier) in scopes {
        let Some(idx) = chat.objects.scope(scope).filter(|_| found.len() < enough) else { continue };
        let recent =
            chat.objects.activations(idx).take_while(|o| o.activated_at.is_some_and(|a| now < a.plus(horizon)));
        let mut group = found.len();
        for o in recent.filter(|o| wanted(o) && o.activated_at.is_some_and(|a| a <= now)) {
            let Some(exp) = active(o) else { continue };
            if found.get(group).is_some_and(|g| g.1.activated_at != o.activated_at) {
                found[group..].sort_by(by_id);
                group = found.len();
                if found.len() >= enough {
                    break;
                }
            }
            if first(o) {
                found.push((tier, o, exp));
            }
        }
        found[group..].sort_by(by_id);
    }
    debug_assert!(
        found.is_sorted_by(|a, b| a.0.cmp(&b.0).then_with(|| newest_first(a, b)).is_lt()),
        "listed out of order"
    );
    let counted = found.len();
    if first_only {
        found.truncate(req.limit);
    }
    (found, counted)
}
