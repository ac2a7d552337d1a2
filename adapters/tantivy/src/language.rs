//! The analyzer of each [`TextLanguage`]: how text becomes terms, in documents and in
//! queries alike. Its name is recorded in the index's schema, so the language an index was
//! made with is known when it is reopened.

use memory_core::TextLanguage;
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer,
};

use crate::cjk::CjkTokenizer;

/// Longer tokens (in bytes) are dropped: they are not words anyone searches for.
const LONGEST_TOKEN: usize = 64;

/// The analyzer's name in the schema: `memory_<language>`.
pub(crate) fn analyzer_name(language: TextLanguage) -> String {
    format!("memory_{}", language.name())
}

/// The name of the English analyzer in indexes made before languages were chosen (the same
/// pipeline as `memory_english`); such indexes open as English under that name.
pub(crate) const LEGACY_ENGLISH: &str = "memory_en_stem";

/// The language whose analyzer has this name.
pub(crate) fn language_of(analyzer: &str) -> Option<TextLanguage> {
    if analyzer == LEGACY_ENGLISH {
        return Some(TextLanguage::English);
    }
    TextLanguage::ALL
        .into_iter()
        .find(|l| analyzer_name(*l) == analyzer)
}

/// Tantivy's stemmer for the language (none for CJK).
fn stemmer_language(language: TextLanguage) -> Option<Language> {
    use TextLanguage as T;
    Some(match language {
        T::Arabic => Language::Arabic,
        T::Danish => Language::Danish,
        T::Dutch => Language::Dutch,
        T::English => Language::English,
        T::Finnish => Language::Finnish,
        T::French => Language::French,
        T::German => Language::German,
        T::Greek => Language::Greek,
        T::Hungarian => Language::Hungarian,
        T::Italian => Language::Italian,
        T::Norwegian => Language::Norwegian,
        T::Portuguese => Language::Portuguese,
        T::Romanian => Language::Romanian,
        T::Russian => Language::Russian,
        T::Spanish => Language::Spanish,
        T::Swedish => Language::Swedish,
        T::Tamil => Language::Tamil,
        T::Turkish => Language::Turkish,
        T::Cjk => return None,
    })
}

/// True when the language stems words.
pub(crate) fn stems(language: TextLanguage) -> bool {
    stemmer_language(language).is_some()
}

/// True when Tantivy has a stop-word list for the language.
pub(crate) fn has_stop_words(language: TextLanguage) -> bool {
    stemmer_language(language).is_some_and(|l| StopWordFilter::new(l).is_some())
}

/// The analyzer: words split on anything not alphanumeric, lowercased, stop words dropped
/// (where Tantivy has a list), stemmed; or, for CJK, the two-character pieces of
/// [`CjkTokenizer`], lowercased.
pub(crate) fn analyzer(language: TextLanguage) -> TextAnalyzer {
    let Some(stemmer) = stemmer_language(language) else {
        return TextAnalyzer::builder(CjkTokenizer)
            .filter(RemoveLongFilter::limit(LONGEST_TOKEN))
            .filter(LowerCaser)
            .build();
    };
    let words = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(LONGEST_TOKEN))
        .filter(LowerCaser);
    match StopWordFilter::new(stemmer) {
        Some(stop) => words.filter(stop).filter(Stemmer::new(stemmer)).build(),
        None => words.filter(Stemmer::new(stemmer)).build(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms(language: TextLanguage, text: &str) -> Vec<String> {
        let mut analyzer = analyzer(language);
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        out
    }

    #[test]
    fn every_language_has_an_analyzer_named_after_it() {
        for language in TextLanguage::ALL {
            assert_eq!(language_of(&analyzer_name(language)), Some(language));
            assert!(!terms(language, "Hello").is_empty(), "{language}");
        }
        assert_eq!(language_of("default"), None);
        assert_eq!(language_of(LEGACY_ENGLISH), Some(TextLanguage::English));
    }

    #[test]
    fn each_language_stems_its_own_words() {
        assert_eq!(terms(TextLanguage::English, "the deployments"), ["deploy"]);
        assert_eq!(
            terms(TextLanguage::French, "les chanteuses"),
            terms(TextLanguage::French, "chanteuse")
        );
        assert_eq!(
            terms(TextLanguage::German, "die Häuser"),
            terms(TextLanguage::German, "Haus")
        );
        assert_eq!(
            terms(TextLanguage::Cjk, "東京都 Tokyo"),
            ["東京", "京都", "tokyo"]
        );
    }
}
