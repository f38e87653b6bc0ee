//! Conversation state: get / update / revert, depth rules, conflicts, limits, schema, the prompt block.

use std::sync::{Arc, Mutex};

use chatctx_core::ErrorCode;
use chatctx_core::render::Role;
use chatctx_core::tools::Request;
use {chatctx_core::scenario::ScenarioState, chatctx_core::tools::state::GetScenario};

use super::*;

fn call(e: &mut Engine, tool: &str, args: Value) -> Result<ScenarioState, chatctx_core::Error> {
    match e.call(tool, &args, Timestamp::from_unix(T0 + 500).unwrap())? {
        chatctx_core::tools::ToolResponse::Scenario(s) => Ok(*s),
        _ => panic!("not a scenario answer"),
    }
}

fn update(e: &mut Engine, patch: Value) -> Result<ScenarioState, chatctx_core::Error> {
    call(e, "update_scenario", json!({"chat_id": "-1", "patch": patch}))
}

fn seed_settings() -> Settings {
    // The seed's rule: shallow merge, household one level deeper.
    let mut s = Settings::default();
    s.state.merge_depth = 1;
    s.state.merge_depth_by_key.insert("household".into(), 2);
    s
}

#[test]
fn empty_then_revisions_count_real_changes_only() {
    let mut e = Engine::new(Settings::default());
    let s = call(&mut e, "get_scenario", json!({"chat_id": "-1"})).unwrap();
    assert_eq!((s.revision, s.state.len(), s.updated_at), (0, 0, None));
    assert_eq!(update(&mut e, json!({"plan": "trip"})).unwrap().revision, 1);
    let same = update(&mut e, json!({"plan": "trip"})).unwrap();
    assert_eq!((same.revision, same.changed), (1, Some(false)), "a patch that changes nothing is no revision");
    assert_eq!(update(&mut e, json!({"plan": null})).unwrap().revision, 2);
    let s = call(&mut e, "get_scenario", json!({"chat_id": "-1", "revisions": true})).unwrap();
    assert_eq!(s.revisions.unwrap().iter().map(|r| r.revision).collect::<Vec<_>>(), [2, 1]);
    // Topics have their own state.
    assert_eq!(call(&mut e, "get_scenario", json!({"chat_id": "-1", "topic_id": "7"})).unwrap().revision, 0);
}

#[test]
fn what_if_they_were_married() {
    let mut e = Engine::new(seed_settings());
    update(
        &mut e,
        json!({"household": {"adults": 2, "children": [{"age": 4}, {"age": 7}], "region": "north"},
                          "reform": {"child_benefit": 25}, "baseline": "current law"}),
    )
    .unwrap();
    let s = update(&mut e, json!({"household": {"married": true}})).unwrap();
    assert_eq!(
        Value::Object((*s.state).clone()),
        json!({
        "household": {"adults": 2, "children": [{"age": 4}, {"age": 7}], "region": "north", "married": true},
        "reform": {"child_benefit": 25}, "baseline": "current law"}),
        "one field changes, everything else stays"
    );
    // Top-level keys other than household replace whole.
    let s = update(&mut e, json!({"reform": {"rate": 0.2}})).unwrap();
    assert_eq!(s.state["reform"], json!({"rate": 0.2}));
    assert_eq!(s.revision, 3);
}

#[test]
fn stale_revisions_conflict_and_change_nothing() {
    let mut e = Engine::new(Settings::default());
    update(&mut e, json!({"a": 1})).unwrap();
    let err = call(&mut e, "update_scenario", json!({"chat_id": "-1", "patch": {"a": 2}, "expected_revision": 0}))
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RevisionConflict);
    assert_eq!(call(&mut e, "get_scenario", json!({"chat_id": "-1"})).unwrap().state["a"], 1);
    let ok =
        call(&mut e, "update_scenario", json!({"chat_id": "-1", "patch": {"a": 2}, "expected_revision": 1})).unwrap();
    assert_eq!(ok.revision, 2);
}

#[test]
fn bad_patches_and_the_size_cap() {
    let mut s = Settings::default();
    s.state.max_bytes = 64;
    let mut e = Engine::new(s);
    for bad in [json!([1, 2]), json!("x"), json!(null), json!(3)] {
        let err = call(&mut e, "update_scenario", json!({"chat_id": "-1", "patch": bad})).unwrap_err();
        assert_eq!(err.code, if bad.is_null() { ErrorCode::InvalidRequest } else { ErrorCode::InvalidPatch }, "{bad}");
    }
    update(&mut e, json!({"note": "short"})).unwrap();
    let err = update(&mut e, json!({"note": "x".repeat(100)})).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidPatch);
    assert!(err.message.contains("state.max_bytes"), "{}", err.message);
    let s = call(&mut e, "get_scenario", json!({"chat_id": "-1"})).unwrap();
    assert_eq!((s.revision, &s.state["note"]), (1, &json!("short")), "nothing written");
}

#[test]
fn schema_failures_name_the_path_and_write_nothing() {
    let mut s = Settings::default();
    s.state.schema = Some(
        chatctx_core::schema::Schema::new(
            json!({"properties": {"household": {"properties": {"adults": {"type": "integer"}}}}}),
        )
        .unwrap(),
    );
    let mut e = Engine::new(s);
    update(&mut e, json!({"household": {"adults": 2}})).unwrap();
    let err = update(&mut e, json!({"household": {"adults": "two"}})).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidPatch);
    assert!(err.message.contains("household.adults"), "{}", err.message);
    assert_eq!(call(&mut e, "get_scenario", json!({"chat_id": "-1"})).unwrap().revision, 1);
}

#[test]
fn revisions_are_bounded_and_revert_writes_a_new_one() {
    let mut s = Settings::default();
    s.state.keep_revisions = 3;
    let mut e = Engine::new(s);
    for i in 1..=5 {
        update(&mut e, json!({"step": i})).unwrap();
    }
    let r = call(&mut e, "revert_scenario", json!({"chat_id": "-1", "to_revision": 4})).unwrap();
    assert_eq!((r.revision, &r.state["step"], r.changed), (6, &json!(4), Some(true)));
    let err = call(&mut e, "revert_scenario", json!({"chat_id": "-1", "to_revision": 2})).unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidRequest, "revision 2 is no longer kept");
    let r = call(&mut e, "revert_scenario", json!({"chat_id": "-1", "to_revision": 0})).unwrap();
    assert!(r.state.is_empty());
    let kept = call(&mut e, "get_scenario", json!({"chat_id": "-1", "revisions": true})).unwrap().revisions.unwrap();
    assert_eq!(kept.len(), 3);
    assert_eq!(kept[1].patch, json!({"step": 4}), "a revert records the state it wrote back");
}

#[test]
fn the_state_is_in_every_prompt_after_history_and_before_the_current_message() {
    let mut s = settings(Mode::Talkative, Scope::Topic);
    s.prompt.system = "sys".into();
    let mut e = engine(
        s,
        [
            msg("-1", None, 1, user("1", "Ann"), "hello", true, 1),
            msg("-1", None, 2, user("1", "Ann"), "what if married?", true, 2),
        ],
    );
    assert_eq!(history(&e, "-1", None, Some(2)).prompt.len(), 3, "no state, no block");
    update(&mut e, json!({"z": 1, "household": {"married": false, "adults": 2}})).unwrap();
    let h = history(&e, "-1", None, Some(2));
    let roles: Vec<Role> = h.prompt.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::System, Role::User]);
    assert_eq!(
        h.prompt[2].content, "ACTIVE SCENARIO\n{\"household\":{\"adults\":2,\"married\":false},\"z\":1}",
        "compact, keys sorted"
    );
}

#[test]
fn two_writers_lose_no_update() {
    const N: u64 = 200;
    let e = Arc::new(Mutex::new(Engine::new(Settings::default())));
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|name| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut conflicts = 0;
                for _ in 0..N {
                    loop {
                        // Read, then write with the revision read: another writer may have moved on between.
                        let seen = e.lock().unwrap().get_scenario(&GetScenario::decode(&json!({"chat_id": "-1"})).unwrap());
                        std::thread::yield_now();
                        let count = seen.state.get("count").and_then(Value::as_u64).unwrap_or(0);
                        let patch = json!({"chat_id": "-1", "patch": {"count": count + 1, "last": name}, "expected_revision": seen.revision});
                        match e.lock().unwrap().call("update_scenario", &patch, Timestamp::from_unix(T0).unwrap()) {
                            Ok(_) => break,
                            Err(err) if err.code == ErrorCode::RevisionConflict => conflicts += 1,
                            Err(err) => panic!("{err}"),
                        }
                    }
                }
                conflicts
            })
        })
        .collect();
    let conflicts: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
    let s = e.lock().unwrap().get_scenario(&GetScenario::decode(&json!({"chat_id": "-1"})).unwrap());
    assert_eq!(s.state["count"], 2 * N, "every accepted update counted ({conflicts} conflicts retried)");
    assert_eq!(s.revision, 2 * N, "one revision per accepted update");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Random patches under random depth rules: the size cap sees the real size (commit asserts it in
    /// debug builds), a revert to any kept revision rebuilds exactly the state that revision had, and the
    /// same patches always give the same states.
    #[test]
    fn random_patches_keep_sizes_and_reverts_exact(
        patches in proptest::collection::vec(proptest::collection::btree_map("[a-d]", proptest::option::of(0u8..4), 1..4), 1..25),
        depth in 0u32..3,
    ) {
        let build = || {
            let mut s = Settings::default();
            s.state.merge_depth = depth;
            s.state.keep_revisions = 10;
            let mut e = Engine::new(s);
            let mut seen: Vec<(u64, Value)> = Vec::new();
            for p in &patches {
                let patch: serde_json::Map<String, Value> = p.iter().map(|(k, v)| {
                    let v = match v { None => Value::Null, Some(0) => json!(1), Some(1) => json!({"x": {"y": k}}), Some(2) => json!({"x": null, "z": [1, 2]}), _ => json!("s") };
                    (k.clone(), v)
                }).collect();
                let r = update(&mut e, Value::Object(patch)).unwrap();
                seen.push((r.revision, Value::Object((*r.state).clone())));
            }
            (e, seen)
        };
        let (_, seen) = build();
        let last = seen.last().map(|x| x.0).unwrap_or(0);
        for (rev, state) in seen.iter().filter(|(r, _)| *r > 0 && *r + 10 > last) {
            // A revert is itself a revision, so each check starts from a fresh build of the same patches.
            let (mut e, again) = build();
            proptest::prop_assert_eq!(&again, &seen, "same patches, same states");
            let back = call(&mut e, "revert_scenario", json!({"chat_id": "-1", "to_revision": rev})).unwrap();
            proptest::prop_assert_eq!(&Value::Object((*back.state).clone()), state, "revision {}", rev);
        }
    }
}
