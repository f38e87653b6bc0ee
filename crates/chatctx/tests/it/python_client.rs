//! The Python package (`clients/python`): its pytest suite, against the `chatctx` its wheel installed.
//!
//! `CHATCTX_TEST_PYTHON_CLIENT` names a Python whose venv has the package installed from `clients/python` with
//! its `test` extra (`.ci/run` makes a fresh one, so a missing install step fails CI). Under CI a missing
//! interpreter fails the test; elsewhere the test says it was skipped. The suite runs the wheel's server, not
//! this build: after changing the server, reinstall the package.

use std::path::Path;
use std::process::Command;

use super::mcp::external;

#[test]
fn python_package_tests_pass() {
    let Some(python) =
        external("CHATCTX_TEST_PYTHON_CLIENT", "a Python with `pip install \"clients/python[test]\"` done in its venv")
    else {
        return;
    };
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "clients/python/tests"])
        .current_dir(&repo)
        .output()
        .expect("the Python runs");
    let report = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{report}");
    assert!(out.status.success(), "the Python package's tests failed:\n{report}");
    assert!(report.contains(" passed"), "pytest ran nothing:\n{report}");
    assert!(!report.contains(" skipped"), "pytest skipped tests:\n{report}");
}
