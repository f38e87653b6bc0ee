//! Reading sources as text: comments, literals and test modules left out; where a function starts and its
//! block ends.

use super::MAX_FN_LINES;

/// The text with comments and string and char literals blanked (lines kept), so braces and paths in them
/// do not count.
pub(super) fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
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
            i = quoted(&c, i, &mut out);
        } else if c[i] == '\'' && (at(i, 1) == '\\' || (at(i, 2) == '\'' && at(i, 1) != '\'')) {
            // A char literal ('x', '\n', '\u{..}'); a lifetime ('a) has no closing quote.
            i = quoted(&c, i, &mut out);
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A blank for `ch`: a space, or the newline itself, so that lines are kept.
fn blank(ch: char) -> char {
    if ch == '\n' { '\n' } else { ' ' }
}

/// Blanks the string or char literal whose opening quote is at `c[i]`, escapes included; where it ends.
fn quoted(c: &[char], mut i: usize, out: &mut String) -> usize {
    let quote = c[i];
    out.push(' ');
    i += 1;
    while i < c.len() && c[i] != quote {
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
    i + 1
}

/// `code` without its `#[cfg(test)] mod … { … }` blocks (lines kept, blanked).
pub(super) fn without_test_modules(code: &str) -> String {
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
pub(super) fn block_end(lines: &[String], start: usize) -> usize {
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

/// Functions longer than [`MAX_FN_LINES`] in `code`: (name, first line, lines).
pub(super) fn long_functions(code: &str) -> Vec<(String, usize, usize)> {
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
pub(super) fn find_fn(line: &str) -> Option<usize> {
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
