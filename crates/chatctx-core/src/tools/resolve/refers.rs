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

/// Russian stems that refer on their own: demonstratives (этот, тот in every case), third-person pronouns,
/// positional words (выше, ранее, предыдущий, последний, прошлый, вчерашний).
const RU_REFERRING: &[&str] = &[
    "это",
    "этот",
    "эта",
    "эти",
    "этого",
    "этой",
    "этом",
    "этим",
    "этими",
    "этих",
    "эту",
    "тот",
    "та",
    "те",
    "того",
    "той",
    "том",
    "тем",
    "теми",
    "тех",
    "ту",
    "его",
    "её",
    "ее",
    "их",
    "он",
    "она",
    "оно",
    "они",
    "него",
    "неё",
    "нее",
    "них",
    "ним",
    "ней",
    "нём",
    "нем",
    "выше",
    "ранее",
    "раньше",
    "вышеупомян",
    "предыдущ",
    "прошл",
    "вчерашн",
    "последн",
];

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
    let lower = text.to_lowercase();
    let words: Vec<&str> =
        lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|w| !w.is_empty()).collect();
    for (i, w) in words.iter().enumerate() {
        if EN_REFERRING.contains(w) || is_ru_word(w, RU_REFERRING) {
            return true;
        }
        // An object named with a determiner up to two words before it ("the new poll", "моё последнее фото").
        let named = EN_OBJECTS.contains(w) || is_stem_of(w, RU_OBJECTS);
        if named
            && words[i.saturating_sub(2)..i].iter().any(|d| EN_DETERMINERS.contains(d) || is_stem_of(d, RU_DETERMINERS))
        {
            return true;
        }
    }
    false
}

/// A Russian referring word: whole for the short pronouns, by stem for the declining adjectives.
fn is_ru_word(word: &str, list: &[&str]) -> bool {
    list.iter().any(|s| if s.chars().count() >= 5 { word.starts_with(s) } else { word == *s })
}

#[cfg(test)]
mod tests {
    use super::refers;

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
