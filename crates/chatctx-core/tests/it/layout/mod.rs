//! The layout rule of docs/decisions.md ("Where code goes"), held for the whole workspace, every crate and the
//! client packages, as a habit rather than a review comment:
//!
//! - no module import cycle in any crate (through `use crate::…`, `use super::…`, `self::…` and fully
//!   qualified `crate::…` paths in code, re-exports followed to the module that defines the name);
//! - no glob import (`use …::*`) outside tests;
//! - no source file outside tests over [`MAX_FILE_LINES`] lines;
//! - no function over [`MAX_FN_LINES`] lines, but for the static tables named in [`LONG_TABLES`].
//!
//! It reads the sources as text (comments, strings and `#[cfg(test)] mod … { … }` blocks left out), so it
//! needs no parser crate and runs in milliseconds.

mod graph;
mod text;

use graph::{cycles, imports};
use std::path::{Path, PathBuf};
use text::{code_only, long_functions, without_test_modules};

const MAX_FILE_LINES: usize = 600;
const MAX_FN_LINES: usize = 100;

/// Functions allowed past [`MAX_FN_LINES`]: static tables, one entry a line, that read best whole.
/// (`file`, `function`).
const LONG_TABLES: &[(&str, &str)] = &[];

/// Glob imports allowed, each with why: (`file`, why).
const GLOBS: &[(&str, &str)] = &[(
    "crates/chatctx-core/src/wire.rs",
    "the shim mirrors schemars' namespace for the JSON Schema derive, which names whatever it needs from it",
)];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Source files below `dir` with one of `exts`, leaving out tests, fixtures, build output and packages.
pub(super) fn sources(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for p in entries {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !matches!(
                name,
                "tests" | "target" | "node_modules" | "data" | ".venv" | "__pycache__" | "dist" | "build"
            ) {
                sources(&p, exts, out);
            }
        } else if exts.iter().any(|e| name.ends_with(&format!(".{e}"))) && !name.starts_with("test_") {
            out.push(p);
        }
    }
}

fn crates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(workspace().join("crates"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    out.sort();
    out
}

#[test]
fn no_crate_has_an_import_cycle() {
    let mut found = Vec::new();
    for c in crates() {
        for cycle in cycles(&c.join("src")) {
            found.push(format!("{}: {}", c.file_name().unwrap().to_string_lossy(), cycle.join(" -> ")));
        }
    }
    assert!(found.is_empty(), "module import cycles (docs/decisions.md, \"Where code goes\"):\n{}", found.join("\n"));
}

#[test]
fn no_glob_imports_outside_tests() {
    let mut found = Vec::new();
    for c in crates() {
        let mut files = Vec::new();
        sources(&c.join("src"), &["rs"], &mut files);
        for f in files {
            let code = without_test_modules(&code_only(&std::fs::read_to_string(&f).unwrap()));
            for (n, l) in code.lines().enumerate() {
                let t = l.trim();
                let rel = f.strip_prefix(workspace()).unwrap().display().to_string();
                if (t.starts_with("use ") || t.starts_with("pub use ") || t.starts_with("pub(crate) use "))
                    && t.contains("::*")
                    && !GLOBS.iter().any(|(file, _)| *file == rel)
                {
                    found.push(format!("{}:{}: {t}", f.strip_prefix(workspace()).unwrap().display(), n + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "glob imports:\n{}", found.join("\n"));
}

/// Source files of the workspace and the client packages, outside tests.
fn all_sources() -> Vec<PathBuf> {
    let root = workspace();
    let mut files = Vec::new();
    sources(&root.join("crates"), &["rs", "js", "py", "ts"], &mut files);
    sources(&root.join("clients"), &["rs", "js", "py", "ts"], &mut files);
    files
}

/// `files` over `max` lines, each as `path (n lines)`. A generated file (its first lines say "Do not edit", as
/// the client packages' types generated from the server's OpenAPI document do) is the generator's size, not a seam.
fn over_lines(files: Vec<PathBuf>, max: usize) -> Vec<String> {
    let root = workspace();
    files
        .into_iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(&f).unwrap();
            if text.lines().take(3).any(|l| l.contains("Do not edit")) {
                return None;
            }
            let n = text.lines().count();
            (n > max).then(|| format!("{} ({n} lines)", f.strip_prefix(&root).unwrap().display()))
        })
        .collect()
}

#[test]
fn no_source_file_is_over_600_lines() {
    let over = over_lines(all_sources(), MAX_FILE_LINES);
    assert!(over.is_empty(), "files over {MAX_FILE_LINES} lines, each a seam to split:\n{}", over.join("\n"));
}

/// The HTTP layer's files stay small: one resource each (docs/decisions.md, "Where code goes").
#[test]
fn no_file_of_the_http_layer_is_over_400_lines() {
    let root = workspace();
    let mut files = Vec::new();
    sources(&root.join("crates/chatctx/src/http"), &["rs"], &mut files);
    assert!(files.len() > 10, "the http layer is where it should be");
    let over = over_lines(files, 400);
    assert!(over.is_empty(), "files of http/ over 400 lines:\n{}", over.join("\n"));
}

#[test]
fn no_function_is_over_100_lines() {
    let root = workspace();
    let mut found = Vec::new();
    for c in crates() {
        let mut files = Vec::new();
        for dir in ["src", "benches", "examples"] {
            sources(&c.join(dir), &["rs"], &mut files);
        }
        for f in files {
            let rel = f.strip_prefix(&root).unwrap().display().to_string();
            let code = without_test_modules(&code_only(&std::fs::read_to_string(&f).unwrap()));
            for (name, line, len) in long_functions(&code) {
                if !LONG_TABLES.contains(&(rel.as_str(), name.as_str())) {
                    found.push(format!("{rel}:{line}: fn {name} is {len} lines"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "functions over {MAX_FN_LINES} lines (a static table goes in LONG_TABLES):\n{}",
        found.join("\n")
    );
}

/// `impl Engine` blocks live only in `engine/` and `tools/`: a capability that answers from the state is a tool
/// (or a part of the engine), never an `impl` added in a data module.
#[test]
fn engine_impls_live_in_engine_and_tools() {
    let src = workspace().join("crates/chatctx-core/src");
    let mut files = Vec::new();
    sources(&src, &["rs"], &mut files);
    let mut found = Vec::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if rel.starts_with("engine/") || rel.starts_with("tools/") {
            continue;
        }
        let code = without_test_modules(&code_only(&std::fs::read_to_string(&f).unwrap()));
        for (n, l) in code.lines().enumerate() {
            let t = l.trim_start();
            if t.starts_with("impl Engine")
                || t.starts_with("impl crate::engine::Engine")
                || t.starts_with("impl crate::Engine")
            {
                found.push(format!("{rel}:{}", n + 1));
            }
        }
    }
    assert!(found.is_empty(), "impl Engine outside engine/ and tools/: {found:?}");
}

/// The core's data modules import nothing above them: no data module names the engine, a tool, selection or the
/// transfer of documents (docs/decisions.md, "Where code goes").
#[test]
fn the_cores_data_modules_import_nothing_above_them() {
    let (_, imports) = imports(&workspace().join("crates/chatctx-core/src"));
    let data = ["chat", "decision", "event", "history", "kinds", "objects", "people", "render", "scenario", "summary"];
    let above = ["engine", "tools", "selection", "transfer"];
    let top = |m: &str| m.split("::").next().unwrap_or("").to_owned();
    let found: Vec<String> = imports
        .into_iter()
        .filter(|(m, target)| data.contains(&top(m).as_str()) && above.contains(&top(target).as_str()))
        .map(|(m, target)| format!("{m} -> {target}"))
        .collect();
    assert!(found.is_empty(), "data modules importing what uses them: {found:?}");
}

/// The checker itself: a cycle through a re-export and a qualified path is found, a parent's re-export of
/// its child is not a cycle, comments and strings do not count.
#[test]
fn the_checker_sees_what_it_should() {
    let dir = std::env::temp_dir().join(format!("chatctx-layout-{}", std::process::id()));
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("b")).unwrap();
    std::fs::write(src.join("lib.rs"), "mod a;\nmod b;\npub use a::A;\n").unwrap();
    std::fs::write(src.join("a.rs"), "pub struct A;\nfn f() -> crate::b::c::C { todo!() }\n// use crate::b::B;\n")
        .unwrap();
    std::fs::write(src.join("b/mod.rs"), "mod c;\npub use c::C;\nconst S: &str = \"crate::a::A\";\n").unwrap();
    std::fs::write(src.join("b/c.rs"), "use crate::A;\npub struct C;\n").unwrap();
    assert_eq!(cycles(&src), vec![vec!["a.rs".to_owned(), "b/c.rs".to_owned()]]);
    std::fs::write(src.join("b/c.rs"), "use super::super::b::C as D;\npub struct C;\n").unwrap();
    assert!(cycles(&src).is_empty(), "{:?}", cycles(&src));
    std::fs::remove_dir_all(&dir).unwrap();
    let long = format!("fn big() {{\n{}}}\nfn small() {{ let s = \"}}\"; }}\n", "    x();\n".repeat(100));
    assert_eq!(long_functions(&code_only(&long)), vec![("big".to_owned(), 1, 102)]);
}
