//! When two memories say the same thing, LLM-free: the same words once normalised, or the
//! same content words weighted by their rarity in the profile (and, with vectors, a close
//! vector), with nothing that tells them apart. What tells two statements apart even when
//! almost every word agrees is checked first: a negation on one side only, different
//! numbers, a name only one mentions, a different person (`sister`, `manager`), different
//! days for events and tasks.

use std::collections::{HashMap, HashSet};

use memory_core::Timestamp;
use memory_core::ports::{MemoryKind, MemoryRecord};

use crate::long_term::query::STOP_WORDS;

/// Words that turn a statement into its opposite.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot",
    "dislike", "dislikes", "disliked", "hate", "hates", "hated", "stopped", "quit",
];

/// Nouns naming a person by their relation to the user: a statement about the user's sister
/// is not one about the user.
const RELATIONS: &[&str] = &[
    "mother",
    "mom",
    "mum",
    "father",
    "dad",
    "parent",
    "parents",
    "sister",
    "brother",
    "sibling",
    "siblings",
    "wife",
    "husband",
    "partner",
    "spouse",
    "girlfriend",
    "boyfriend",
    "son",
    "daughter",
    "child",
    "children",
    "kid",
    "kids",
    "baby",
    "grandmother",
    "grandma",
    "grandfather",
    "grandpa",
    "grandparents",
    "aunt",
    "uncle",
    "cousin",
    "niece",
    "nephew",
    "friend",
    "friends",
    "colleague",
    "colleagues",
    "coworker",
    "boss",
    "manager",
    "team",
    "neighbor",
    "neighbour",
    "roommate",
    "landlord",
    "doctor",
    "teacher",
    "mentor",
    "client",
    "dog",
    "cat",
    "pet",
];

/// What the rules read of one memory, computed once per consolidation run.
#[derive(Debug, Clone)]
pub(super) struct Features {
    /// Lowercase words joined by one space (punctuation dropped).
    pub normalised: String,
    /// Content words (function words dropped), stemmed, each once, as vocabulary ids.
    pub stems: Vec<u32>,
    /// Words written with a capital inside a sentence (names), lowercase.
    pub names: HashSet<String>,
    /// Every lowercase word, to look a name up in.
    pub words: HashSet<String>,
    /// Numbers, sorted.
    pub numbers: Vec<String>,
    /// Whether it is negated (an odd number of negations).
    pub negated: bool,
    /// Relation nouns, sorted and once each.
    pub relations: Vec<String>,
}

/// The content words of a profile: an id per stem and how many memories hold it.
#[derive(Debug, Default)]
pub(super) struct Vocabulary {
    ids: HashMap<String, u32>,
    /// Memories holding each stem, by id.
    pub document_frequency: Vec<u32>,
}

impl Vocabulary {
    /// The id of `stem`, counted once for the memory being read.
    fn id_of(&mut self, stem: String) -> u32 {
        let next = self.ids.len() as u32;
        let id = *self.ids.entry(stem).or_insert(next);
        if id == next {
            self.document_frequency.push(0);
        }
        id
    }

    /// Each stem's weight among `memories` memories: `ln(1 + memories / frequency)`, so a
    /// word every memory holds weighs little and a word one memory holds weighs most.
    pub fn weights(&self, memories: usize) -> Vec<f32> {
        self.document_frequency
            .iter()
            .map(|&df| (1.0 + memories as f32 / df.max(1) as f32).ln())
            .collect()
    }
}

/// The words of `text`: runs of letters, digits and apostrophes.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .map(|w| w.trim_matches('\''))
        .filter(|w| !w.is_empty())
}

/// Gives every memory the names the profile writes with a capital inside a sentence
/// anywhere: a name that opens one memory ("Anna likes tea") is known from another ("Tea is
/// what Anna likes"), so it tells statements apart wherever it stands.
pub(super) fn share_names(features: &mut [Features]) {
    let known: HashSet<String> = features
        .iter()
        .flat_map(|f| f.names.iter().cloned())
        .collect();
    for f in features.iter_mut() {
        f.names = f
            .words
            .iter()
            .filter(|w| known.contains(*w))
            .cloned()
            .collect();
    }
}

/// Reads one memory's features, adding its stems to `vocabulary`.
pub(super) fn features(
    content: &str,
    stemmer: &rust_stemmers::Stemmer,
    vocabulary: &mut Vocabulary,
) -> Features {
    let mut normalised = Vec::new();
    let mut names = HashSet::new();
    let mut numbers = Vec::new();
    let mut negations = 0usize;
    let mut relations = Vec::new();
    let mut stems: Vec<u32> = Vec::new();
    let mut sentence_start = true;
    for piece in content.split_inclusive(['.', '!', '?', ';', ':', '\n']) {
        for word in words(piece) {
            let lower = word.to_lowercase();
            let lower = lower.strip_suffix("'s").map(str::to_owned).unwrap_or(lower);
            if !sentence_start && word.chars().next().is_some_and(char::is_uppercase) {
                names.insert(lower.clone());
            }
            sentence_start = false;
            if lower.ends_with("n't") || NEGATIONS.contains(&lower.as_str()) {
                negations += 1;
            }
            if lower.chars().any(|c| c.is_ascii_digit()) {
                numbers.push(lower.clone());
            }
            if RELATIONS.contains(&lower.as_str()) {
                relations.push(lower.clone());
            }
            if !STOP_WORDS.contains(&lower.as_str()) {
                let id = vocabulary.id_of(stemmer.stem(&lower).into_owned());
                if !stems.contains(&id) {
                    stems.push(id);
                }
            }
            normalised.push(lower);
        }
        sentence_start = true;
    }
    for &id in &stems {
        vocabulary.document_frequency[id as usize] += 1;
    }
    numbers.sort();
    relations.sort();
    relations.dedup();
    let words = normalised.iter().cloned().collect();
    Features {
        normalised: normalised.join(" "),
        stems,
        names,
        words,
        numbers,
        negated: negations % 2 == 1,
        relations,
    }
}

/// The share of the two memories' content-word weight they hold in common (weighted
/// Jaccard): 1 for the same words, 0 for none in common.
pub(super) fn word_overlap(a: &Features, b: &Features, weights: &[f32]) -> f32 {
    let weight = |id: &u32| weights.get(*id as usize).copied().unwrap_or(0.0);
    let shared: f32 = a
        .stems
        .iter()
        .filter(|s| b.stems.contains(s))
        .map(weight)
        .sum();
    let total: f32 =
        a.stems.iter().map(weight).sum::<f32>() + b.stems.iter().map(weight).sum::<f32>() - shared;
    if total <= 0.0 { 0.0 } else { shared / total }
}

/// What keeps two memories apart however alike their words are; `None` when nothing does.
pub(super) fn told_apart(
    a: (&MemoryRecord, &Features),
    b: (&MemoryRecord, &Features),
) -> Option<&'static str> {
    let ((ma, fa), (mb, fb)) = (a, b);
    if ma.kind != mb.kind {
        return Some("different kinds");
    }
    if let (Some(ka), Some(kb)) = (&ma.key, &mb.key)
        && ka != kb
        && fa.normalised != fb.normalised
    {
        return Some("different keys");
    }
    if matches!(ma.kind, MemoryKind::Event | MemoryKind::Task)
        && let (Some(va), Some(vb)) = (ma.valid_at, mb.valid_at)
        && day(va) != day(vb)
    {
        return Some("different days");
    }
    if fa.negated != fb.negated {
        return Some("one is negated");
    }
    if fa.numbers != fb.numbers {
        return Some("different numbers");
    }
    if fa.relations != fb.relations {
        return Some("different people");
    }
    let names_agree = fa
        .names
        .iter()
        .chain(&fb.names)
        .all(|name| fa.words.contains(name) == fb.words.contains(name));
    if !names_agree {
        return Some("a name only one mentions");
    }
    None
}

/// The UTC day of an instant.
fn day(at: Timestamp) -> i64 {
    at.millis().div_euclid(86_400_000)
}

/// Cosine similarity of two vectors (0 for a zero vector or different lengths).
pub(super) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() {
        return 0.0;
    }
    let (mut dot, mut na, mut nb) = (0.0f32, 0.0f32, 0.0f32);
    for (x, y) in a.iter().zip(b) {
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na <= 0.0 || nb <= 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(texts: &[&str]) -> (Vec<Features>, Vec<f32>) {
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let mut vocabulary = Vocabulary::default();
        let features: Vec<Features> = texts
            .iter()
            .map(|t| features(t, &stemmer, &mut vocabulary))
            .collect();
        let weights = vocabulary.weights(texts.len());
        (features, weights)
    }

    fn fact(text: &str) -> MemoryRecord {
        MemoryRecord::new(text, MemoryKind::Fact, text, Timestamp(0))
    }

    #[test]
    fn normalised_text_drops_case_and_punctuation() {
        let (f, _) = read(&["The user LIKES green tea!", "the user likes  green tea"]);
        assert_eq!(f[0].normalised, f[1].normalised);
        assert_eq!(f[0].normalised, "the user likes green tea");
    }

    #[test]
    fn rare_shared_words_weigh_more_than_common_different_ones() {
        let (f, w) = read(&[
            "The user likes green tea",
            "The user enjoys green tea",
            "The user likes black coffee",
            "The user likes jazz",
            "The user likes hiking",
        ]);
        let paraphrase = word_overlap(&f[0], &f[1], &w);
        let other = word_overlap(&f[0], &f[2], &w);
        assert!(paraphrase > 0.5, "{paraphrase}");
        assert!(other < 0.2, "{other}");
        assert!((word_overlap(&f[0], &f[0], &w) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn negation_numbers_names_and_people_tell_statements_apart() {
        let pairs = [
            (
                "The user likes green tea",
                "The user does not like green tea",
                Some("one is negated"),
            ),
            (
                "The user runs 5 km a day",
                "The user runs 10 km a day",
                Some("different numbers"),
            ),
            (
                "The user's sister likes tea",
                "The user likes tea",
                Some("different people"),
            ),
            (
                "The user met Anna in Lisbon",
                "The user met Maria in Lisbon",
                Some("a name only one mentions"),
            ),
            (
                "Anna is the user's best friend",
                "The user's best friend is Anna",
                None,
            ),
            (
                "The user likes green tea",
                "the user really likes green tea",
                None,
            ),
        ];
        for (a, b, expected) in pairs {
            let (f, _) = read(&[a, b]);
            let (ma, mb) = (fact(a), fact(b));
            assert_eq!(
                told_apart((&ma, &f[0]), (&mb, &f[1])),
                expected,
                "{a} / {b}"
            );
        }
    }

    #[test]
    fn a_name_known_anywhere_in_the_profile_tells_statements_apart_at_their_start() {
        let texts = [
            "Anna likes green tea.",
            "Marco likes green tea.",
            "Green tea is what Anna and Marco like.",
        ];
        let (mut f, _) = read(&texts);
        let (a, b) = (fact(texts[0]), fact(texts[1]));
        assert_eq!(
            told_apart((&a, &f[0]), (&b, &f[1])),
            None,
            "no name is known yet"
        );
        share_names(&mut f);
        assert_eq!(
            told_apart((&a, &f[0]), (&b, &f[1])),
            Some("a name only one mentions")
        );
    }

    #[test]
    fn events_on_different_days_and_different_keys_stay_apart() {
        let (f, _) = read(&["went to the gym", "went to the gym"]);
        let mut a = MemoryRecord::new("a", MemoryKind::Event, "went to the gym", Timestamp(0));
        let mut b = MemoryRecord::new("b", MemoryKind::Event, "went to the gym", Timestamp(0));
        a.valid_at = Some(Timestamp(0));
        b.valid_at = Some(Timestamp(86_400_000));
        assert_eq!(told_apart((&a, &f[0]), (&b, &f[1])), Some("different days"));
        b.valid_at = Some(Timestamp(3_600_000));
        assert_eq!(told_apart((&a, &f[0]), (&b, &f[1])), None);

        let (f, _) = read(&["prefers tea", "prefers tea in the morning"]);
        let mut a = fact("prefers tea");
        let mut b = fact("prefers tea in the morning");
        a.key = Some("drink".into());
        b.key = Some("morning_routine".into());
        assert_eq!(told_apart((&a, &f[0]), (&b, &f[1])), Some("different keys"));
    }

    #[test]
    fn cosine_of_parallel_orthogonal_and_mismatched_vectors() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 1.0]), 0.0);
        assert_eq!(cosine(&[1.0], &[1.0, 0.0]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
