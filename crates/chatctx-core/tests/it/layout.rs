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

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
fn sources(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
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

/// The text with comments and string and char literals blanked (lines kept), so braces and paths in them
/// do not count.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    while i < c.len() {
        let at = |i: usize, k: usize| c.get(i + k).copied().unwrap_or('\0');
        if c[i] == '/' && at(i, 1) == '/' {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && at(i, 1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && at(i, 1) == '*' {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && at(i, 1) == '/' {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (at(i, 1) == '"' || (at(i, 1) == '#' && (at(i, 2) == '"' || at(i, 2) == '#')))
            && !(i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // A raw string: r"…", r#"…"#, …
            let mut hashes = 0;
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            out.push_str(&" ".repeat(j - i + 1));
            j += 1;
            while j < c.len() {
                if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                    out.push_str(&" ".repeat(hashes + 1));
                    j += hashes + 1;
                    break;
                }
                out.push(blank(c[j]));
                j += 1;
            }
            i = j;
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && (at(i, 1) == '\\' || (at(i, 2) == '\'' && at(i, 1) != '\'')) {
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// `code` without its `#[cfg(test)] mod … { … }` blocks (lines kept, blanked).
fn without_test_modules(code: &str) -> String {
    let mut lines: Vec<String> = code.lines().map(str::to_owned).collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim() == "#[cfg(test)]" {
            let mut j = i + 1;
            while j < lines.len() && lines[j].trim_start().starts_with("#[") {
                j += 1;
            }
            let head = lines.get(j).map(|l| l.trim_start().to_owned()).unwrap_or_default();
            if (head.starts_with("mod ") || head.starts_with("pub mod ") || head.starts_with("pub(crate) mod "))
                && head.trim_end().ends_with('{')
            {
                let end = block_end(&lines, j);
                for l in &mut lines[i..=end] {
                    *l = String::new();
                }
                i = end;
            }
        }
        i += 1;
    }
    lines.join("\n")
}

/// The line on which the block opened on line `start` closes.
fn block_end(lines: &[String], start: usize) -> usize {
    let mut depth = 0i32;
    let mut opened = false;
    for (n, l) in lines.iter().enumerate().skip(start) {
        for ch in l.chars() {
            match ch {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
            if opened && depth == 0 {
                return n;
            }
        }
    }
    lines.len() - 1
}

/// A crate's modules: module path (`tools::resolve`) → file, from `src/lib.rs` (or `src/main.rs`).
fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    let mut files = Vec::new();
    sources(src, &["rs"], &mut files);
    let root = if src.join("lib.rs").exists() { "lib.rs" } else { "main.rs" };
    for f in files {
        let rel = f.strip_prefix(src).unwrap().to_string_lossy().replace('\\', "/");
        let module = match rel.as_str() {
            r if r == root => String::new(),
            "main.rs" | "lib.rs" => continue,
            r => r.trim_end_matches(".rs").trim_end_matches("/mod").replace('/', "::"),
        };
        if rel.starts_with("bin/") {
            continue;
        }
        out.insert(module, f);
    }
    out
}

/// Every path a file names through `crate::`, `super::` or `self::` (groups in `use` expanded), as segments
/// relative to the crate root, with `*` for a glob.
fn named_paths(code: &str, module: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let here: Vec<String> = if module.is_empty() { vec![] } else { module.split("::").map(str::to_owned).collect() };
    let mut i = 0;
    while i < chars.len() {
        let starts_word = i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == ':');
        if !starts_word {
            i += 1;
            continue;
        }
        let word: String = chars[i..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
        let base: Option<Vec<String>> = match word.as_str() {
            "crate" => Some(vec![]),
            "self" => Some(here.clone()),
            "super" => {
                let mut b = here.clone();
                b.pop();
                Some(b)
            }
            _ => None,
        };
        let after = i + word.len();
        match base {
            Some(mut base) if chars.get(after) == Some(&':') && chars.get(after + 1) == Some(&':') => {
                let mut j = after + 2;
                // `super::super::…`
                while chars[j..].starts_with(&['s', 'u', 'p', 'e', 'r', ':', ':']) {
                    base.pop();
                    j += 7;
                }
                j = tree(&chars, j, base, &mut out);
                i = j;
            }
            _ => i = after.max(i + 1),
        }
    }
    out
}

/// Reads a use tree at `i` (a path, a `{…}` group, or `*`), pushing each full path onto `out`.
fn tree(chars: &[char], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    let mut path = prefix;
    loop {
        skip_ws(&mut i);
        match chars.get(i) {
            Some('{') => {
                i += 1;
                loop {
                    skip_ws(&mut i);
                    if chars.get(i) == Some(&'}') {
                        return i + 1;
                    }
                    i = tree(chars, i, path.clone(), out);
                    skip_ws(&mut i);
                    // `X as Y`
                    if chars[i..].starts_with(&['a', 's', ' ']) {
                        i += 3;
                        skip_ws(&mut i);
                        while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                            i += 1;
                        }
                        skip_ws(&mut i);
                    }
                    match chars.get(i) {
                        Some(',') => i += 1,
                        Some('}') => return i + 1,
                        _ => return i,
                    }
                }
            }
            Some('*') => {
                path.push("*".into());
                out.push(path);
                return i + 1;
            }
            _ => {}
        }
        let seg: String = chars[i..].iter().take_while(|c| c.is_alphanumeric() || **c == '_').collect();
        if seg.is_empty() {
            out.push(path);
            return i;
        }
        i += seg.len();
        if seg != "self" {
            path.push(seg);
        }
        if chars.get(i) == Some(&':') && chars.get(i + 1) == Some(&':') {
            i += 2;
        } else {
            out.push(path);
            return i;
        }
    }
}

/// A module's `pub use` re-exports: the name it is known by here → the path it names (from the crate root).
fn reexports(code: &str, module: &str, known: &BTreeMap<String, PathBuf>) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    let here: Vec<String> = if module.is_empty() { vec![] } else { module.split("::").map(str::to_owned).collect() };
    for stmt in code.split(';') {
        let s = stmt.trim();
        let Some(rest) = s.strip_prefix("pub use ").or_else(|| s.strip_prefix("pub(crate) use ")) else { continue };
        let rest = rest.trim();
        let chars: Vec<char> = rest.chars().collect();
        // Relative to this module (a child module's name), or from `crate::`/`super::`/`self::`.
        let mut paths = Vec::new();
        if rest.starts_with("crate::") || rest.starts_with("super::") || rest.starts_with("self::") {
            paths = named_paths(rest, module);
        } else {
            tree(&chars, 0, here.clone(), &mut paths);
        }
        for p in paths {
            let Some(last) = p.last() else { continue };
            if last != "*" && known.contains_key(&p[..p.len() - 1].join("::")) {
                out.insert(last.clone(), p);
            }
        }
    }
    out
}

/// The module that defines what `path` names: the deepest module on the path, with re-exports followed.
fn resolve(
    path: &[String],
    known: &BTreeMap<String, PathBuf>,
    exports: &BTreeMap<String, BTreeMap<String, Vec<String>>>,
    depth: usize,
) -> Option<String> {
    let mut module = String::new();
    for (n, seg) in path.iter().enumerate() {
        let child = if module.is_empty() { seg.clone() } else { format!("{module}::{seg}") };
        if known.contains_key(&child) {
            module = child;
            continue;
        }
        if seg == "*" {
            return Some(module);
        }
        if depth < 8
            && let Some(target) = exports.get(&module).and_then(|e| e.get(seg))
        {
            let mut full = target.clone();
            full.extend(path[n + 1..].iter().cloned());
            return resolve(&full, known, exports, depth + 1);
        }
        return Some(module);
    }
    Some(module)
}

/// The import cycles of one crate, each as its files.
fn cycles(src: &Path) -> Vec<Vec<String>> {
    let known = modules(src);
    let code: BTreeMap<String, String> = known
        .iter()
        .map(|(m, f)| (m.clone(), without_test_modules(&code_only(&std::fs::read_to_string(f).unwrap()))))
        .collect();
    let exports: BTreeMap<String, BTreeMap<String, Vec<String>>> =
        code.iter().map(|(m, c)| (m.clone(), reexports(c, m, &known))).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, c) in &code {
        if m.is_empty() {
            continue; // the crate root declares and re-exports; it is not a module the others depend on
        }
        for p in named_paths(c, m) {
            if let Some(target) = resolve(&p, &known, &exports, 0)
                && target != *m
                && !target.is_empty()
            {
                edges.entry(m.clone()).or_default().insert(target);
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.into_iter().map(|m| known[&m].strip_prefix(src).unwrap().display().to_string()).collect())
        .collect()
}

/// Tarjan's strongly connected components.
fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on.insert(v);
        if let Some(next) = s.edges.get(v) {
            for w in next {
                if !s.index.contains_key(w.as_str()) {
                    visit(s, w);
                    let lw = s.low[w.as_str()];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(lw));
                } else if s.on.contains(w.as_str()) {
                    let iw = s.index[w.as_str()];
                    let lv = s.low[v];
                    s.low.insert(v, lv.min(iw));
                }
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            comp.sort();
            s.out.push(comp);
        }
    }
    let mut s = State {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Functions longer than [`MAX_FN_LINES`] in `code`: (name, first line, lines).
fn long_functions(code: &str) -> Vec<(String, usize, usize)> {
    let lines: Vec<String> = code.lines().map(str::to_owned).collect();
    let mut out = Vec::new();
    for (n, l) in lines.iter().enumerate() {
        let Some(at) = find_fn(l) else { continue };
        let name: String = l[at + 3..].chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        // The body opens at the first `{` before any `;` (a declaration without a body has none).
        let mut opened = None;
        'find: for (k, line) in lines.iter().enumerate().skip(n) {
            let from = if k == n { at } else { 0 };
            for ch in line[from..].chars() {
                match ch {
                    '{' => {
                        opened = Some(k);
                        break 'find;
                    }
                    ';' => break 'find,
                    _ => {}
                }
            }
        }
        let Some(open) = opened else { continue };
        let end = block_end(&lines, open);
        let len = end - n + 1;
        if len > MAX_FN_LINES {
            out.push((name, n + 1, len));
        }
    }
    out
}

/// Where `fn name` starts on a line, if it declares one.
fn find_fn(line: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(k) = line[from..].find("fn ") {
        let at = from + k;
        let before_ok = at == 0 || !line[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_');
        let next = line[at + 3..].chars().next().unwrap_or(' ');
        if before_ok && (next.is_alphabetic() || next == '_') {
            return Some(at);
        }
        from = at + 3;
    }
    None
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
    let src = workspace().join("crates/chatctx-core/src");
    let known = modules(&src);
    let code: BTreeMap<String, String> = known
        .iter()
        .map(|(m, f)| (m.clone(), without_test_modules(&code_only(&std::fs::read_to_string(f).unwrap()))))
        .collect();
    let exports: BTreeMap<String, BTreeMap<String, Vec<String>>> =
        code.iter().map(|(m, c)| (m.clone(), reexports(c, m, &known))).collect();
    let data = ["chat", "decision", "event", "history", "kinds", "objects", "people", "render", "scenario", "summary"];
    let above = ["engine", "tools", "selection", "transfer"];
    let mut found = Vec::new();
    for (m, c) in &code {
        let top = m.split("::").next().unwrap_or("");
        if !data.contains(&top) {
            continue;
        }
        for p in named_paths(c, m) {
            if let Some(target) = resolve(&p, &known, &exports, 0)
                && above.contains(&target.split("::").next().unwrap_or(""))
            {
                found.push(format!("{m} -> {target}"));
            }
        }
    }
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
