//! Conversation state (docs/protocol.md §6.4, seed 004): one JSON object per conversation (chat, or chat + topic) that
//! the bot and the model keep up to date turn by turn, injected into every prompt as ACTIVE SCENARIO.
//!
//! `update_scenario` applies an RFC 7396 merge patch (null deletes, objects merge, everything else
//! replaces), limited by `state.merge_depth` and `state.merge_depth_by_key`: with depth 1 top-level keys are
//! replaced whole, `{ household = 2 }` merges `household` one level deeper. `expected_revision` makes
//! updates optimistic: a stale one is `revision_conflict` and nothing is written. Every successful change is
//! exactly one new revision; a patch that changes nothing is not. The last `keep_revisions` revisions are
//! kept with their patch, time and resulting state, so `revert_scenario` can write an earlier state back.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorCode};
use crate::settings::StateSettings;
use crate::time::Timestamp;

/// The change one revision made: each touched top-level key's new value, or `None` for a removal. Exact
/// whatever the merge settings, so an old state can be rebuilt from it.
pub(crate) type Delta = Vec<(String, Option<Value>)>;

/// One kept revision.
#[derive(Debug, Clone, PartialEq)]
struct Revision {
    revision: u64,
    at: Timestamp,
    /// The patch as sent (compact JSON); for a revert, the state written back.
    patch: Box<str>,
    delta: Delta,
}

/// The state of one conversation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Scenario {
    revision: u64,
    /// Shared with answers; written copy-on-write.
    state: Arc<Map<String, Value>>,
    /// Compact JSON bytes of each top-level entry (`"key":value`), so the size check is arithmetic.
    sizes: BTreeMap<String, usize>,
    updated_at: Option<Timestamp>,
    /// The state before the oldest kept revision.
    base: Map<String, Value>,
    revisions: VecDeque<Revision>,
}

/// What `get_scenario` and `update_scenario` answer.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct ScenarioState {
    /// The current revision (0 when nothing was ever written).
    pub revision: u64,
    /// The state, keys in sorted order.
    pub state: Arc<Map<String, Value>>,
    /// When the current revision was written.
    pub updated_at: Option<Timestamp>,
    /// Whether this call wrote a revision (updates and reverts only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    /// The kept revisions, newest first (`get_scenario` with `"revisions": true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revisions: Option<Vec<RevisionInfo>>,
    /// What the call did (docs/protocol.md §6.7): in the answer when the request says `"explain": true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Box<crate::decision::ScenarioDecision>>,
}

/// One kept revision as reported.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(crate = "crate::wire")]
pub struct RevisionInfo {
    /// Its number.
    pub revision: u64,
    /// When it was written.
    pub at: Timestamp,
    /// The patch that made it (for a revert, the state written back).
    pub patch: Value,
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

fn conflict(expected: u64, current: u64) -> Error {
    Error::new(
        ErrorCode::RevisionConflict,
        format!("expected_revision {expected} is stale: the state is at revision {current}"),
    )
}

/// Compact JSON bytes of one `"key":value` entry.
fn entry_size(k: &str, v: &Value) -> usize {
    serde_json::to_string(k).map_or(0, |k| k.len()) + 1 + serde_json::to_string(v).map_or(0, |v| v.len())
}

/// Compact JSON bytes of an object whose entries have these sizes.
fn object_size(entries: usize, bytes: usize) -> usize {
    2 + bytes + entries.saturating_sub(1)
}

fn apply(state: &mut Map<String, Value>, delta: &Delta) {
    for (k, v) in delta {
        match v {
            Some(v) => {
                state.insert(k.clone(), v.clone());
            }
            None => {
                state.remove(k);
            }
        }
    }
}

impl Scenario {
    pub(crate) fn state(&self) -> &Map<String, Value> {
        &self.state
    }

    /// The state as shared (a cheap clone), to compare a write against.
    pub(crate) fn state_arc(&self) -> Arc<Map<String, Value>> {
        self.state.clone()
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
            explain: None,
        }
    }

    /// Checks an update without writing: the change it makes, or `None` when it changes nothing. Only the
    /// top-level keys the patch names are merged and measured.
    pub(crate) fn prepare(
        &self,
        patch: &Map<String, Value>,
        expected: Option<u64>,
        settings: &StateSettings,
        schema: Option<&crate::schema::Schema>,
    ) -> Result<Option<Delta>, Error> {
        if let Some(e) = expected
            && e != self.revision
        {
            return Err(conflict(e, self.revision));
        }
        // Bounded before anything is merged: a state too deep to be stored and read back is never accepted.
        let depth = 1 + patch.values().map(crate::json::value_nesting).max().unwrap_or(0);
        if depth > settings.max_depth {
            return Err(Error::new(
                ErrorCode::InvalidPatch,
                format!("the patch is nested {depth} levels deep, over state.max_depth ({})", settings.max_depth),
            ));
        }
        let mut delta = Delta::new();
        for (k, v) in patch {
            let old = self.state.get(k);
            if v.is_null() {
                if old.is_some() {
                    delta.push((k.clone(), None));
                }
                continue;
            }
            let depth = settings.merge_depth_by_key.get(k).copied().unwrap_or(settings.merge_depth);
            let mut next = old.cloned().unwrap_or(Value::Null);
            merge_value(&mut next, v, if depth == 0 { None } else { Some(depth - 1) });
            if old != Some(&next) {
                delta.push((k.clone(), Some(next)));
            }
        }
        if delta.is_empty() {
            return Ok(None);
        }
        self.check(&delta, settings, schema)?;
        Ok(Some(delta))
    }

    /// The size cap and the schema, for the state `delta` would make.
    fn check(
        &self,
        delta: &Delta,
        settings: &StateSettings,
        schema: Option<&crate::schema::Schema>,
    ) -> Result<(), Error> {
        let (mut entries, mut bytes) = (self.sizes.len(), self.sizes.values().sum::<usize>());
        for (k, v) in delta {
            if let Some(old) = self.sizes.get(k) {
                entries -= 1;
                bytes -= old;
            }
            if let Some(v) = v {
                entries += 1;
                bytes += entry_size(k, v);
            }
        }
        let size = object_size(entries, bytes);
        if size > settings.max_bytes {
            return Err(Error::new(
                ErrorCode::InvalidPatch,
                format!("the state would be {size} bytes, over state.max_bytes ({})", settings.max_bytes),
            ));
        }
        if let Some(schema) = schema {
            let mut next = (*self.state).clone();
            apply(&mut next, delta);
            schema.validate(&Value::Object(next)).map_err(|e| Error::new(ErrorCode::InvalidPatch, e))?;
        }
        Ok(())
    }

    /// Writes a prepared change as the next revision.
    pub(crate) fn commit(&mut self, delta: Delta, patch: &Value, at: Timestamp, keep: usize) {
        self.revision += 1;
        let state = Arc::make_mut(&mut self.state);
        for (k, v) in &delta {
            match v {
                Some(v) => {
                    self.sizes.insert(k.clone(), entry_size(k, v));
                }
                None => {
                    self.sizes.remove(k);
                }
            }
        }
        apply(state, &delta);
        debug_assert_eq!(
            object_size(self.sizes.len(), self.sizes.values().sum()),
            serde_json::to_string(&*self.state).map_or(0, |j| j.len()),
            "the size bookkeeping matches the real serialization"
        );
        self.updated_at = Some(at);
        self.revisions.push_back(Revision {
            revision: self.revision,
            at,
            patch: serde_json::to_string(patch).unwrap_or_default().into_boxed_str(),
            delta,
        });
        while self.revisions.len() > keep.max(1) {
            if let Some(oldest) = self.revisions.pop_front() {
                apply(&mut self.base, &oldest.delta);
            }
        }
    }

    /// The change that writes a kept revision's state back (0: empty), checked, or `None` when it equals the
    /// current state.
    pub(crate) fn prepare_revert(
        &self,
        to: u64,
        expected: Option<u64>,
        settings: &StateSettings,
        schema: Option<&crate::schema::Schema>,
    ) -> Result<Option<(Delta, Value)>, Error> {
        if let Some(e) = expected
            && e != self.revision
        {
            return Err(conflict(e, self.revision));
        }
        let target: Map<String, Value> = if to == 0 {
            Map::new()
        } else {
            if !self.revisions.iter().any(|r| r.revision == to) {
                let oldest = self.revisions.front().map_or(0, |r| r.revision);
                return Err(Error::invalid_request(format!(
                    "field `to_revision`: revision {to} is not kept (kept: {oldest} to {}, and 0 for the empty state)",
                    self.revision
                )));
            }
            let mut rebuilt = self.base.clone();
            for r in self.revisions.iter().take_while(|r| r.revision <= to) {
                apply(&mut rebuilt, &r.delta);
            }
            rebuilt
        };
        let mut delta: Delta =
            self.state.keys().filter(|k| !target.contains_key(*k)).map(|k| (k.clone(), None)).collect();
        delta.extend(
            target.iter().filter(|(k, v)| self.state.get(*k) != Some(*v)).map(|(k, v)| (k.clone(), Some(v.clone()))),
        );
        if delta.is_empty() {
            return Ok(None);
        }
        self.check(&delta, settings, schema)?;
        Ok(Some((delta, Value::Object(target))))
    }
}

impl Scenario {
    /// The exact exported form.
    pub(crate) fn export(&self, topic_id: Option<String>) -> ScenarioDoc {
        ScenarioDoc {
            topic_id,
            revision: self.revision,
            state: (*self.state).clone(),
            updated_at: self.updated_at,
            base: self.base.clone(),
            revisions: self
                .revisions
                .iter()
                .map(|r| RevisionDoc {
                    revision: r.revision,
                    at: r.at,
                    patch: serde_json::from_str(&r.patch).unwrap_or(Value::Null),
                    delta: r.delta.clone(),
                })
                .collect(),
        }
    }

    /// Rebuilds a scenario from its exported form.
    pub(crate) fn import(d: &ScenarioDoc) -> Self {
        Self {
            revision: d.revision,
            sizes: d.state.iter().map(|(k, v)| (k.clone(), entry_size(k, v))).collect(),
            state: Arc::new(d.state.clone()),
            updated_at: d.updated_at,
            base: d.base.clone(),
            revisions: d
                .revisions
                .iter()
                .map(|r| Revision {
                    revision: r.revision,
                    at: r.at,
                    patch: serde_json::to_string(&r.patch).unwrap_or_default().into_boxed_str(),
                    delta: r.delta.clone(),
                })
                .collect(),
        }
    }
}

/// The state of one scope with its kept revisions.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioDoc {
    /// The topic (none: the chat's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic_id: Option<String>,
    /// Current revision.
    pub revision: u64,
    /// Current state.
    pub state: Map<String, Value>,
    /// When it was written.
    pub updated_at: Option<Timestamp>,
    /// The state before the oldest kept revision.
    pub base: Map<String, Value>,
    /// Kept revisions, oldest first.
    pub revisions: Vec<RevisionDoc>,
}

/// One kept revision.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RevisionDoc {
    /// Its number.
    pub revision: u64,
    /// When.
    pub at: Timestamp,
    /// The patch (or, for a revert, the state written back).
    pub patch: Value,
    /// `[key, new value or null]` for each top-level key it changed.
    pub delta: Delta,
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
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
