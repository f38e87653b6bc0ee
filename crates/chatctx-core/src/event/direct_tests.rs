use serde_json::Value;

use super::{fresh_message, fresh_message_str, fresh_message_value};
use crate::error::Error;
use crate::event::{Event, check_fresh};

/// The general way: parse, check as fresh input, decode.
pub(crate) fn general(text: &str) -> Result<Event, Error> {
    let v: Value = serde_json::from_str(text).map_err(|e| Error::invalid_event(e.to_string()))?;
    check_fresh(&v)?;
    Event::decode(&v)
}

/// A small generator of JSON texts shaped like messages, good and bad, from a seed (SplitMix64).
pub(crate) struct Gen(pub(crate) u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// True once in `n` times.
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }

    fn pick<'a>(&mut self, of: &[&'a str]) -> &'a str {
        of[(self.next() % of.len() as u64) as usize]
    }

    /// Mostly `good`, sometimes one of the awkward values every field may meet.
    fn value(&mut self, good: &[&str]) -> String {
        if !self.one_in(10) {
            return self.pick(good).to_owned();
        }
        let long = format!("\"{}\"", "x".repeat(if self.one_in(2) { 257 } else { 1025 }));
        let awkward = [
            "null",
            "\"\"",
            "\"  \"",
            "7",
            "-3",
            "1.5",
            "true",
            "[]",
            "{}",
            "\"a\\nb\"",
            "\"\\u0007\"",
            "\"\\u00e9t\\u00e9\"",
            "18446744073709551615",
            "\"@\"",
            "\"@@ann \"",
            "1e400",
        ];
        if self.one_in(5) { long } else { self.pick(&awkward).to_owned() }
    }

    fn person(&mut self) -> String {
        let mut fields = Vec::new();
        if !self.one_in(8) {
            fields.push(format!("\"user_id\":{}", self.value(&["\"42\"", "42", "\"u-1\""])));
        }
        for key in ["username", "display_name", "first_name", "last_name"] {
            if self.one_in(2) {
                fields.push(format!(
                    "\"{key}\":{}",
                    self.value(&["\"ann\"", "\" @ann \"", "\"Ann B.\"", "\"\\\"q\\\"\""])
                ));
            }
        }
        if self.one_in(3) {
            fields.push(format!("\"is_bot\":{}", self.value(&["true", "false"])));
        }
        if self.one_in(12) {
            fields.push("\"extra_id\":\"e\"".to_owned());
        }
        format!("{{{}}}", fields.join(","))
    }

    fn entity(&mut self) -> String {
        let mut fields = vec![format!(
            "\"type\":{}",
            self.value(&["\"mention\"", "\"url\"", "\"text_link\"", "\"text_mention\"", "\"bold\""])
        )];
        fields.push(format!("\"offset\":{}", self.value(&["0", "3", "4294967295", "4294967296"])));
        if !self.one_in(10) {
            fields.push(format!("\"length\":{}", self.value(&["4", "12"])));
        }
        if self.one_in(3) {
            fields.push(format!("\"url\":{}", self.value(&["\"https://example.org\""])));
        }
        if self.one_in(3) {
            let p = self.person();
            fields.push(format!("\"user\":{p}"));
        }
        format!("{{{}}}", fields.join(","))
    }

    pub(crate) fn message(&mut self) -> String {
        let mut fields =
            vec![format!("\"type\":{}", self.value(&["\"message\"", "\"message\"", "\"message\"", "\"reaction\""]))];
        let ids = ["\"-100500\"", "-100500", "\"c\\u0041\""];
        for (key, p) in
            [("chat_id", 1), ("message_id", 1), ("topic_id", 3), ("reply_to_message_id", 3), ("workspace_id", 6)]
        {
            let present = if p == 1 { !self.one_in(10) } else { self.one_in(p) };
            if present {
                fields.push(format!("\"{key}\":{}", self.value(&ids)));
            }
        }
        if self.one_in(3) {
            fields.push(format!("\"channel\":{}", self.value(&["\"telegram\"", "\"slack\"", "\"\""])));
        }
        if !self.one_in(10) {
            fields.push(format!(
                "\"kind\":{}",
                self.value(&["\"inbound_user\"", "\"outbound_agent\"", "\"system\"", "\"other\""])
            ));
        }
        if !self.one_in(10) {
            fields.push(format!(
                "\"sent_at\":{}",
                self.value(&[
                    "1770000000",
                    "\"2026-02-13T08:20:10Z\"",
                    "\"2026-02-13T08:20:10+03:00\"",
                    "\"yesterday\""
                ])
            ));
        }
        if !self.one_in(6) {
            let p = self.person();
            fields.push(format!("\"sender\":{p}"));
        }
        if !self.one_in(8) {
            fields.push(format!(
                "\"text\":{}",
                self.value(&["\"hello @ann see https://example.org\"", "\"line\\nnext\""])
            ));
        }
        if self.one_in(3) {
            let n = self.next() % 3;
            let es: Vec<String> = (0..n).map(|_| self.entity()).collect();
            fields.push(format!("\"entities\":[{}]", es.join(",")));
        }
        for (key, good) in [
            ("chat_type", &["\"supergroup\"", "\" group \""][..]),
            ("origin", &["\"interactive\"", "\"scheduled\"", "\"later\""][..]),
            ("triggered_agent", &["true", "false"][..]),
            ("forwarded_from", &["\"Bob\"", "\"  \""][..]),
            ("actions", &["[\"searched\"]", "[]", "[1]"][..]),
        ] {
            if self.one_in(4) {
                fields.push(format!("\"{key}\":{}", self.value(good)));
            }
        }
        match self.next() % 24 {
            0 => fields.push("\"quote\":{\"text\":\"q\"}".to_owned()),
            5 => fields.push(r#""quote":{"sender":{"first_name":" Q "},"text":null}"#.to_owned()),
            6 => fields.push(r#""quote":{"sender":{"user_id":""},"text":"q"}"#.to_owned()),
            7 => fields.push(r#""quote":null"#.to_owned()),
            8 => fields.push(r#""quote":{"sender":{"first_name":" Q ","is_bot":true},"text":"q"}"#.to_owned()),
            9 => fields.push(r#""attachments":[{"kind":"media.image","label":" cat.jpg ","file":{"file_id":"F1","file_unique_id":7}}]"#.to_owned()),
            10 => fields.push(r#""attachments":[{"kind":"poll","label":"Lunch?","external_id":"p9","activation":"created","object_id":"o\u0041"},{"kind":"link"}]"#.to_owned()),
            11 => fields.push(r#""attachments":[{"kind":"message"}]"#.to_owned()),
            12 => fields.push(r#""attachments":[{"kind":"media.pdf","activation":"later","file":{"file_unique_id":"u"}}]"#.to_owned()),
            13 => fields.push(r#""attachments":[{"kind":"media.voice","file":null,"label":null}]"#.to_owned()),
            1 => fields.push("\"note_id\":\"n\"".to_owned()),
            4 => fields
                .push(r#""quote":{"sender":{"user_id":"5","username":" q\u00e9 "},"text":"a \"b\"\n"}"#.to_owned()),
            2 => fields.push("\"text\":\"again\"".to_owned()),
            3 => fields.push(format!("\"actions\":[{}]", vec!["\"a\""; 65].join(","))),
            _ => {}
        }
        // Key order does not matter to either way: shuffle.
        for i in (1..fields.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            fields.swap(i, j);
        }
        format!("{{{}}}", fields.join(","))
    }
}

#[test]
fn whatever_it_answers_the_general_way_answers_too() {
    let (mut taken, mut accepted, mut from_value) = (0, 0, 0);
    for seed in 0..40_000u64 {
        let text = Gen(seed).message();
        let general = general(&text);
        accepted += usize::from(matches!(general, Ok(Event::Message(_))));
        // From an already parsed value: the same answer as the general way on that value, whenever it answers.
        if let Ok(v) = serde_json::from_str::<Value>(&text)
            && let Some(fast) = fresh_message_value(&v)
        {
            let general = check_fresh(&v).and_then(|()| Event::decode(&v));
            assert_eq!(general.as_ref().ok(), Some(&fast), "seed {seed} (value): {text}");
            from_value += 1;
        }
        // Text known to be UTF-8 is read the same way, without checking its strings again.
        assert_eq!(fresh_message_str(&text), fresh_message(text.as_bytes()), "seed {seed} (str): {text}");
        if let Some(fast) = fresh_message(text.as_bytes()) {
            taken += 1;
            match &general {
                Ok(e) => assert_eq!(&fast, e, "seed {seed}: {text}"),
                Err(e) => panic!("seed {seed}: taken, but the general way refuses it ({}): {text}", e.message),
            }
        }
    }
    // Not vacuous: most of the messages the general way accepts are taken directly (not those with a
    // field it does not know or a key twice).
    assert!(accepted > 2_000, "{accepted} accepted");
    assert!(taken * 5 > accepted * 3, "only {taken} of {accepted} accepted messages taken directly");
    assert!(from_value >= taken, "{from_value} from values, {taken} from texts");
}

#[test]
fn takes_the_common_shape_and_leaves_the_rest() {
    let common = r#"{"type":"message","chat_id":"-1008","message_id":"5","kind":"inbound_user","sent_at":1770000000,
        "sender":{"user_id":"3","username":"ann"},"text":"hello there","triggered_agent":true}"#;
    assert_eq!(fresh_message(common.as_bytes()), general(common).ok());
    assert!(fresh_message(common.as_bytes()).is_some());
    assert_eq!(fresh_message_str(common), fresh_message(common.as_bytes()));
    for other in [
        r#"{"type":"reaction","chat_id":"1","message_id":"5","sent_at":1,"emoji":["x"]}"#,
        r#"{"type":"message","chat_id":"1","message_id":"5","kind":"system","sent_at":1,"via":"general"}"#,
        r#"{"type":"message","chat_id":"1","chat_id":"2","message_id":"5","kind":"system","sent_at":1}"#,
        "[1]",
        "not json",
    ] {
        assert_eq!(fresh_message(other.as_bytes()), None, "{other}");
        assert_eq!(fresh_message_str(other), None, "{other}");
    }
}

/// What is accepted is logged as its JSON and must read back as the same event at every restart.
#[test]
fn every_accepted_message_reads_back_from_what_is_written() {
    let mut checked = 0;
    for seed in 0..40_000u64 {
        let Ok(e) = general(&Gen(seed).message()) else { continue };
        let written = serde_json::to_value(&e).unwrap_or_default();
        match Event::decode(&written) {
            Ok(back) => assert_eq!(back, e, "seed {seed}: {written}"),
            Err(why) => panic!("seed {seed}: {written} does not read back: {}", why.message),
        }
        checked += 1;
    }
    assert!(checked > 2_000, "{checked}");
}
