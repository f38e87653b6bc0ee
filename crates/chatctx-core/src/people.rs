//! People references: the one formatter behind every `display_ref`, quote sender and normalized mention.
//!
//! `nickname` = `display_name`, else `first_name` + `last_name`, else `@username` (docs/protocol.md §5.2).
//! `display_ref` = `[nickname](tg:@username)`; other channels use their own name as the scheme
//! (`[Alice](slack:@alice)`). Without a username the reference still links the person: on Telegram by
//! its own inline-mention form `tg://user?id=…`, elsewhere `channel:id/…`; with neither, the bare nickname.

use crate::event::Person;

/// The nickname of a person by the priority of docs/protocol.md §5.2.
pub fn nickname(p: &Person) -> String {
    if let Some(d) = &p.display_name {
        return d.clone();
    }
    match (&p.first_name, &p.last_name) {
        (Some(f), Some(l)) => return format!("{f} {l}"),
        (Some(n), None) | (None, Some(n)) => return n.clone(),
        (None, None) => {}
    }
    if let Some(u) = &p.username {
        return format!("@{u}");
    }
    if p.user_id.is_empty() { "unknown".to_owned() } else { format!("user {}", p.user_id) }
}

/// Writes `[label](`, escaping the brackets and backslashes of `label`: the opening of a person reference or
/// a link.
pub(crate) fn push_label(out: &mut String, label: &str) {
    out.push('[');
    for c in label.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("](");
}

/// `[nickname](tg:@username)`, the only place a reference to a person is formatted.
pub fn display_ref(channel: &str, nickname: &str, username: Option<&str>, user_id: &str) -> String {
    let mut out = String::with_capacity(nickname.len() + username.map_or(0, str::len) + 12);
    push_label(&mut out, nickname);
    let scheme = if channel == "telegram" { "tg" } else { channel };
    match username {
        Some(u) => {
            out.push_str(scheme);
            out.push_str(":@");
            out.push_str(u);
        }
        None if user_id.is_empty() => return nickname.to_owned(),
        None if scheme == "tg" => {
            out.push_str("tg://user?id=");
            out.push_str(user_id);
        }
        None => {
            out.push_str(scheme);
            out.push_str(":id/");
            out.push_str(user_id);
        }
    }
    out.push(')');
    out
}

/// The reference of `p` on `channel`.
pub fn person_ref(channel: &str, p: &Person) -> String {
    display_ref(channel, &nickname(p), p.username.as_deref(), &p.user_id)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)] // tests fail loudly on purpose
mod tests {
    use super::*;

    fn person(display: Option<&str>, first: Option<&str>, last: Option<&str>, user: Option<&str>) -> Person {
        Person {
            user_id: "42".into(),
            username: user.map(Into::into),
            display_name: display.map(Into::into),
            first_name: first.map(Into::into),
            last_name: last.map(Into::into),
            is_bot: false,
        }
    }

    #[test]
    fn nickname_priority() {
        assert_eq!(nickname(&person(Some("Alice A."), Some("Alice"), Some("A."), Some("alice"))), "Alice A.");
        assert_eq!(nickname(&person(None, Some("Alice"), Some("A."), Some("alice"))), "Alice A.");
        assert_eq!(nickname(&person(None, Some("Alice"), None, Some("alice"))), "Alice");
        assert_eq!(nickname(&person(None, None, Some("Ngọc"), None)), "Ngọc");
        assert_eq!(nickname(&person(None, None, None, Some("alice"))), "@alice");
        assert_eq!(nickname(&person(None, None, None, None)), "user 42");
    }

    #[test]
    fn references() {
        assert_eq!(person_ref("telegram", &person(None, Some("Alice"), None, Some("alice"))), "[Alice](tg:@alice)");
        assert_eq!(person_ref("slack", &person(None, Some("Alice"), None, Some("alice"))), "[Alice](slack:@alice)");
        assert_eq!(
            person_ref("telegram", &person(None, Some("Cù Kim"), Some("Ngọc"), None)),
            "[Cù Kim Ngọc](tg://user?id=42)"
        );
        assert_eq!(person_ref("talk", &person(None, Some("Bo"), None, None)), "[Bo](talk:id/42)");
        assert_eq!(display_ref("telegram", "a [b]", Some("ab"), "1"), r"[a \[b\]](tg:@ab)");
        assert_eq!(display_ref("telegram", "system", None, ""), "system");
    }
}
