//! Whether a message's words refer to something (docs/resolver.md, "Only where something refers"): a
//! demonstrative or a pronoun ("this", "it", "это", "его"), a positional word ("above", "the last one",
//! "выше", "последний"), or an object named with a determiner ("the poll", "my photo", "ту ссылку"). A message
//! without any of them (and without a reply target, hints or objects of its own) is not resolved at all.
//!
//! The lists are small and closed, per language (English and Russian); a bot that reads references itself
//! passes hints instead. Words are compared lowercased, whole (Russian ones by their stem, as they decline).

/// English words that refer on their own: demonstratives, pronouns and positional words.
const EN_REFERRING: &[&str] = &[
    "this",
    "that",
    "these",
    "those",
    "it",
    "its",
    "it's",
    "them",
    "above",
    "earlier",
    "previous",
    "former",
    "latter",
    "aforementioned",
];

/// English determiners that make a following object noun a reference ("the poll", "my photo", "last link").
const EN_DETERMINERS: &[&str] =
    &["the", "my", "your", "his", "her", "our", "their", "last", "latest", "first", "second", "same", "which"];

/// English nouns of the things chatctx resolves.
const EN_OBJECTS: &[&str] = &[
    "photo",
    "photos",
    "picture",
    "pictures",
    "pic",
    "pics",
    "image",
    "images",
    "screenshot",
    "screenshots",
    "video",
    "videos",
    "clip",
    "voice",
    "audio",
    "recording",
    "pdf",
    "file",
    "files",
    "document",
    "documents",
    "doc",
    "docs",
    "link",
    "links",
    "url",
    "article",
    "post",
    "poll",
    "vote",
    "survey",
    "reminder",
    "summary",
    "message",
    "messages",
    "one",
    "attachment",
    "sticker",
    "gif",
    "meme",
];

/// Russian words that refer on their own, compared whole: demonstratives (этот, тот in every case),
/// third-person pronouns, выше.
const RU_REFERRING_WORDS: &[&str] = &[
    "это", "этот", "эта", "эти", "этой", "этом", "этим", "этих", "эту", "тот", "та", "те", "того", "той", "том", "тем",
    "теми", "тех", "ту", "его", "её", "ее", "их", "он", "она", "оно", "они", "него", "неё", "нее", "них", "ним", "ней",
    "нём", "нем", "выше",
];

/// Russian stems that refer on their own (the longer words, which decline): этого, этими, positional words
/// (ранее, предыдущий, последний, прошлый, вчерашний).
const RU_REFERRING_STEMS: &[&str] =
    &["этого", "этими", "ранее", "раньше", "вышеупомян", "предыдущ", "прошл", "вчерашн", "последн"];

/// Russian possessives that make a following object noun a reference ("моё фото", "твою ссылку").
const RU_DETERMINERS: &[&str] = &["мо", "тво", "наш", "ваш", "перв", "втор", "котор"];

/// Russian stems of the things chatctx resolves.
const RU_OBJECTS: &[&str] = &[
    "фот",
    "картин",
    "изображ",
    "скрин",
    "видео",
    "ролик",
    "голосов",
    "аудио",
    "запис",
    "файл",
    "документ",
    "док",
    "ссылк",
    "статья",
    "статью",
    "статьи",
    "пост",
    "опрос",
    "напоминан",
    "сообщени",
    "стикер",
];

fn is_stem_of(word: &str, stems: &[&str]) -> bool {
    stems.iter().any(|s| word.starts_with(s))
}

/// Whether `text` holds a referring expression in English or Russian.
pub fn refers(text: &str) -> bool {
    if text.is_ascii() { refers_ascii(text) } else { refers_lowercased(text) }
}

/// What an English word is, as bits: in [`EN_REFERRING`], [`EN_DETERMINERS`], [`EN_OBJECTS`].
const REFERRING: u8 = 1;
const DETERMINER: u8 = 2;
const OBJECT: u8 = 4;

/// Room for the longest English word listed: a longer word is none of them.
const EN_LONGEST: usize = 16;

/// Every English word listed, with what it is: one lookup a word instead of a scan of each list.
static EN_WORDS: std::sync::LazyLock<hashbrown::HashMap<&'static str, u8>> = std::sync::LazyLock::new(|| {
    let mut words = hashbrown::HashMap::new();
    for (list, class) in [(EN_REFERRING, REFERRING), (EN_DETERMINERS, DETERMINER), (EN_OBJECTS, OBJECT)] {
        for &w in list {
            *words.entry(w).or_insert(0) |= class;
        }
    }
    words
});

/// [`refers`] for an ASCII text, read in place: lowercasing changes no ASCII character's class, so the words
/// split from the text as it is are the lowercased text's words, each lowercased on its own.
fn refers_ascii(text: &str) -> bool {
    let words = &*EN_WORDS;
    let mut lower = [0u8; EN_LONGEST];
    // Whether each of the two words before is a determiner.
    let (mut before, mut two_before) = (false, false);
    for w in text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()) {
        let class = match lower.get_mut(..w.len()) {
            Some(l) => {
                l.copy_from_slice(w.as_bytes());
                l.make_ascii_lowercase();
                std::str::from_utf8(l).ok().and_then(|l| words.get(l)).copied().unwrap_or(0)
            }
            None => 0,
        };
        if class & REFERRING != 0 || (class & OBJECT != 0 && (before || two_before)) {
            return true;
        }
        two_before = before;
        before = class & DETERMINER != 0;
    }
    false
}

/// [`refers`] on the lowercased text, in any script.
fn refers_lowercased(text: &str) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()).collect();
    // The English lists are ASCII and the Russian ones Cyrillic: a word is looked up in its own script's.
    let determiner = |d: &&str| {
        if d.is_ascii() { EN_DETERMINERS.contains(d) } else { is_stem_of(d, RU_DETERMINERS) }
    };
    for (i, w) in words.iter().enumerate() {
        let (referring, named) = if w.is_ascii() {
            (EN_REFERRING.contains(w), EN_OBJECTS.contains(w))
        } else {
            (RU_REFERRING_WORDS.contains(w) || is_stem_of(w, RU_REFERRING_STEMS), is_stem_of(w, RU_OBJECTS))
        };
        if referring {
            return true;
        }
        // An object named with a determiner up to two words before it ("the new poll", "моё последнее фото").
        if named && words[i.saturating_sub(2)..i].iter().any(determiner) {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::refers;

    #[test]
    fn each_list_is_in_its_own_script() {
        for list in [super::EN_REFERRING, super::EN_DETERMINERS, super::EN_OBJECTS] {
            assert!(list.iter().all(|w| w.is_ascii()), "{list:?}");
        }
        for list in [super::RU_REFERRING_WORDS, super::RU_REFERRING_STEMS, super::RU_DETERMINERS, super::RU_OBJECTS] {
            assert!(list.iter().all(|w| w.chars().next().is_some_and(|c| !c.is_ascii())), "{list:?}");
        }
        assert!(super::RU_REFERRING_WORDS.iter().all(|w| w.chars().count() < 5));
        for list in [super::EN_REFERRING, super::EN_DETERMINERS, super::EN_OBJECTS] {
            assert!(list.iter().all(|w| w.len() <= super::EN_LONGEST && *w == w.to_lowercase()), "{list:?}");
        }
        assert!(super::RU_REFERRING_STEMS.iter().all(|w| w.chars().count() >= 5));
    }

    proptest::proptest! {
        /// An ASCII text is read in place as the lowercased copy would be: words from the lists in any case,
        /// other words (some longer than any listed), digits, apostrophes and punctuation between them.
        #[test]
        fn ascii_texts_read_in_place_as_lowercased(parts in proptest::collection::vec(ascii_part(), 0..12)) {
            let text = parts.concat();
            proptest::prop_assert_eq!(super::refers_ascii(&text), super::refers_lowercased(&text), "{:?}", text);
        }
    }

    fn ascii_part() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::{Strategy, prop_oneof};
        let listed: Vec<&str> =
            [super::EN_REFERRING, super::EN_DETERMINERS, super::EN_OBJECTS].concat().into_iter().collect();
        let word =
            prop_oneof![proptest::sample::select(listed).prop_map(str::to_owned), "[a-z]{1,20}", "[a-zA-Z0-9']{1,6}",];
        // Mixed case: each letter upper or lower.
        let cased = (word, proptest::collection::vec(proptest::bool::ANY, 16)).prop_map(|(w, up)| {
            w.chars()
                .zip(up.iter().cycle())
                .map(|(c, &u)| if u { c.to_ascii_uppercase() } else { c })
                .collect::<String>()
        });
        (cased, "[ ,.!?\\-]{1,2}").prop_map(|(w, sep)| w + &sep)
    }

    #[test]
    fn referring_and_not() {
        for yes in [
            "what do you think of this?",
            "@my_bot summarize it",
            "the poll above",
            "can you open the pdf",
            "my photo from yesterday",
            "the last one",
            "that link is broken",
            "что думаешь об этом?",
            "посмотри фото выше",
            "перескажи эту статью",
            "моё последнее фото",
            "а в предыдущем сообщении?",
            "открой его",
        ] {
            assert!(refers(yes), "{yes}");
        }
        for no in [
            "and the font?",
            "is prod back?",
            "hi everyone",
            "how do I install ubuntu on a laptop",
            "привет всем",
            "как дела?",
            "сервер упал",
            "",
        ] {
            assert!(!refers(no), "{no}");
        }
    }
}
