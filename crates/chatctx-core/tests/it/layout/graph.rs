//! A crate's module import graph (paths named in code, re-exports followed) and its cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::sources;
use super::text::{code_only, without_test_modules};

/// A crate's modules: module path (`tools::resolve`) → file, from `src/lib.rs` (or `src/main.rs`).
pub(super) fn modules(src: &Path) -> BTreeMap<String, PathBuf> {
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
pub(super) fn named_paths(code: &str, module: &str) -> Vec<Vec<String>> {
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
pub(super) fn tree(chars: &[char], mut i: usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> usize {
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
pub(super) fn reexports(code: &str, module: &str, known: &BTreeMap<String, PathBuf>) -> BTreeMap<String, Vec<String>> {
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
pub(super) fn resolve(
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

/// Every import of one crate as (module, the module it names), paths resolved through re-exports; and the
/// crate's modules with their files.
pub(super) fn imports(src: &Path) -> (BTreeMap<String, PathBuf>, Vec<(String, String)>) {
    let known = modules(src);
    let code: BTreeMap<String, String> = known
        .iter()
        .map(|(m, f)| (m.clone(), without_test_modules(&code_only(&std::fs::read_to_string(f).unwrap()))))
        .collect();
    let exports: BTreeMap<String, BTreeMap<String, Vec<String>>> =
        code.iter().map(|(m, c)| (m.clone(), reexports(c, m, &known))).collect();
    let mut out = Vec::new();
    for (m, c) in &code {
        for p in named_paths(c, m) {
            if let Some(target) = resolve(&p, &known, &exports, 0) {
                out.push((m.clone(), target));
            }
        }
    }
    (known, out)
}

/// The import cycles of one crate, each as its files.
pub(super) fn cycles(src: &Path) -> Vec<Vec<String>> {
    let (known, imports) = imports(src);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, target) in imports {
        // The crate root declares and re-exports; it is not a module the others depend on.
        if !m.is_empty() && target != m && !target.is_empty() {
            edges.entry(m).or_default().insert(target);
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| c.into_iter().map(|m| known[&m].strip_prefix(src).unwrap().display().to_string()).collect())
        .collect()
}

/// Tarjan's strongly connected components.
pub(super) fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
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
