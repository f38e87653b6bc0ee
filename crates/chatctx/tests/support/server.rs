//! A `chatctx serve` process for the integration tests, and an HTTP client for it: shared by the `it` binary
//! and the fault tests (`faults.rs`, a binary of its own).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running server; killed when dropped.
pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `chatctx serve` on a free port; returns the process, its log lines from after the address, and
/// the base URL.
pub fn spawn(
    store: &str,
    env: &[(&str, &str)],
) -> (Child, std::io::Lines<BufReader<std::process::ChildStderr>>, String) {
    let (child, _, lines, base) = spawn_logged(store, env);
    (child, lines, base)
}

/// [`spawn`], also giving the log lines before the address (what the start said: how much it rebuilt).
pub fn spawn_logged(
    store: &str,
    env: &[(&str, &str)],
) -> (Child, Vec<String>, std::io::Lines<BufReader<std::process::ChildStderr>>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_chatctx"))
        .args(["serve", "--listen", "127.0.0.1:0", "--store", store])
        .env("CHATCTX_LOG", "info")
        .env("CHATCTX_CONVERSATION__CACHE_MAX_PER_CONVERSATION", "1000000")
        .env("CHATCTX_HISTORY__MODE", "talkative")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut before = Vec::new();
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| match l.find("listening on ") {
            Some(at) => Some(format!("http://{}", l[at + 13..].trim())),
            None => {
                before.push(l);
                None
            }
        })
        .expect("the server printed its address");
    (child, before, lines, base)
}

pub fn start_with(store: &str, env: &[(&str, &str)]) -> Server {
    let (child, lines, base) = spawn(store, env);
    // Keep draining the log so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Server { child, base }
}

/// A client that says every body is JSON, without connection pooling.
pub fn client() -> reqwest::blocking::Client {
    chatctx::triage::install_tls_provider();
    // No pooling: after a 413 the server closes the connection without reading the rest of the body.
    // Every API POST says it is JSON (a test of the other cases sets its own header).
    let mut json = reqwest::header::HeaderMap::new();
    json.insert(reqwest::header::CONTENT_TYPE, reqwest::header::HeaderValue::from_static("application/json"));
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .default_headers(json)
        .build()
        .unwrap()
}
