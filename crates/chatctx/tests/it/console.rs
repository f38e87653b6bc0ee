//! The web console in a real browser: `tests/console/test_console.py` drives headless Chromium (Debian's
//! `chromium` and `chromium-driver`) with Selenium against this build's `chatctx serve`, and leaves
//! screenshots at desktop and phone widths in `target/console-screenshots/`.
//!
//! `CHATCTX_TEST_CONSOLE` names a Python with `selenium` and `pytest` (`.ci/run` makes the venv and installs
//! Chromium). Under CI a missing one fails the test; elsewhere the test says it was skipped.

use std::path::Path;
use std::process::Command;

use super::mcp::external;

#[test]
fn the_console_works_in_a_real_browser() {
    let Some(python) = external(
        "CHATCTX_TEST_CONSOLE",
        "a Python with selenium and pytest, and Debian's chromium and chromium-driver",
    ) else {
        return;
    };
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let shots = crate_dir.join("../../target/console-screenshots");
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/console"])
        .current_dir(crate_dir)
        .env("CHATCTX_BIN", env!("CARGO_BIN_EXE_chatctx"))
        .env("CHATCTX_SCREENSHOTS", &shots)
        .output()
        .expect("the Python runs");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{report}");
    assert!(out.status.success(), "the console's browser test failed:\n{report}");
    assert!(report.contains(" passed") && !report.contains(" skipped"), "pytest ran nothing or skipped:\n{report}");
    for shot in ["desktop-history-call.png", "phone-history-call.png"] {
        assert!(shots.join(shot).metadata().is_ok_and(|m| m.len() > 10_000), "no screenshot {shot}");
    }
}
