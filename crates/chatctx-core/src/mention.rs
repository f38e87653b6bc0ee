//! Mention normalization and link extraction over Telegram entities, whose offsets count UTF-16 code units.
//!
//! `mention` and `text_mention` spans are replaced by the person's reference (`[Bob](tg:@bob)`); everything
//! outside those spans is copied unchanged. An entity that is out of range, cuts a surrogate pair, overlaps an
//! earlier replacement, or names a user without a username leaves its text as it was and yields a warning; it
//! never fails the event.

use std::borrow::Cow;
use std::ops::Range;

use crate::event::{Entity, EntityKind, Person};
use crate::people::{display_ref, nickname};

/// The result of normalizing one text.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Normalized {
    /// The text with mentions replaced.
    pub text: String,
    /// URLs of `url` and `text_link` entities, in text order.
    pub links: Vec<String>,
    /// What could not be normalized, for the log. Never contains the message text.
    pub warnings: Vec<String>,
    /// Mentions of people `known` did not know, each by `@username` (lowercased) or `#user_id`, with the
    /// reference the text now holds: a name learned later replaces it.
    pub unknown: Vec<(String, String)>,
}

/// Byte ranges in `text` for each entity, in entity order; `None` where the UTF-16 span is out of range or
/// does not fall on character boundaries. One pass over the text whatever the number of entities.
pub fn byte_spans(text: &str, entities: &[Entity]) -> Vec<Option<Range<usize>>> {
    // In ASCII text a UTF-16 offset is a byte offset.
    if text.is_ascii() {
        let fits = |e: &Entity| u64::from(e.offset) + u64::from(e.length) <= text.len() as u64;
        return entities.iter().map(|e| fits(e).then(|| e.offset as usize..(e.offset + e.length) as usize)).collect();
    }
    utf16_spans(text, entities)
}

/// [`byte_spans`] by walking the text's characters.
fn utf16_spans(text: &str, entities: &[Entity]) -> Vec<Option<Range<usize>>> {
    // Every boundary we need, as (utf16 position, entity index, is_end).
    let mut wanted: Vec<(u64, usize, bool)> = Vec::with_capacity(entities.len() * 2);
    for (i, e) in entities.iter().enumerate() {
        let start = u64::from(e.offset);
        wanted.push((start, i, false));
        wanted.push((start + u64::from(e.length), i, true));
    }
    wanted.sort_unstable();
    let mut starts: Vec<Option<usize>> = vec![None; entities.len()];
    let mut ends: Vec<Option<usize>> = vec![None; entities.len()];
    let mut next = 0;
    let mut pos16: u64 = 0;
    // Boundaries below the current position fell strictly inside a character (between the halves of a
    // surrogate pair) and stay None.
    let mut record = |next: &mut usize, pos16: u64, byte: usize| {
        while let Some(&(p, i, end)) = wanted.get(*next) {
            if p > pos16 {
                break;
            }
            if p == pos16 {
                if end { ends[i] = Some(byte) } else { starts[i] = Some(byte) }
            }
            *next += 1;
        }
    };
    for (byte, c) in text.char_indices() {
        record(&mut next, pos16, byte);
        if next == wanted.len() {
            break; // every boundary is found: the rest of the text does not matter (mentions come first)
        }
        pos16 += c.len_utf16() as u64;
    }
    record(&mut next, pos16, text.len());
    starts
        .into_iter()
        .zip(ends)
        .map(|(s, e)| match (s, e) {
            (Some(s), Some(e)) if s <= e => Some(s..e),
            _ => None,
        })
        .collect()
}

/// Normalizes `text` by its entities. `scheme_channel` picks the reference scheme; `known` returns the
/// nickname of a chat member by username (case-insensitive), for `mention` entities.
pub fn normalize(text: &str, entities: &[Entity], scheme_channel: &str, known: Known<'_>) -> Normalized {
    let mut out = Normalized::default();
    if entities.is_empty() {
        out.text = text.to_owned();
        return out;
    }
    let spans = byte_spans(text, entities);
    let mut order: Vec<usize> = (0..entities.len()).collect();
    order.sort_by_key(|&i| (entities[i].offset, i));
    let mut replacements: Vec<(Range<usize>, String)> = Vec::new();
    for i in order {
        let e = &entities[i];
        let span = spans[i].clone();
        match &e.kind {
            EntityKind::Url => match span {
                Some(r) => out.links.push(text[r].to_owned()),
                None => {
                    out.warnings.push(format!("url entity at {} does not fit the text; link not recorded", e.offset))
                }
            },
            EntityKind::TextLink => match &e.url {
                Some(u) if !u.is_empty() => {
                    out.links.push(u.clone());
                    // The link's text alone hides where it points: the prompt gets `[the docs](https://…)`.
                    if let Some(r) = span.filter(|r| !r.is_empty())
                        && replacements.last().is_none_or(|(prev, _)| prev.end <= r.start)
                    {
                        replacements.push((r.clone(), link_ref(&text[r], u)));
                    }
                }
                _ => out.warnings.push(format!("text_link entity at {} carries no url", e.offset)),
            },
            EntityKind::Mention | EntityKind::TextMention => {
                let Some(r) = span else {
                    out.warnings.push(format!(
                        "{} entity at offset {} length {} does not fall on character boundaries; text left as is",
                        if e.kind == EntityKind::Mention { "mention" } else { "text_mention" },
                        e.offset,
                        e.length
                    ));
                    continue;
                };
                if replacements.last().is_some_and(|(prev, _)| prev.end > r.start) {
                    out.warnings.push(format!("mention entity at {} overlaps another; text left as is", e.offset));
                    continue;
                }
                match mention_ref(&text[r.clone()], e, scheme_channel, known) {
                    Ok((rep, unknown)) => {
                        out.unknown.extend(unknown.map(|key| (key, rep.clone())));
                        replacements.push((r, rep));
                    }
                    Err(w) => out.warnings.push(w),
                }
            }
            EntityKind::Other(_) => {}
        }
    }
    out.text = splice(text, &replacements);
    out
}

/// Who a chat knows by username (any case), or by a one-word nickname: so that every reference to one person
/// is the same (`@ALICE` typed → `[Alice](tg:@alice)`). `#ID` asks by user id (a username never holds `#`).
pub type Known<'a> = &'a dyn Fn(&str) -> Option<KnownPerson<'a>>;

/// A person a chat knows, as a reference to them needs: borrowed from where they are known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownPerson<'a> {
    /// Their current nickname.
    pub nickname: Cow<'a, str>,
    /// Their username as the platform spells it, if they have one.
    pub username: Option<&'a str>,
    /// Their user id.
    pub user_id: &'a str,
    /// Their reference as the chat already shows it on its channel, when the chat holds it (then it is not
    /// made again).
    pub shown: Option<&'a str>,
}

impl KnownPerson<'_> {
    fn reference(&self, channel: &str) -> String {
        debug_assert!(
            self.shown.is_none_or(|r| r == display_ref(channel, &self.nickname, self.username, self.user_id)),
            "a chat shows {:?} as it would make the reference",
            self.shown
        );
        match self.shown {
            Some(r) => r.to_owned(),
            None => display_ref(channel, &self.nickname, self.username, self.user_id),
        }
    }
}

/// `[label](url)`, the label escaped as in person references.
fn link_ref(label: &str, url: &str) -> String {
    let mut out = String::with_capacity(label.len() + url.len() + 4);
    crate::people::push_label(&mut out, label);
    out.push_str(url);
    out.push(')');
    out
}

/// The reference for a mention entity, and the key it is tracked by when the person is not known.
fn mention_ref(span: &str, e: &Entity, channel: &str, known: Known<'_>) -> Result<(String, Option<String>), String> {
    match e.kind {
        EntityKind::Mention => {
            let username = span.strip_prefix('@').filter(|u| is_username(u)).ok_or_else(|| {
                format!("mention entity at {} does not cover an @username; text left as is", e.offset)
            })?;
            Ok(match known(username) {
                Some(k) => (k.reference(channel), None),
                None => (
                    display_ref(channel, &format!("@{username}"), Some(username), ""),
                    Some(format!("@{}", username.to_lowercase())),
                ),
            })
        }
        _ => {
            let user: &Person = e
                .user
                .as_ref()
                .ok_or_else(|| format!("text_mention entity at {} carries no user; text left as is", e.offset))?;
            // No names (a Discord mention of someone the message does not describe, or of a user without a
            // display name): the person as the chat or the directory knows them, unless the username says it is
            // another look now; else tracked, so that a name learned later replaces the reference.
            let nameless = !crate::directory::has_name(user) && !user.user_id.is_empty();
            if nameless {
                let same = |k: &KnownPerson<'_>| user.username.is_none() || k.username == user.username.as_deref();
                if let Some(k) = known(&format!("#{}", user.user_id)).filter(same) {
                    return Ok((k.reference(channel), None));
                }
            }
            let Some(username) = user.username.as_deref() else {
                if nameless {
                    let shown = display_ref(channel, &nickname(user), None, &user.user_id);
                    return Ok((shown, Some(format!("#{}", user.user_id))));
                }
                return Err(format!("text_mention of user {} without a username; text left as is", user.user_id));
            };
            let tracked = nameless.then(|| format!("@{}", username.to_lowercase()));
            Ok((display_ref(channel, &nickname(user), Some(username), &user.user_id), tracked))
        }
    }
}

fn is_username(u: &str) -> bool {
    !u.is_empty() && u.len() <= 64 && u.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

fn splice(text: &str, replacements: &[(Range<usize>, String)]) -> String {
    if replacements.is_empty() {
        return text.to_owned();
    }
    let extra: usize = replacements.iter().map(|(_, s)| s.len()).sum();
    let mut out = String::with_capacity(text.len() + extra);
    let mut at = 0;
    for (r, rep) in replacements {
        out.push_str(&text[at..r.start]);
        out.push_str(rep);
        at = r.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The longest name typed at the start of a line to address someone (`alice: …`), in bytes.
const MAX_TYPED_NAME: usize = 64;

/// Where a leading `name:` / `name,` ends (the name's byte length): a word without spaces, then `:` or `,`,
/// then a space or the end (so `http://…` and `10:30` do not count).
fn leading_name(text: &str) -> Option<usize> {
    // Only the first bytes can hold it; `:` and `,` are ASCII, so the position is a character boundary. A name
    // holds no whitespace, so the scan stops at the first ASCII space (most messages end it within a word).
    let end = text.bytes().take(MAX_TYPED_NAME + 1).position(|b| b == b':' || b == b',' || b.is_ascii_whitespace())?;
    if !matches!(text.as_bytes()[end], b':' | b',') {
        return None;
    }
    let name = &text[..end];
    let after = text[end + 1..].chars().next();
    (end > 0 && end <= MAX_TYPED_NAME && !name.contains(char::is_whitespace) && after.is_none_or(char::is_whitespace))
        .then_some(end)
}

/// The leading `name:` / `name,` of `text` that names a known person, and its replacement.
fn leading_address(text: &str, channel: &str, known: Known<'_>) -> Option<(Range<usize>, String)> {
    let end = leading_name(text)?;
    let k = known(text[..end].trim_start_matches('@'))?;
    Some((0..end, k.reference(channel)))
}

/// [`normalize_plain`]'s leading `name:` alone, for text whose entities mention nobody (a link, say).
pub fn address_leading(text: String, channel: &str, known: Known<'_>) -> String {
    match leading_address(&text, channel, known) {
        Some(r) => splice(&text, &[r]),
        None => text,
    }
}

/// For text without mention entities (IRC-style logs, plain events, a name typed on any platform): a leading
/// `name:` / `name,` that names a known participant (by username or one-word nickname, any case) addresses
/// them, and a plain `@username` token of a known person mentions them; both become the person's reference.
/// An `@` token counts only at the start or after a character that cannot be part of a username or an address
/// (so `bob@example.org` is left alone).
pub fn normalize_plain(text: &str, channel: &str, known: Known<'_>) -> String {
    let mut replacements: Vec<(Range<usize>, String)> = leading_address(text, channel, known).into_iter().collect();
    if !text.contains('@') {
        return splice(text, &replacements);
    }
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(rel) = text.get(i..).and_then(|s| s.find('@')) {
        let at = i + rel;
        let start = at + 1;
        let end = start + bytes[start..].iter().take_while(|b| b.is_ascii_alphanumeric() || **b == b'_').count();
        let before_ok =
            // Not inside an address (`bob@example.org`) or a reference already made (`[Bob](tg:@bob)`).
            at == 0 || !text[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | ':'));
        let after_ok = !text[end..].chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '@');
        if before_ok && after_ok && end > start {
            let username = &text[start..end];
            if let Some(k) = known(username)
                && replacements.last().is_none_or(|(prev, _): &(Range<usize>, String)| prev.end <= at)
            {
                replacements.push((at..end, k.reference(channel)));
            }
        }
        i = end.max(at + 1);
    }
    splice(text, &replacements)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// In ASCII text the spans are the offsets themselves, as walking the characters finds them.
    #[test]
    fn ascii_spans_are_the_walked_spans() {
        proptest::proptest!(|(text in "[ -~]{0,40}", ents in proptest::collection::vec((0u32..50, 0u32..50), 0..6))| {
            let entities: Vec<Entity> = ents.iter().map(|&(o, l)| ent(EntityKind::Mention, o, l)).collect();
            proptest::prop_assert_eq!(byte_spans(&text, &entities), utf16_spans(&text, &entities));
        });
    }

    /// The early stop at a space finds what the plain definition finds: the first `:` or `,` within the first
    /// bytes, ending a name without whitespace and followed by whitespace or the end.
    #[test]
    fn a_leading_name_is_the_plain_definition() {
        let plain = |text: &str| {
            let end = text.bytes().take(MAX_TYPED_NAME + 1).position(|b| b == b':' || b == b',')?;
            let name = &text[..end];
            let after = text[end + 1..].chars().next();
            (end > 0
                && end <= MAX_TYPED_NAME
                && !name.contains(char::is_whitespace)
                && after.is_none_or(char::is_whitespace))
            .then_some(end)
        };
        proptest::proptest!(|(text in "[a-z@_:, \t\n\u{a0}\u{b}é]{0,80}")| {
            proptest::prop_assert_eq!(leading_name(&text), plain(&text));
        });
    }

    fn ent(kind: EntityKind, offset: u32, length: u32) -> Entity {
        Entity { kind, offset, length, user: None, url: None }
    }

    fn known(u: &str) -> Option<KnownPerson<'static>> {
        let person = |nick: &'static str, username: Option<&'static str>, id: &'static str| KnownPerson {
            nickname: nick.into(),
            username,
            user_id: id,
            shown: None,
        };
        match u.to_lowercase().as_str() {
            "bob" => Some(person("Bob", Some("bob"), "2")),
            "carol" => Some(person("Carol C.", Some("carol"), "3")),
            "matt|" => Some(person("Matt|", Some("Matt|"), "Matt|")),
            "zoë" => Some(person("Zoë", None, "9")),
            _ => None,
        }
    }

    fn norm(text: &str, entities: &[Entity]) -> Normalized {
        normalize(text, entities, "telegram", &known)
    }

    fn u16len(s: &str) -> u32 {
        s.encode_utf16().count() as u32
    }

    #[test]
    fn replaces_mentions_by_entity() {
        let n = norm("Please review @bob's update.", &[ent(EntityKind::Mention, 14, 4)]);
        assert_eq!(n.text, "Please review [Bob](tg:@bob)'s update.");
        assert!(n.warnings.is_empty());
        let n = norm("@stranger hi", &[ent(EntityKind::Mention, 0, 9)]);
        assert_eq!(n.text, "[@stranger](tg:@stranger) hi");
    }

    #[test]
    fn utf16_offsets_after_astral_emoji_zwj_and_skin_tones() {
        for prefix in ["😀 ", "👨‍👩‍👧‍👦 ", "👍🏽👍🏿 ", "🇺🇦 ", "ñ é 日本 ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 "]
        {
            let text = format!("{prefix}@bob and @carol!");
            let off = u16len(prefix);
            let entities = [ent(EntityKind::Mention, off, 4), ent(EntityKind::Mention, off + 9, 6)];
            let n = norm(&text, &entities);
            assert_eq!(n.text, format!("{prefix}[Bob](tg:@bob) and [Carol C.](tg:@carol)!"), "prefix {prefix:?}");
            assert!(n.warnings.is_empty(), "{:?}", n.warnings);
        }
    }

    #[test]
    fn text_mention_with_and_without_username() {
        let mut e = ent(EntityKind::TextMention, 0, 13);
        e.user = Some(Person {
            user_id: "6993779075".into(),
            first_name: Some("Cù Kim".into()),
            last_name: Some("Ngọc".into()),
            ..Person::default()
        });
        let n = norm("F Ngoc Cu Kim https://x.org", std::slice::from_ref(&e));
        assert_eq!(n.text, "F Ngoc Cu Kim https://x.org", "left as is");
        assert_eq!(n.warnings.len(), 1);
        e.user.as_mut().unwrap().username = Some("ngoc".into());
        let n = norm("F Ngoc Cu Kim https://x.org", &[e]);
        assert_eq!(n.text, "[Cù Kim Ngọc](tg:@ngoc) https://x.org");
    }

    #[test]
    fn bad_offsets_leave_text_and_warn() {
        // Offset 1 falls between the two halves of 😀's surrogate pair.
        let n = norm("😀@bob", &[ent(EntityKind::Mention, 1, 5)]);
        assert_eq!(n.text, "😀@bob");
        assert_eq!(n.warnings.len(), 1);
        let n = norm("hi @bob", &[ent(EntityKind::Mention, 3, 40)]);
        assert_eq!(n.text, "hi @bob");
        assert_eq!(n.warnings.len(), 1);
        let n = norm("hi bob", &[ent(EntityKind::Mention, 3, 3)]);
        assert_eq!(n.text, "hi bob", "a mention span without @ is left alone");
        let n = norm("@bob @carol", &[ent(EntityKind::Mention, 0, 11), ent(EntityKind::Mention, 5, 6)]);
        assert_eq!(
            n.text, "@bob [Carol C.](tg:@carol)",
            "a span that is not one username is left; the inner one is fine"
        );
        assert_eq!(n.warnings.len(), 1);
        let n = norm("@bob @carol", &[ent(EntityKind::Mention, 0, 4), ent(EntityKind::Mention, 2, 6)]);
        assert_eq!(n.text, "[Bob](tg:@bob) @carol", "an overlapping span is left");
        assert_eq!(n.warnings.len(), 1);
    }

    #[test]
    fn links_in_text_order() {
        let text = "see https://a.org and this and 😀 www.b.com";
        let mut tl = ent(EntityKind::TextLink, 22, 4);
        tl.url = Some("https://c.org/x".into());
        let n = norm(text, &[ent(EntityKind::Url, 34, 9), tl, ent(EntityKind::Url, 4, 13)]);
        assert_eq!(n.links, ["https://a.org", "https://c.org/x", "www.b.com"]);
    }

    #[test]
    fn plain_tokens_on_other_channels() {
        assert_eq!(normalize_plain("ask @bob, not @zed", "talk", &known), "ask [Bob](talk:@bob), not @zed");
        assert_eq!(normalize_plain("mail bob@bob.org", "email", &known), "mail bob@bob.org");
        assert_eq!(normalize_plain("@carol", "slack", &known), "[Carol C.](slack:@carol)");
        assert_eq!(normalize_plain("@@bob", "slack", &known), "@[Bob](slack:@bob)");
        let made = "[Ann](tg:@ann) pinned [Bob](tg:@bob)'s message";
        assert_eq!(normalize_plain(made, "telegram", &known), made, "references already made stay");
    }

    #[test]
    fn a_leading_name_addresses_a_known_person() {
        assert_eq!(normalize_plain("Bob: look at this", "irc", &known), "[Bob](irc:@bob): look at this");
        assert_eq!(normalize_plain("matt|, command prompt", "irc", &known), "[Matt|](irc:@Matt|), command prompt");
        assert_eq!(normalize_plain("@carol, see @bob", "irc", &known), "[Carol C.](irc:@carol), see [Bob](irc:@bob)");
        assert_eq!(normalize_plain("zoë: hi", "telegram", &known), "[Zoë](tg://user?id=9): hi", "by nickname");
        for same in ["zed: who?", "Note: bob is away", "bob:no space", "http://bob", "10:30, bob", "bob and carol: hi"]
        {
            assert_eq!(normalize_plain(same, "irc", &known), same, "{same}");
        }
    }

    fn arb_entity() -> impl Strategy<Value = Entity> {
        (0u32..4, 0u32..80, 0u32..20, proptest::option::of("[a-z]{0,6}")).prop_map(|(k, offset, length, uname)| {
            let kind = match k {
                0 => EntityKind::Mention,
                1 => EntityKind::TextMention,
                2 => EntityKind::Url,
                _ => EntityKind::Other("bold".into()),
            };
            let user = (kind == EntityKind::TextMention).then(|| Person {
                user_id: "7".into(),
                username: uname.filter(|u| !u.is_empty()),
                ..Person::default()
            });
            Entity { kind, offset, length, user, url: None }
        })
    }

    proptest! {
        #[test]
        fn never_panics_and_keeps_text_outside_spans(
            text in "(\\PC|😀|👨‍👩‍👧|@bob|@carol| ){0,40}",
            entities in proptest::collection::vec(arb_entity(), 0..6),
        ) {
            let n = norm(&text, &entities);
            let spans = byte_spans(&text, &entities);
            // Every byte of the input that no mention span covers appears, in order, in the output.
            let mut covered = vec![false; text.len()];
            for (e, s) in entities.iter().zip(&spans) {
                if matches!(e.kind, EntityKind::Mention | EntityKind::TextMention)
                    && let Some(r) = s { for b in &mut covered[r.clone()] { *b = true; } }
            }
            let outside: Vec<u8> = text.bytes().zip(&covered).filter(|(_, c)| !**c).map(|(b, _)| b).collect();
            let mut it = n.text.bytes();
            for b in &outside {
                prop_assert!(it.any(|x| x == *b), "lost byte {b} of {text:?} -> {:?}", n.text);
            }
            // Without mention entities the text is untouched.
            if !entities.iter().any(|e| matches!(e.kind, EntityKind::Mention | EntityKind::TextMention)) {
                prop_assert_eq!(&n.text, &text);
            }
        }

        /// Each entity's span, several at once in any order (the walk stops once every boundary is found).
        #[test]
        fn spans_agree_with_a_utf16_reference(
            text in "\\PC{0,30}",
            ents in proptest::collection::vec((0u32..40, 0u32..40), 1..4),
        ) {
            let entities: Vec<Entity> = ents.iter().map(|&(o, l)| ent(EntityKind::Mention, o, l)).collect();
            let spans = byte_spans(&text, &entities);
            let units: Vec<u16> = text.encode_utf16().collect();
            for (i, &(offset, length)) in ents.iter().enumerate() {
                let (s, e) = (offset as usize, (offset + length) as usize);
                let expected = if e <= units.len() {
                    match (String::from_utf16(&units[..s]), String::from_utf16(&units[..e])) {
                        (Ok(a), Ok(b)) => Some(a.len()..b.len()),
                        _ => None,
                    }
                } else { None };
                prop_assert_eq!(&spans[i], &expected, "entity {} of {:?}", i, ents);
            }
        }
    }
}
