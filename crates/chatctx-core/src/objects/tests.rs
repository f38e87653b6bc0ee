//! Tests of the object registry.
#![allow(clippy::disallowed_methods)] // tests fail loudly on purpose

use super::{
    Activation, Liveness, MAX_LABEL_BYTES, MAX_LABEL_CHARS, Object, ObjectKind, ObjectSettings, Objects, Timestamp,
    is_derived, short_label,
};
use crate::time::Span;

fn obj(id: &str, kind: ObjectKind, topic: Option<&str>, at: i64) -> Object {
    let t = Timestamp::from_unix(at).unwrap_or_default();
    Object {
        object_id: id.into(),
        kind,
        source_message_id: id.split(':').next().map(Into::into),
        topic_id: topic.map(Into::into),
        title_or_label: None,
        created_by_user_id: None,
        created_by_bot: false,
        created_at: t,
        last_touched_at: t,
        activation: None,
        activated_at: None,
        closed_at: None,
        external_id: None,
        activated_by: None,
        file: None,
        caption: None,
        author: None,
    }
}

fn ts(s: i64) -> Timestamp {
    Timestamp::from_unix(s).unwrap_or_default()
}

#[test]
fn derived_ids_need_the_separator() {
    assert!(is_derived("5:media.image", "5"));
    assert!(is_derived("5:link:0", "5"));
    assert!(!is_derived("50:poll", "5"));
    assert!(!is_derived("5x", "5"));
    assert!(!is_derived("rem-1", "5"));
}

#[test]
fn labels_are_cut_at_80_characters_and_120_bytes() {
    assert_eq!(short_label("  short  "), "short");
    let exact: String = "e".repeat(80);
    assert_eq!(short_label(&exact), exact);
    let long: String = "x".repeat(81);
    let cut = short_label(&long);
    assert_eq!(cut.chars().count(), 80);
    assert!(cut.ends_with('…'));
    let cjk: String = "日".repeat(60);
    let cut = short_label(&cjk);
    assert!(cut.len() <= MAX_LABEL_BYTES && cut.ends_with('…'), "{} bytes", cut.len());
}

/// The definition `short_label` had before it stopped reading at the limits.
fn short_label_by_counting(s: &str) -> String {
    let s = s.trim();
    let mut end = 0;
    for (n, (i, c)) in s.char_indices().enumerate() {
        if n >= MAX_LABEL_CHARS - 1 || i + c.len_utf8() > MAX_LABEL_BYTES - '…'.len_utf8() {
            break;
        }
        end = i + c.len_utf8();
    }
    if end == s.len() || (s.chars().count() <= MAX_LABEL_CHARS && s.len() <= MAX_LABEL_BYTES) {
        return s.to_owned();
    }
    format!("{}…", &s[..end])
}

/// Texts around both limits: 0–130 characters, from all ASCII to mostly multi-byte (so that 80 characters can
/// be more or fewer than 120 bytes), with spaces to trim; a quarter start with 60–100 ASCII characters, the
/// common case that is cut without walking the characters.
fn labels() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::{Just, Strategy, prop_oneof};
    let mixed = (1u32..=20).prop_flat_map(|wide| {
        let ch = proptest::strategy::Union::new_weighted(vec![
            (40 - wide, "[a-z ]".boxed()),
            (wide, prop_oneof![Just("é".to_owned()), Just("日".to_owned()), Just("😀".to_owned())].boxed()),
        ]);
        proptest::collection::vec(ch, 0..=130).prop_map(|cs| cs.concat())
    });
    let ascii_head = ("[a-z ]{60,100}", "[a-zé日]{0,40}").prop_map(|(head, tail)| head + &tail);
    prop_oneof![3 => mixed, 1 => ascii_head]
}

proptest::proptest! {
    #[test]
    fn a_label_is_cut_as_counting_every_character_would(s in labels()) {
        proptest::prop_assert_eq!(short_label(&s), short_label_by_counting(&s));
        // The shared forms give the same label.
        proptest::prop_assert_eq!(&*super::short_label_arc(&s), short_label(&s));
        proptest::prop_assert_eq!(&*super::short_label_shared(&s.as_str().into()), short_label(&s));
    }
}

#[test]
fn liveness_slides_from_the_last_activation_and_closing_has_a_grace() {
    let s = ObjectSettings::default();
    let mut o = obj("1:poll", ObjectKind::Poll, None, 0);
    assert_eq!(o.liveness(ts(10), &s), Liveness::Known, "known, not active");
    assert_eq!(o.liveness(ts(86_400), &s), Liveness::Expired);
    o.activated_at = Some(ts(3600));
    o.last_touched_at = ts(3600);
    assert_eq!(o.liveness(ts(7200), &s), Liveness::Active { expires_at: ts(3600 + 86_400) });
    o.closed_at = Some(ts(7200));
    assert_eq!(o.liveness(ts(7300), &s), Liveness::Active { expires_at: ts(7200 + 3600) }, "listable for the grace");
    assert_eq!(o.liveness(ts(7200 + 3600), &s), Liveness::Expired, "then gone");
}

#[test]
fn indexes_follow_deletes_moves_and_activations() {
    let s = ObjectSettings::default();
    let mut reg = Objects::default();
    for i in 0..5 {
        reg.upsert(obj(&format!("{i}:link:0"), ObjectKind::Link, Some("7"), i), 100, &s);
    }
    reg.upsert(obj("9:poll", ObjectKind::Poll, Some("7"), 9), 100, &s);
    let scope = reg.scope(Some("7")).unwrap();
    let newest: Vec<&str> = reg.newest(scope, None).map(|o| &*o.object_id).take(3).collect();
    assert_eq!(newest, ["9:poll", "4:link:0", "3:link:0"]);
    let polls: Vec<&str> = reg.newest(scope, Some(ObjectKind::Poll)).map(|o| &*o.object_id).collect();
    assert_eq!(polls, ["9:poll"]);
    reg.activate("1:link:0", Activation::Fetched, ts(20), None);
    reg.activate("3:link:0", Activation::Summarized, ts(30), Some("77"));
    reg.activate("1:link:0", Activation::Described, ts(40), None);
    let scope = reg.scope(Some("7")).unwrap();
    let active: Vec<&str> = reg.activations(scope).map(|o| &*o.object_id).collect();
    assert_eq!(active, ["1:link:0", "3:link:0"], "each object once, by its latest activation");
    // A move to another topic re-indexes the object.
    let mut moved = obj("3:link:0", ObjectKind::Link, Some("9"), 3);
    moved.title_or_label = Some("moved".into());
    reg.upsert(moved, 100, &s);
    assert!(reg.newest(reg.scope(Some("7")).unwrap(), None).all(|o| &*o.object_id != "3:link:0"));
    assert_eq!(
        reg.newest(reg.scope(Some("9")).unwrap(), None).next().map(|o| o.activated_by.as_deref()),
        Some(Some("77"))
    );
    reg.delete("9:poll");
    assert!(reg.newest(reg.scope(Some("7")).unwrap(), Some(ObjectKind::Poll)).next().is_none());
    assert_eq!(reg.len(), 5);
}

#[test]
fn the_cap_evicts_the_oldest_but_spares_active_objects() {
    let mut s = ObjectSettings::default();
    s.set_ttl(ObjectKind::Link, Span::from_secs(3600));
    let mut reg = Objects::default();
    let mut poll = obj("0:poll", ObjectKind::Poll, None, 0);
    poll.activation = Some(Activation::Created);
    poll.activated_at = Some(ts(0));
    reg.upsert(poll, 3, &s);
    for i in 1..=5 {
        reg.upsert(obj(&format!("{i}:link:0"), ObjectKind::Link, None, i), 3, &s);
    }
    let mut ids: Vec<&str> = reg.iter().map(|o| &*o.object_id).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["0:poll", "4:link:0", "5:link:0"]);
}

#[test]
fn churn_keeps_indexes_bounded() {
    let s = ObjectSettings::default();
    let mut reg = Objects::default();
    for i in 0..10_000i64 {
        let mut o = obj(&format!("{i}:link:0"), ObjectKind::Link, Some("1"), i);
        o.activated_at = Some(ts(i));
        o.activation = Some(Activation::Fetched);
        reg.upsert(o, 50, &s);
        reg.activate(&format!("{i}:link:0"), Activation::Summarized, ts(i + 1), None);
    }
    let scope = reg.scope(Some("1")).unwrap();
    assert_eq!(reg.len(), 50);
    assert!(scope.order.len() <= 200 && scope.active.len() <= 300, "{} {}", scope.order.len(), scope.active.len());
    assert!(reg.order.len() <= 2 * 50 + 16);
}

/// A time: at a boundary of `now`'s comparisons (a TTL or the grace before it, give or take a second), near it, or
/// at the ends of what a timestamp holds.
fn when(now: i64, ttl: i64, grace: i64) -> impl proptest::strategy::Strategy<Value = i64> {
    use proptest::prelude::{Strategy, prop_oneof};
    prop_oneof![
        3 => (-2i64..=2).prop_map(move |d| now.saturating_sub(ttl).saturating_add(d)),
        3 => (-2i64..=2).prop_map(move |d| now.saturating_sub(grace).saturating_add(d)),
        3 => (-200_000i64..200_000).prop_map(move |d| now + d),
        1 => (0i64..3).prop_map(|d| MAX - d),
        1 => (0i64..3).prop_map(|d| MIN + d),
    ]
}

use crate::time::{MAX_UNIX as MAX, MIN_UNIX as MIN};

/// A span: short, a day, zero, negative, or past what any timestamp difference is.
fn span() -> impl proptest::strategy::Strategy<Value = i64> {
    use proptest::prelude::{Just, prop_oneof};
    prop_oneof![
        6 => 0i64..200_000,
        1 => Just(0i64),
        1 => -5_000i64..0,
        1 => Just(i64::MAX),
        1 => Just(i64::MIN),
    ]
}

/// An object's times and a `now`, with the TTL and grace they are compared with.
#[derive(Debug, Clone)]
struct Times {
    now: i64,
    ttl: i64,
    grace: i64,
    touched: i64,
    activated: Option<i64>,
    closed: Option<i64>,
}

fn times() -> impl proptest::strategy::Strategy<Value = Times> {
    use proptest::prelude::{Strategy, prop_oneof};
    let now = prop_oneof![8 => 900_000i64..1_100_000, 1 => (0i64..3).prop_map(|d| MAX - d), 1 => (0i64..3).prop_map(|d| MIN + d)];
    (now, span(), span()).prop_flat_map(|(now, ttl, grace)| {
        let at = move || when(now, ttl, grace);
        (at(), proptest::option::of(at()), proptest::option::of(at()))
            .prop_map(move |(touched, activated, closed)| Times { now, ttl, grace, touched, activated, closed })
    })
}

/// The rule of `Object::liveness` as written with the timestamps' own arithmetic (its definition before it was
/// stated as comparisons with thresholds): what both ways of asking are held to.
fn liveness_by_definition(o: &Object, now: Timestamp, settings: &ObjectSettings) -> Liveness {
    let ttl = settings.ttl(o.kind);
    if let Some(closed) = o.closed_at {
        let until = closed.plus(settings.close_grace);
        return match o.activated_at {
            Some(at) if now < until && now < at.plus(ttl).max(until) => Liveness::Active { expires_at: until },
            _ if now < until => Liveness::Known,
            _ => Liveness::Expired,
        };
    }
    if let Some(at) = o.activated_at {
        let until = at.plus(ttl);
        if now < until {
            return Liveness::Active { expires_at: until };
        }
    }
    if now < o.last_touched_at.plus(ttl) { Liveness::Known } else { Liveness::Expired }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]
    /// `Object::liveness` and the thresholds computed once per `now` say what the rule's definition says (when
    /// activity ends too), for every state an object can be in
    /// (activated or not, closed or not), any TTL and close grace (zero, negative, past any time difference), times
    /// a second either side of each boundary, and times at the ends of what a timestamp holds.
    #[test]
    fn liveness_at_one_time_is_liveness(
        x in times(),
        kind in proptest::sample::select(<ObjectKind as crate::kinds::Vocabulary>::ALL),
    ) {
        let t = |s: i64| Timestamp::from_unix(s.clamp(MIN, MAX)).unwrap_or_default();
        let mut settings = ObjectSettings::default();
        settings.set_ttl(kind, Span::from_secs(x.ttl));
        settings.close_grace = Span::from_secs(x.grace);
        let mut o = obj("1:x", kind, None, x.touched);
        o.last_touched_at = t(x.touched);
        o.activated_at = x.activated.map(t);
        o.closed_at = x.closed.map(t);
        let at = super::LivenessAt::new(t(x.now), &settings);
        let defined = liveness_by_definition(&o, t(x.now), &settings);
        proptest::prop_assert_eq!(o.liveness(t(x.now), &settings), defined);
        proptest::prop_assert_eq!(at.of(&o), o.liveness(t(x.now), &settings).into());
        proptest::prop_assert_eq!(at.of(&o), defined.into());
        let within = t(x.now) < t(x.touched).plus(Span::from_secs(x.ttl));
        proptest::prop_assert_eq!(at.within_ttl(kind, t(x.touched)), within);
    }
}
