//! Conversation state (SPEC §6.4, seed 004): one JSON object per conversation (chat, or chat + topic) that
//! the bot and the model keep up to date turn by turn, injected into every prompt as ACTIVE SCENARIO.
//!
//! `update_scenario` applies an RFC 7396 merge patch (null deletes, objects merge, everything else
//! replaces), limited by `state.merge_depth` and `state.merge_depth_by_key`: with depth 1 top-level keys are
//! replaced whole, `{ household = 2 }` merges `household` one level deeper. `expected_revision` makes
//! updates optimistic: a stale one is `revision_conflict` and nothing is written. Every successful change is
//! exactly one new revision; a patch that changes nothing is not. The last `keep_revisions` revisions are
//! kept with their patch, time and resulting state, so `revert_scenario` can write an earlier state back.

use std::collections::VecDeque;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode};
use crate::event::DEFAULT_CHANNEL;
use crate::json::{Fields, object};
use crate::settings::StateSettings;
use crate::time::Timestamp;

const RQ: ErrorCode = ErrorCode::InvalidRequest;

/// One kept revision.
#[derive(Debug, Clone, PartialEq)]
struct Revision {
    revision: u64,
    at: Timestamp,
    /// The patch as sent (compact JSON); for a revert, the state written back.
    patch: Box<str>,
    /// The state after this revision (compact JSON).
    state: Box<str>,
}

/// The state of one conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scenario {
    revision: u64,
    state: Map<String, Value>,
    updated_at: Option<Timestamp>,
    revisions: VecDeque<Revision>,
}

/// What `get_scenario` and `update_scenario` answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScenarioState {
    /// The current revision (0 when nothing was ever written).
    pub revision: u64,
    /// The state, keys in sorted order.
    pub state: Map<String, Value>,
    /// When the current revision was written.
    pub updated_at: Option<Timestamp>,
    /// Whether this call wrote a revision (updates and reverts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    /// The kept revisions, newest first (`get_scenario` with `"revisions": true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revisions: Option<Vec<RevisionInfo>>,
}

/// One kept revision as reported.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RevisionInfo {
    /// Its number.
    pub revision: u64,
    /// When it was written.
    pub at: Timestamp,
    /// The patch that made it (for a revert, the state written back).
    pub patch: Value,
}

/// Which conversation a state request names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioKey {
    /// Platform.
    pub channel: String,
    /// The chat.
    pub chat_id: String,
    /// The topic (none: the chat's own state).
    pub topic_id: Option<String>,
}

impl ScenarioKey {
    fn decode(f: &Fields<'_>) -> Result<Self, Error> {
        Ok(Self {
            channel: f.str("channel")?.filter(|s| !s.is_empty()).unwrap_or(DEFAULT_CHANNEL).to_owned(),
            chat_id: f.req_id("chat_id")?,
            topic_id: f.id("topic_id")?,
        })
    }
}

/// `get_scenario`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetScenario {
    /// Which conversation.
    pub key: ScenarioKey,
    /// Also list the kept revisions.
    pub revisions: bool,
}

/// `update_scenario`.
#[derive(Debug, Clone, PartialEq)]
pub struct UpdateScenario {
    /// Which conversation.
    pub key: ScenarioKey,
    /// The merge patch (must be an object).
    pub patch: Value,
    /// Refuse unless the current revision is this.
    pub expected_revision: Option<u64>,
    /// The time of the write.
    pub now: Option<Timestamp>,
}

/// `revert_scenario`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertScenario {
    /// Which conversation.
    pub key: ScenarioKey,
    /// The revision whose state to write back (0: the empty state).
    pub to_revision: u64,
    /// Refuse unless the current revision is this.
    pub expected_revision: Option<u64>,
    /// The time of the write.
    pub now: Option<Timestamp>,
}

fn u64_field(f: &Fields<'_>, key: &str) -> Result<Option<u64>, Error> {
    match f.get(key) {
        None => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or_else(|| f.err(key, "expected a non-negative integer")),
    }
}

impl GetScenario {
    /// Reads the request.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self { key: ScenarioKey::decode(&f)?, revisions: f.bool("revisions")?.unwrap_or(false) })
    }
}

impl UpdateScenario {
    /// Reads the request. A patch that is not an object is `invalid_patch`.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        let patch = f.req("patch")?;
        if !patch.is_object() {
            return Err(Error::new(ErrorCode::InvalidPatch, "field `patch`: a merge patch must be a JSON object"));
        }
        Ok(Self {
            key: ScenarioKey::decode(&f)?,
            patch: patch.clone(),
            expected_revision: u64_field(&f, "expected_revision")?,
            now: f.time("now")?,
        })
    }
}

impl RevertScenario {
    /// Reads the request.
    pub fn decode(v: &Value) -> Result<Self, Error> {
        let f = Fields::new(object(v, "the request", RQ)?, "", RQ);
        Ok(Self {
            key: ScenarioKey::decode(&f)?,
            to_revision: u64_field(&f, "to_revision")?.ok_or_else(|| f.err("to_revision", "is required"))?,
            expected_revision: u64_field(&f, "expected_revision")?,
            now: f.time("now")?,
        })
    }
}

/// Applies `patch` to the state object by RFC 7396, each top-level key merging as deep as the settings say.
pub fn merge_state(state: &mut Map<String, Value>, patch: &Map<String, Value>, settings: &StateSettings) {
    for (k, v) in patch {
        if v.is_null() {
            state.remove(k);
            continue;
        }
        // Levels that merge, counting the state object itself as the first; 0 means unlimited.
        let depth = settings.merge_depth_by_key.get(k).copied().unwrap_or(settings.merge_depth);
        let below = if depth == 0 { None } else { Some(depth - 1) };
        merge_value(state.entry(k.clone()).or_insert(Value::Null), v, below);
    }
}

/// RFC 7396 on one value; `levels` is how many more object levels merge (None: unlimited). Where merging
/// stops, an object replaces whole (with its nulls dropped, as merging into an empty object would).
fn merge_value(target: &mut Value, patch: &Value, levels: Option<u32>) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if levels == Some(0) || !target.is_object() {
        *target = Value::Object(Map::new());
        if levels == Some(0) {
            *target = strip_nulls(patch);
            return;
        }
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_value(t.entry(k.clone()).or_insert(Value::Null), v, levels.map(|l| l - 1));
            }
        }
    }
}

fn strip_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            Value::Object(m.iter().filter(|(_, v)| !v.is_null()).map(|(k, v)| (k.clone(), strip_nulls(v))).collect())
        }
        other => other.clone(),
    }
}

/// A checked next state and its compact JSON.
pub(crate) type Prepared = (Map<String, Value>, String);

fn conflict(expected: u64, current: u64) -> Error {
    Error::new(
        ErrorCode::RevisionConflict,
        format!("expected_revision {expected} is stale: the state is at revision {current}"),
    )
}

impl Scenario {
    pub(crate) fn state(&self) -> &Map<String, Value> {
        &self.state
    }

    pub(crate) fn view(&self, changed: Option<bool>, with_revisions: bool) -> ScenarioState {
        ScenarioState {
            revision: self.revision,
            state: self.state.clone(),
            updated_at: self.updated_at,
            changed,
            revisions: with_revisions.then(|| {
                self.revisions
                    .iter()
                    .rev()
                    .map(|r| RevisionInfo {
                        revision: r.revision,
                        at: r.at,
                        patch: serde_json::from_str(&r.patch).unwrap_or(Value::Null),
                    })
                    .collect()
            }),
        }
    }

    /// Checks and computes an update without writing: the new state and its compact JSON, or `None` when
    /// nothing changes.
    pub(crate) fn prepare(
        &self,
        patch: &Map<String, Value>,
        expected: Option<u64>,
        settings: &StateSettings,
        schema: Option<&crate::schema::Schema>,
    ) -> Result<Option<Prepared>, Error> {
        if let Some(e) = expected
            && e != self.revision
        {
            return Err(conflict(e, self.revision));
        }
        let mut next = self.state.clone();
        merge_state(&mut next, patch, settings);
        if next == self.state {
            return Ok(None);
        }
        self.check(next, settings, schema).map(Some)
    }

    fn check(
        &self,
        next: Map<String, Value>,
        settings: &StateSettings,
        schema: Option<&crate::schema::Schema>,
    ) -> Result<(Map<String, Value>, String), Error> {
        let json = serde_json::to_string(&next).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?;
        if json.len() > settings.max_bytes {
            return Err(Error::new(
                ErrorCode::InvalidPatch,
                format!("the state would be {} bytes, over state.max_bytes ({})", json.len(), settings.max_bytes),
            ));
        }
        if let Some(schema) = schema {
            schema.validate(&Value::Object(next.clone())).map_err(|e| Error::new(ErrorCode::InvalidPatch, e))?;
        }
        Ok((next, json))
    }

    /// Writes a prepared state as the next revision.
    pub(crate) fn commit(&mut self, next: Map<String, Value>, json: String, patch: &Value, at: Timestamp, keep: usize) {
        self.revision += 1;
        self.state = next;
        self.updated_at = Some(at);
        self.revisions.push_back(Revision {
            revision: self.revision,
            at,
            patch: serde_json::to_string(patch).unwrap_or_default().into_boxed_str(),
            state: json.into_boxed_str(),
        });
        while self.revisions.len() > keep.max(1) {
            self.revisions.pop_front();
        }
    }

    /// The state of a kept revision (0: empty), checked for conflicts, size and schema, or `None` when it
    /// equals the current state.
    pub(crate) fn prepare_revert(
        &self,
        to: u64,
        expected: Option<u64>,
        settings: &StateSettings,
        schema: Option<&crate::schema::Schema>,
    ) -> Result<Option<Prepared>, Error> {
        if let Some(e) = expected
            && e != self.revision
        {
            return Err(conflict(e, self.revision));
        }
        let target: Map<String, Value> = if to == 0 {
            Map::new()
        } else {
            let r = self.revisions.iter().find(|r| r.revision == to).ok_or_else(|| {
                let oldest = self.revisions.front().map_or(0, |r| r.revision);
                Error::invalid_request(format!(
                    "field `to_revision`: revision {to} is not kept (kept: {oldest} to {}, and 0 for the empty state)",
                    self.revision
                ))
            })?;
            serde_json::from_str(&r.state).map_err(|e| Error::new(ErrorCode::Internal, e.to_string()))?
        };
        if target == self.state {
            return Ok(None);
        }
        self.check(target, settings, schema).map(Some)
    }
}

impl crate::engine::Engine {
    /// `get_scenario`: revision 0 and `{}` when nothing was written (also for a chat never seen).
    pub fn get_scenario(&self, req: &GetScenario) -> ScenarioState {
        let k = &req.key;
        match self.chat(&k.channel, &k.chat_id).and_then(|c| c.scenarios.get(&k.topic_id)) {
            Some(s) => s.view(None, req.revisions),
            None => Scenario::default().view(None, req.revisions),
        }
    }

    /// `update_scenario`. Nothing is written on any error.
    pub fn update_scenario(&mut self, req: &UpdateScenario, now: Timestamp) -> Result<ScenarioState, Error> {
        let Value::Object(patch) = &req.patch else {
            return Err(Error::new(ErrorCode::InvalidPatch, "field `patch`: a merge patch must be a JSON object"));
        };
        let k = &req.key;
        let (settings, chat) = self.with_chat(&k.channel, &k.chat_id);
        let state = &settings.state;
        let scenario = chat.scenarios.entry(k.topic_id.clone()).or_default();
        match scenario.prepare(patch, req.expected_revision, state, state.schema.as_ref())? {
            None => Ok(scenario.view(Some(false), false)),
            Some((next, json)) => {
                scenario.commit(next, json, &req.patch, req.now.unwrap_or(now), state.keep_revisions);
                Ok(scenario.view(Some(true), false))
            }
        }
    }

    /// `revert_scenario`: writes a kept revision's state back as a new revision.
    pub fn revert_scenario(&mut self, req: &RevertScenario, now: Timestamp) -> Result<ScenarioState, Error> {
        let k = &req.key;
        let (settings, chat) = self.with_chat(&k.channel, &k.chat_id);
        let state = &settings.state;
        let scenario = chat.scenarios.entry(k.topic_id.clone()).or_default();
        match scenario.prepare_revert(req.to_revision, req.expected_revision, state, state.schema.as_ref())? {
            None => Ok(scenario.view(Some(false), false)),
            Some((next, json)) => {
                let written = Value::Object(next.clone());
                scenario.commit(next, json, &written, req.now.unwrap_or(now), state.keep_revisions);
                Ok(scenario.view(Some(true), false))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    fn merged(state: Value, patch: Value, depth: u32, by_key: &[(&str, u32)]) -> Value {
        let settings = StateSettings {
            merge_depth: depth,
            merge_depth_by_key: by_key.iter().map(|(k, d)| ((*k).to_owned(), *d)).collect::<BTreeMap<_, _>>(),
            ..StateSettings::default()
        };
        let (Value::Object(mut s), Value::Object(p)) = (state, patch) else { panic!("objects only") };
        merge_state(&mut s, &p, &settings);
        Value::Object(s)
    }

    #[test]
    fn rfc_7396_table() {
        // The examples of RFC 7396 §3 that apply to an object state.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": "b", "b": "c"}), json!({"a": null}), json!({"b": "c"})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (json!({"a": {"b": "c"}}), json!({"a": {"b": "d", "c": null}}), json!({"a": {"b": "d"}})),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}})),
        ];
        for (state, patch, want) in cases {
            assert_eq!(merged(state.clone(), patch.clone(), 0, &[]), want, "{state} + {patch}");
        }
    }

    #[test]
    fn depth_limits() {
        let state = json!({"household": {"adults": 2, "children": {"count": 1, "ages": [4]}}, "reform": {"rate": 0.2, "band": "b"}});
        let patch = json!({"household": {"married": true, "children": {"count": 2}}, "reform": {"rate": 0.25}});
        // Unlimited: plain RFC 7396.
        assert_eq!(
            merged(state.clone(), patch.clone(), 0, &[]),
            json!({
            "household": {"adults": 2, "married": true, "children": {"count": 2, "ages": [4]}}, "reform": {"rate": 0.25, "band": "b"}})
        );
        // Depth 1: top-level keys replace whole.
        assert_eq!(
            merged(state.clone(), patch.clone(), 1, &[]),
            json!({
            "household": {"married": true, "children": {"count": 2}}, "reform": {"rate": 0.25}})
        );
        // The seed's "shallow merge, household one level deeper".
        assert_eq!(
            merged(state.clone(), patch.clone(), 1, &[("household", 2)]),
            json!({
            "household": {"adults": 2, "married": true, "children": {"count": 2}}, "reform": {"rate": 0.25}})
        );
        // Where merging stops, nulls inside a replacing object are dropped.
        assert_eq!(merged(json!({"a": 1}), json!({"a": {"x": null, "y": 2}}), 1, &[]), json!({"a": {"y": 2}}));
    }
}
