//! When two memories say the same thing, LLM-free: the same words once normalised, or the
//! same content words weighted by their rarity in the profile (and, with vectors, a close
//! vector), with nothing that tells them apart. What tells two statements apart even when
//! almost every word agrees is checked first: a negation on one side only, different
//! numbers, a name only one mentions, a different person (`the user's sister`), different
//! days for events and tasks. Then the words: two statements of one thing agree on their
//! most specific words and differ, if at all, only in words that are commoner in the
//! profile ("likes" and "enjoys" green tea); two different things differ in a word at least
//! as specific as any they share ("green tea" and "black coffee").

use std::collections::{HashMap, HashSet};

use memory_core::Timestamp;
use memory_core::ports::{MemoryKind, MemoryRecord};

use crate::long_term::query::STOP_WORDS;

/// Words that turn a statement into its opposite.
const NEGATIONS: &[&str] = &[
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot",
    "dislike", "dislikes", "disliked", "hate", "hates", "hated", "stopped", "quit",
];

/// Function words that come in opposites: a statement with one and another with its
/// opposite say different things however alike the rest ("before work", "after work").
const OPPOSITES: &[(&str, &str)] = &[
    ("before", "after"),
    ("above", "below"),
    ("over", "under"),
    ("up", "down"),
    ("more", "less"),
    ("most", "least"),
];

/// Words that weigh how something is said, not what: a statement with "really" or "very
/// much" added says the same thing. They are left out of the content words, like function
/// words.
const HEDGES: &[&str] = &[
    "really",
    "much",
    "quite",
    "truly",
    "definitely",
    "absolutely",
    "actually",
    "apparently",
    "certainly",
    "indeed",
    "also",
    "lot",
    "lots",
    "pretty",
    "rather",
    "especially",
    "particularly",
    "basically",
];

/// Nouns naming a person by their relation to someone: a statement about the user's sister
/// is not one about the user. They count after a possessive ("the user's best friend", "my
/// sister") or before "of" ("a friend of the user"), not as ordinary nouns ("the team").
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
    /// Words written with a capital inside a sentence (function words and "I" aside),
    /// lowercase; after [`share_names`], the profile's names this memory holds.
    pub names: HashSet<String>,
    /// Words written in lowercase inside a sentence.
    pub lowercase_inside: HashSet<String>,
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

/// Gives every memory the names the profile knows: words that more memories write with a
/// capital inside a sentence than in lowercase there. A name that opens one memory ("Anna
/// likes tea") is known from another ("Tea is what Anna likes"), so it tells statements
/// apart wherever it stands, while an ordinary word capitalised once ("Apparently,
/// Gardening is ...") is not taken for a name.
pub(super) fn share_names(features: &mut [Features]) {
    let mut capitalised: HashMap<&str, usize> = HashMap::new();
    let mut lowercase: HashMap<&str, usize> = HashMap::new();
    for f in features.iter() {
        for name in &f.names {
            *capitalised.entry(name.as_str()).or_default() += 1;
        }
        for word in &f.lowercase_inside {
            *lowercase.entry(word.as_str()).or_default() += 1;
        }
    }
    let known: HashSet<String> = capitalised
        .iter()
        .filter(|(word, n)| **n > lowercase.get(*word).copied().unwrap_or(0))
        .map(|(word, _)| (*word).to_owned())
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
    let mut lowercase_inside = HashSet::new();
    let mut numbers = Vec::new();
    let mut negations = 0usize;
    let mut relations = Vec::new();
    let mut stems: Vec<u32> = Vec::new();
    for piece in content.split_inclusive(['.', '!', '?', ';', ':', '\n']) {
        let sentence: Vec<&str> = words(piece).collect();
        for (n, word) in sentence.iter().enumerate() {
            let lower = word.to_lowercase();
            let lower = lower.strip_suffix("'s").map(str::to_owned).unwrap_or(lower);
            if n > 0 && lower != "i" && !STOP_WORDS.contains(&lower.as_str()) {
                if word.chars().next().is_some_and(char::is_uppercase) {
                    names.insert(lower.clone());
                } else {
                    lowercase_inside.insert(lower.clone());
                }
            }
            if lower.ends_with("n't") || NEGATIONS.contains(&lower.as_str()) {
                negations += 1;
            }
            if lower.chars().any(|c| c.is_ascii_digit()) {
                numbers.push(lower.clone());
            }
            if RELATIONS.contains(&lower.as_str()) && names_a_relation(&sentence, n) {
                relations.push(lower.clone());
            }
            if !STOP_WORDS.contains(&lower.as_str()) && !HEDGES.contains(&lower.as_str()) {
                let id = vocabulary.id_of(stemmer.stem(&lower).into_owned());
                if !stems.contains(&id) {
                    stems.push(id);
                }
            }
            normalised.push(lower);
        }
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
        lowercase_inside,
        words,
        numbers,
        negated: negations % 2 == 1,
        relations,
    }
}

/// Words that make the noun after them someone's: "the user's", "my", "their".
const POSSESSIVES: &[&str] = &["my", "his", "her", "their", "our", "your"];

/// Whether the relation noun at `n` in `sentence` names a person by their relation: a
/// possessive one or two words before it ("the user's best friend"), or "of" after it ("a
/// friend of Anna").
fn names_a_relation(sentence: &[&str], n: usize) -> bool {
    let before = &sentence[n.saturating_sub(2)..n];
    let possessive = before.iter().any(|w| {
        let w = w.to_lowercase();
        w.ends_with("'s") || POSSESSIVES.contains(&w.as_str())
    });
    possessive
        || sentence
            .get(n + 1)
            .is_some_and(|w| w.eq_ignore_ascii_case("of"))
}

/// How much commoner than what two memories agree on is what tells them apart: the fewest
/// memories holding a content word only one of them says, over the fewest holding one they
/// both say (`document_frequency` by stem id). Two statements of one thing agree on their
/// most specific words, so their differences are commoner (a ratio above 1); two different
/// things differ in a word as specific as any they share (1 or below). Infinite when
/// neither says a word the other does not; 0 when they share none.
pub(super) fn commoner_differences(a: &Features, b: &Features, document_frequency: &[u32]) -> f32 {
    let frequency = |id: &u32| document_frequency.get(*id as usize).copied().unwrap_or(0);
    let rarest_shared = a
        .stems
        .iter()
        .filter(|s| b.stems.contains(s))
        .map(frequency)
        .min();
    let rarest_difference = a
        .stems
        .iter()
        .filter(|s| !b.stems.contains(s))
        .chain(b.stems.iter().filter(|s| !a.stems.contains(s)))
        .map(frequency)
        .min();
    match (rarest_shared, rarest_difference) {
        (None, _) | (Some(0), _) => 0.0,
        (Some(_), None) => f32::INFINITY,
        (Some(shared), Some(difference)) => difference as f32 / shared as f32,
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
    let one_way = |x: &str, y: &str| {
        fa.words.contains(x)
            && fb.words.contains(y)
            && !fa.words.contains(y)
            && !fb.words.contains(x)
    };
    if OPPOSITES
        .iter()
        .any(|(x, y)| one_way(x, y) || one_way(y, x))
    {
        return Some("opposite words");
    }
    if !names_agree(fa, fb) {
        return Some("a name only one mentions");
    }
    None
}

/// Whether every name either mentions is mentioned by both.
pub(super) fn names_agree(a: &Features, b: &Features) -> bool {
    a.names
        .iter()
        .chain(&b.names)
        .all(|name| a.words.contains(name) == b.words.contains(name))
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

    /// Each pair, read as a profile of its own, is told apart as expected.
    fn assert_told_apart(pairs: &[(&str, &str, Option<&str>)]) {
        for &(a, b, expected) in pairs {
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
    fn normalised_text_drops_case_and_punctuation() {
        let (f, _) = read(&["The user LIKES green tea!", "the user likes  green tea"]);
        assert_eq!(f[0].normalised, f[1].normalised);
        assert_eq!(f[0].normalised, "the user likes green tea");
    }

    #[test]
    fn a_paraphrase_differs_only_in_words_commoner_than_those_it_shares() {
        let texts = [
            "The user likes green tea.",
            "The user enjoys green tea.",
            "The user likes black coffee.",
            "The user enjoys jazz.",
            "Anna likes chess.",
            "Anna enjoys hiking.",
            "The user likes green tea very much.",
            "The user likes green tea with honey.",
            "Marco enjoys chess.",
            "Anna enjoys tennis.",
            "The user enjoys sushi.",
            "Omar enjoys tennis.",
            "Marco likes sushi.",
            "Anna likes jazz.",
        ];
        let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
        let mut vocabulary = Vocabulary::default();
        let f: Vec<Features> = texts
            .iter()
            .map(|t| features(t, &stemmer, &mut vocabulary))
            .collect();
        let df = &vocabulary.document_frequency;
        // "likes" and "enjoys" are said of many things; "green tea" of few.
        assert!(commoner_differences(&f[0], &f[1], df) >= 1.5);
        // The value differs: "black coffee" is as specific as anything they share.
        assert!(commoner_differences(&f[0], &f[2], df) < 1.0);
        // "very much" weighs how it is said, not what.
        assert_eq!(commoner_differences(&f[0], &f[6], df), f32::INFINITY);
        // "with honey" is said once: more specific than "green tea", so a different thing.
        assert!(commoner_differences(&f[0], &f[7], df) < 1.0);
        // Nothing in common.
        assert_eq!(commoner_differences(&f[3], &f[4], df), 0.0);
    }

    #[test]
    fn an_ordinary_word_capitalised_once_and_i_are_not_names() {
        let texts = [
            "Apparently, Gardening is Rahul's favourite pastime.",
            "Rahul enjoys gardening in their free time.",
            "Marco is really into gardening.",
            "Rahul likes tea as far as I know.",
            "Rahul likes tea.",
        ];
        let (mut f, _) = read(&texts);
        share_names(&mut f);
        assert!(f[0].names.contains("rahul"));
        assert!(!f[0].names.contains("gardening"), "{:?}", f[0].names);
        let m: Vec<MemoryRecord> = texts.iter().map(|t| fact(t)).collect();
        assert_eq!(told_apart((&m[0], &f[0]), (&m[1], &f[1])), None);
        assert_eq!(told_apart((&m[3], &f[3]), (&m[4], &f[4])), None);
    }

    #[test]
    fn a_relation_noun_names_a_person_after_a_possessive_or_before_of() {
        let pairs = [
            (
                "The user's best friend runs 20 km a week.",
                "The user runs 20 km a week.",
                Some("different people"),
            ),
            (
                "A friend of the user likes tea.",
                "The user likes tea.",
                Some("different people"),
            ),
            (
                "My sister likes tea.",
                "I like tea.",
                Some("different people"),
            ),
            (
                "The team Diego follows is Ajax.",
                "Diego supports Ajax.",
                None,
            ),
        ];
        assert_told_apart(&pairs);
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
            (
                "The user runs before work",
                "The user runs after work",
                Some("opposite words"),
            ),
            (
                "At home, the user looks after a dog",
                "The user has a dog",
                None,
            ),
        ];
        assert_told_apart(&pairs);
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
