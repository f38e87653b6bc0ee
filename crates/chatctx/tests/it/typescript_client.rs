//! The TypeScript package (`clients/typescript`): built with `tsc`, type-checked in strict mode with its examples
//! and the sample user code that must not compile, then its `node --test` suite against this build's server.
//!
//! `CHATCTX_TEST_NODE` names a `node` (20 or later) and `clients/typescript/node_modules` must hold the lockfile's
//! packages (`npm ci`; `.ci/run` does both). Under CI a missing one fails the test; elsewhere the test says it was
//! skipped.

use std::path::Path;
use std::process::Command;

use super::mcp::external;

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .env("CHATCTX_BIN", env!("CARGO_BIN_EXE_chatctx"))
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "`{program} {}` failed:\n{report}", args.join(" "));
    report
}

#[test]
fn typescript_package_builds_type_checks_and_passes_its_tests() {
    let Some(node) = external("CHATCTX_TEST_NODE", "a Node.js 20+ `node`, with `npm ci` done in clients/typescript")
    else {
        return;
    };
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../clients/typescript");
    let tsc = dir.join("node_modules/typescript/bin/tsc");
    assert!(tsc.is_file(), "clients/typescript/node_modules is missing: run `npm ci` there (.ci/run does)");
    let tsc = tsc.to_str().unwrap();
    for project in ["tsconfig.json", "tsconfig.check.json", "tsconfig.examples.json"] {
        run(&dir, &node, &[tsc, "-p", project]);
    }
    let report = run(&dir, &node, &["--test", "--test-concurrency=1", "test/"]);
    eprintln!("{report}");
    assert!(
        report.contains("# fail 0") && !report.contains("# pass 0"),
        "node --test ran nothing or failed:\n{report}"
    );
    assert!(report.contains("# skipped 0") && report.contains("# todo 0"), "node --test skipped tests:\n{report}");
}
