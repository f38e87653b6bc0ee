//! `chatctx import` of a Slack export (its folder and its ZIP file) and of DiscordChatExporter files: the
//! format is recognised and named on stderr with counts, the lines replay into what a bot asks for, and a bad
//! input is a clear error that leaves stdout empty.

use std::io::Write as _;

use serde_json::json;

use crate::{bin, lines, repo, run_with_stdin};

fn import(args: &[&str]) -> std::process::Output {
    let mut all = vec!["import"];
    all.extend_from_slice(args);
    bin().env("CHATCTX_LOG", "error").args(all).output().unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_slack_export_folder_and_its_zip_read_the_same_and_replay() {
    let dir = repo("crates/chatctx-platforms/tests/data/slack/export");
    let from_dir = import(&[dir.to_str().unwrap(), "--bot-user-id", "U0HELPER"]);
    assert!(from_dir.status.success(), "{}", stderr(&from_dir));
    assert!(
        stderr(&from_dir).contains("read a Slack workspace export: 5 people, 14 messages")
            && stderr(&from_dir).contains("skipped: 1 × message.huddle_thread, 1 × message.tombstone"),
        "{}",
        stderr(&from_dir)
    );
    // Zipped with its folder, as Slack's download unpacks, and deflated.
    let scratch = chatctx_store::testing::Scratch::new("slack-export-zip");
    let zip_path = scratch.file("Acme Slack export Feb 12 2026 - Feb 13 2026.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&zip_path).unwrap());
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path.strip_prefix(&dir).unwrap().to_string_lossy().replace('\\', "/");
            zip.start_file(format!("acme-export/{rel}"), options).unwrap();
            zip.write_all(&std::fs::read(&path).unwrap()).unwrap();
        }
    }
    zip.finish().unwrap();
    let from_zip = import(&[zip_path.to_str().unwrap(), "--bot-user-id", "U0HELPER"]);
    assert!(from_zip.status.success(), "{}", stderr(&from_zip));
    assert_eq!(from_zip.stdout, from_dir.stdout, "a ZIP file reads as its folder does");

    let mut replay = String::from_utf8(from_dir.stdout).unwrap();
    replay.push_str(
        &json!({"call": "get_chat_history_context", "args": {"channel": "slack", "chat_id": "C0DEPLOY",
            "current_message_id": "1770886860.000200"}})
        .to_string(),
    );
    let answer = run_with_stdin(&["replay"], &replay);
    let l = lines(&answer);
    assert_eq!(l.len(), 1, "{}", String::from_utf8_lossy(&answer.stdout));
    let current = &l[0]["result"]["prompt"];
    let text = current.to_string();
    assert!(text.contains("[bob](slack:@U0BOB): is prod back? [Helper](slack:@U0HELPER)"), "{text}");
}

#[test]
fn discord_chat_exporter_files_import_and_name_what_they_read() {
    let general = repo("crates/chatctx-platforms/tests/data/discord/dce_general.json");
    let out = import(&[general.to_str().unwrap(), "--bot-user-id", "880000000000000099"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("read a DiscordChatExporter export: ")
            && stderr(&out).contains("skipped: 1 × message type AutoModerationAction"),
        "{}",
        stderr(&out)
    );
    let events = lines(&out);
    assert!(
        events.iter().any(|e| e["event"]["type"] == "person" && e["event"]["workspace_id"] == "880000000000000001")
    );
    assert!(events.iter().any(|e| e["event"]["kind"] == "outbound_agent"));
}

#[test]
fn a_bad_input_is_a_clear_error_and_writes_nothing() {
    let scratch = chatctx_store::testing::Scratch::new("import-bad");
    let cases: [(&str, &[u8], &str); 5] = [
        ("other.json", br#"{"hello": "world"}"#, "not a format chatctx imports"),
        (
            "broken.json",
            br#"{"guild": {"id": "1"}, "channel": {"id": "2"}, "messages": [ {"id": "#,
            "is not valid JSON",
        ),
        (
            "dce_no_author.json",
            br#"{"guild": {"id": "1"}, "channel": {"id": "2"}, "messages": "none"}"#,
            "not a format",
        ),
        ("fake.zip", b"PK\x03\x04 not really a zip", "ZIP file that cannot be read"),
        ("binary.bin", b"\xff\xfe\x00binary", "neither JSON, a ZIP file nor a directory"),
    ];
    for (name, body, expected) in cases {
        let path = scratch.file(name);
        std::fs::write(&path, body).unwrap();
        let out = import(&[path.to_str().unwrap()]);
        assert!(!out.status.success(), "{name}");
        assert!(out.stdout.is_empty(), "{name}: nothing is half-written");
        let err = stderr(&out);
        assert!(err.contains(name) && err.contains(expected), "{name}: {err}");
    }
    // A folder that is not a Slack export, and a Slack export whose channel list is broken.
    let empty = scratch.file("empty-dir");
    std::fs::create_dir_all(&empty).unwrap();
    let out = import(&[empty.to_str().unwrap()]);
    assert!(!out.status.success() && out.stdout.is_empty());
    assert!(stderr(&out).contains("not a Slack export") && stderr(&out).contains("users.json"), "{}", stderr(&out));
    let broken = scratch.file("broken-export");
    std::fs::create_dir_all(broken.join("general")).unwrap();
    std::fs::write(broken.join("users.json"), "[]").unwrap();
    std::fs::write(broken.join("channels.json"), "[{\"id\": \"C1\", \"name\": \"general\"}]").unwrap();
    std::fs::write(broken.join("general/2026-01-01.json"), "[{\"ts\": \"1.0\", \"text\": ").unwrap();
    let out = import(&[broken.to_str().unwrap()]);
    assert!(!out.status.success() && out.stdout.is_empty());
    assert!(stderr(&out).contains("2026-01-01.json"), "the bad file is named: {}", stderr(&out));
    let too_big = import(&[
        repo("crates/chatctx-platforms/tests/data/discord/dce_general.json").to_str().unwrap(),
        "--max-bytes",
        "100",
    ]);
    assert!(!too_big.status.success() && stderr(&too_big).contains("--max-bytes"), "{}", stderr(&too_big));
}

/// `--events` writes what a running server's `/v1/events` takes: the export's people name its speakers there.
#[test]
fn imported_events_load_into_a_running_server() {
    use crate::http::{JsonBody, client, start_with};
    let dir = repo("crates/chatctx-platforms/tests/data/slack/export");
    let out = import(&[dir.to_str().unwrap(), "--bot-user-id", "U0HELPER", "--events"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(lines(&out).iter().all(|e| e["type"].is_string()), "bare events");
    let s = start_with("memory", &[]);
    let c = client();
    let report = c
        .post(format!("{}/v1/events", s.base))
        .header("content-type", "application/x-ndjson")
        .body(out.stdout)
        .send()
        .unwrap()
        .json_value();
    assert_eq!(report["rejected"].as_array().map(Vec::len), Some(0), "{report}");
    let h = c.get(format!("{}/v1/chats/C0DEPLOY/history?channel=slack", s.base)).send().unwrap().json_value();
    assert_eq!(h["items"][1]["sender"]["display_ref"], "[bob](slack:@U0BOB)", "{h}");
    let doc = repo("crates/chatctx/tests/data/export_result.json");
    assert!(import(&[doc.to_str().unwrap(), "--events"]).status.success(), "a Telegram export as events too");
}
