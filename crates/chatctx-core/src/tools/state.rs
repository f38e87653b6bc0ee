//! The state tools: `get_scenario`, `update_scenario` and `revert_scenario` (docs/protocol.md §6.4). The state
//! itself (merging, revisions, limits) is [`crate::scenario`].

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::request::{Request, Scope, ScopeUse, scoped_request};
use crate::decision::ScenarioDecision;
use crate::error::{Error, ErrorCode};
use crate::json::{Fields, object};
use crate::scenario::{Scenario, ScenarioState};
use crate::time::Timestamp;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// The scope fields the state tools read: the state belongs to a chat, or to one topic of it.
const STATE_SCOPE: ScopeUse = ScopeUse { reads: &["channel", "chat_id", "topic_id"], requires: &[] };

/// `get_scenario`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct GetScenario {
    /// Which conversation: the chat, or one topic of it.
    #[serde(flatten)]
    pub scope: Scope,
    /// Also list the kept revisions.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[schemars(default)]
    pub revisions: bool,
}

/// `update_scenario`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct UpdateScenario {
    /// Which conversation: the chat, or one topic of it.
    #[serde(flatten)]
    pub scope: Scope,
    /// The merge patch: null deletes a key, objects merge, anything else replaces.
    #[schemars(with = "Map<String, Value>")]
    pub patch: Value,
    /// Refuse with revision_conflict unless the state is at this revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<u64>,
    /// The time of the write; default the server's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Timestamp>,
}

/// `revert_scenario`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct RevertScenario {
    /// Which conversation: the chat, or one topic of it.
    #[serde(flatten)]
    pub scope: Scope,
    /// The revision whose state to write back (0: the empty state).
    pub to_revision: u64,
    /// Refuse with revision_conflict unless the state is at this revision.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<u64>,
    /// The time of the write; default the server's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub now: Option<Timestamp>,
}

pub(super) fn u64_field(f: &Fields<'_>, key: &str) -> Result<Option<u64>, Error> {
    match f.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| f.err(key, "expected a non-negative integer")),
    }
}

impl Request for GetScenario {
    const NAME: &'static str = "get_scenario";
    const DESCRIPTION: &'static str = "The conversation's structured state: {revision, state, updated_at}.";
    const SCOPE: ScopeUse = STATE_SCOPE;
    type Response = ScenarioState;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self { scope: Scope::decode(&f, STATE_SCOPE, defaults)?, revisions: f.bool("revisions")?.unwrap_or(false) })
    }

    scoped_request!();
}

impl Request for UpdateScenario {
    const NAME: &'static str = "update_scenario";
    const DESCRIPTION: &'static str = "Patch the conversation's structured state with a JSON merge patch \
        (RFC 7396: null deletes a key, objects merge, anything else replaces). A stale expected_revision is \
        refused with revision_conflict.";
    const SCOPE: ScopeUse = STATE_SCOPE;
    type Response = ScenarioState;

    /// A patch that is not an object is `invalid_patch`.
    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        let patch = f.req("patch")?;
        if !patch.is_object() {
            return Err(Error::new(ErrorCode::InvalidPatch, "field `patch`: a merge patch must be a JSON object"));
        }
        Ok(Self {
            scope: Scope::decode(&f, STATE_SCOPE, defaults)?,
            patch: patch.clone(),
            expected_revision: u64_field(&f, "expected_revision")?,
            now: f.time("now")?,
        })
    }

    scoped_request!(now);
}

impl Request for RevertScenario {
    const NAME: &'static str = "revert_scenario";
    const DESCRIPTION: &'static str = "Write an earlier revision's state back as a new revision.";
    const SCOPE: ScopeUse = STATE_SCOPE;
    type Response = ScenarioState;

    fn decode_with(v: &Value, defaults: Option<&Scope>) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self {
            scope: Scope::decode(&f, STATE_SCOPE, defaults)?,
            to_revision: u64_field(&f, "to_revision")?.ok_or_else(|| f.err("to_revision", "is required"))?,
            expected_revision: u64_field(&f, "expected_revision")?,
            now: f.time("now")?,
        })
    }

    scoped_request!(now);
}

impl crate::engine::Engine {
    /// `get_scenario`: revision 0 and `{}` when nothing was written (also for a chat never seen).
    pub fn get_scenario(&self, req: &GetScenario) -> ScenarioState {
        let k = &req.scope;
        let mut view = match self.chat(&k.channel, &k.chat_id).and_then(|c| c.scenarios.get(&k.topic_id)) {
            Some(s) => s.view(None, req.revisions),
            None => Scenario::default().view(None, req.revisions),
        };
        // Only a chat that is held gets a record (a read of an unknown chat answers the empty state).
        if self.records(k) && self.chat(&k.channel, &k.chat_id).is_some() {
            view.explain =
                Some(Box::new(ScenarioDecision { revision: view.revision, changed: false, keys_changed: vec![] }));
        }
        view
    }

    /// The answer of a state write, with its record when records are on: the top-level keys it changed.
    fn written(&self, scope: &Scope, before: &Map<String, Value>, mut view: ScenarioState) -> ScenarioState {
        if self.records(scope) {
            let after = &view.state;
            let mut keys: Vec<String> = before
                .iter()
                .filter(|(k, v)| after.get(*k) != Some(*v))
                .map(|(k, _)| k.clone())
                .chain(after.keys().filter(|k| !before.contains_key(*k)).cloned())
                .collect();
            keys.sort();
            let changed = view.changed.unwrap_or(false);
            view.explain = Some(Box::new(ScenarioDecision { revision: view.revision, changed, keys_changed: keys }));
        }
        view
    }

    /// `update_scenario`. Nothing is written on any error.
    pub fn update_scenario(&mut self, req: &UpdateScenario, now: Timestamp) -> Result<ScenarioState, Error> {
        let Value::Object(patch) = &req.patch else {
            return Err(Error::new(ErrorCode::InvalidPatch, "field `patch`: a merge patch must be a JSON object"));
        };
        let k = &req.scope;
        let state = &self.settings().state;
        // Checked on the scenario as it stands (an empty one for a chat never written), so that a call that
        // changes nothing leaves no trace: not even an empty chat, which the log would not bring back.
        let fresh = Scenario::default();
        let current = self.chat(&k.channel, &k.chat_id).and_then(|c| c.scenarios.get(&k.topic_id)).unwrap_or(&fresh);
        let Some(delta) = current.prepare(patch, req.expected_revision, state, state.schema.as_ref())? else {
            let view = current.view(Some(false), false);
            return Ok(self.written(k, &view.state.clone(), view));
        };
        let before = current.state_arc();
        let (settings, chat) = self.with_chat(&k.channel, &k.chat_id);
        let scenario = chat.scenarios.entry(k.topic_id.clone()).or_default();
        scenario.commit(delta, &req.patch, req.now.unwrap_or(now), settings.state.keep_revisions);
        let view = scenario.view(Some(true), false);
        Ok(self.written(k, &before, view))
    }

    /// `revert_scenario`: writes a kept revision's state back as a new revision.
    pub fn revert_scenario(&mut self, req: &RevertScenario, now: Timestamp) -> Result<ScenarioState, Error> {
        let k = &req.scope;
        let state = &self.settings().state;
        let fresh = Scenario::default();
        let current = self.chat(&k.channel, &k.chat_id).and_then(|c| c.scenarios.get(&k.topic_id)).unwrap_or(&fresh);
        let Some((delta, written)) =
            current.prepare_revert(req.to_revision, req.expected_revision, state, state.schema.as_ref())?
        else {
            let view = current.view(Some(false), false);
            return Ok(self.written(k, &view.state.clone(), view));
        };
        let before = current.state_arc();
        let (settings, chat) = self.with_chat(&k.channel, &k.chat_id);
        let scenario = chat.scenarios.entry(k.topic_id.clone()).or_default();
        scenario.commit(delta, &written, req.now.unwrap_or(now), settings.state.keep_revisions);
        let view = scenario.view(Some(true), false);
        Ok(self.written(k, &before, view))
    }
}
