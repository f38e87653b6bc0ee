//! Runs every scenario file of `tests/scenarios/` through `replay` and checks each call's `expect`:
//! `{"status", "object_id"?, "candidates"?, "scope_used"?}` for resolve, `{"status", "object_ids"?,
//! "truncated"?, "activation"?, "expires_at"?, "scope_match"?}` for list, `{"revision"?, "state"?,
//! "changed"?}` for conversation state, or `{"error": code}`.

use chatctx::replay;
use chatctx_core::{Engine, Settings};
use serde_json::Value;

use super::repo;

fn ids(list: &Value, key: &str) -> Vec<String> {
    list.as_array().into_iter().flatten().filter_map(|o| o[key].as_str().map(str::to_owned)).collect()
}

fn check(expect: &Value, got: &Value) -> Result<(), String> {
    if let Some(code) = expect.get("error") {
        return if got["error"]["code"] == *code { Ok(()) } else { Err(format!("expected error {code}, got {got}")) };
    }
    let r = got.get("result").ok_or_else(|| format!("expected a result, got {got}"))?;
    // Conversation state answers: revision, state, changed.
    if expect.get("revision").is_some() || expect.get("state").is_some() {
        for key in ["revision", "state", "changed"] {
            if let Some(want) = expect.get(key)
                && r[key] != *want
            {
                return Err(format!("{key} {} != expected {want}", r[key]));
            }
        }
        return Ok(());
    }
    if r["status"] != expect["status"] {
        return Err(format!(
            "status {} != expected {}; candidates {:?}",
            r["status"],
            expect["status"],
            ids(&r["candidates"], "object_id")
        ));
    }
    if let Some(id) = expect.get("object_id")
        && r["best_match"]["object_id"] != *id
    {
        return Err(format!("best_match {} != expected {id}", r["best_match"]["object_id"]));
    }
    if let Some(list) = expect.get("candidates") {
        let mut want = ids(list, "").into_iter().collect::<Vec<_>>();
        if want.is_empty() {
            want = list.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect();
        }
        let mut have = ids(&r["candidates"], "object_id");
        want.sort();
        have.sort();
        if want != have {
            return Err(format!("candidates {have:?} != expected {want:?}"));
        }
    }
    if let Some(why) = expect.get("why")
        && r["why"] != *why
    {
        return Err(format!("why {} != expected {why}", r["why"]));
    }
    if let Some(scope) = expect.get("scope_used")
        && r["scope_used"] != *scope
    {
        return Err(format!("scope_used {} != expected {scope}", r["scope_used"]));
    }
    if let Some(list) = expect.get("object_ids") {
        let want: Vec<String> =
            list.as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect();
        let have = ids(&r["objects"], "object_id");
        if want != have {
            return Err(format!("objects {have:?} != expected {want:?}"));
        }
    }
    if let Some(t) = expect.get("truncated")
        && r["truncated"] != *t
    {
        return Err(format!("truncated {} != expected {t}", r["truncated"]));
    }
    for key in ["activation", "expires_at"] {
        if let Some(v) = expect.get(key)
            && r["objects"][0][key] != *v
        {
            return Err(format!("{key} {} != expected {v}", r["objects"][0][key]));
        }
    }
    if let Some(list) = expect.get("scope_match") {
        let have: Vec<Value> =
            r["objects"].as_array().into_iter().flatten().map(|o| o["scope_match"].clone()).collect();
        if list.as_array() != Some(&have) {
            return Err(format!("scope_match {have:?} != expected {list}"));
        }
    }
    Ok(())
}

fn run(text: &str) -> String {
    let mut engine = Engine::new(Settings::default());
    let mut out = Vec::new();
    replay::run(&mut engine, text.as_bytes(), &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn every_scenario_meets_its_expectations() {
    let dir = repo("crates/chatctx/tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(files.len() >= 40, "at least 40 scenarios, found {}", files.len());
    let (mut failures, mut checked) = (Vec::new(), 0);
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(path).unwrap();
        let out = run(&text);
        assert_eq!(out, run(&text), "{name}: two runs must give byte-identical output");
        let answers: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        if let Some(e) = answers.iter().find(|a| a.get("event_error").is_some()) {
            failures.push(format!("{name}: rejected event {e}"));
            continue;
        }
        let calls: Vec<(usize, Value)> = text
            .lines()
            .enumerate()
            .filter_map(|(i, l)| {
                serde_json::from_str::<Value>(l).ok().filter(|v| v.get("call").is_some()).map(|v| (i + 1, v))
            })
            .collect();
        assert_eq!(calls.len(), answers.len(), "{name}: one answer per call");
        for ((line, call), got) in calls.iter().zip(&answers) {
            let expect = call.get("expect").unwrap_or_else(|| panic!("{name}:{line}: a call without expect"));
            checked += 1;
            if let Err(why) = check(expect, got) {
                failures.push(format!("{name}:{line}: {why}"));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {checked} expectations failed:\n{}", failures.len(), failures.join("\n"));
}
