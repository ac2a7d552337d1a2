//! A seeded profile of paraphrased memories for `memory bench consolidation`: facts about
//! the user and the people around them, each stated once or restated two to six times in
//! different words (a group), with questions whose answers are known. Facts that differ
//! only in a value, a person, a number or a negation are different facts, so the corpus
//! holds the near misses a consolidation must keep apart.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// An attribute: how it is stated (forms with `{S}`, the subject at the start of a
/// sentence, `{s}` inside one, and `{v}`, the value), the values it takes, and the question
/// that asks for it.
struct Attribute {
    forms: &'static [&'static str],
    values: &'static [&'static str],
    question: &'static str,
}

const ATTRIBUTES: &[Attribute] = &[
    Attribute {
        forms: &[
            "{S} likes {v}.",
            "{S} really enjoys {v}.",
            "{S}'s favourite drink is {v}.",
            "{v} is what {s} likes to drink.",
            "{S} loves drinking {v}.",
            "When it comes to drinks, {s} prefers {v}.",
        ],
        values: &[
            "green tea",
            "black coffee",
            "oat milk lattes",
            "sparkling water",
            "chamomile tea",
            "espresso",
            "mango smoothies",
            "hot chocolate",
            "iced tea",
            "ginger beer",
            "matcha",
            "rooibos tea",
            "cold brew coffee",
            "fresh orange juice",
            "kombucha",
        ],
        question: "What does {s} like to drink?",
    },
    Attribute {
        forms: &[
            "{S} lives in {v}.",
            "{S} is based in {v}.",
            "{S}'s home is in {v}.",
            "{S} resides in {v}.",
            "{v} is where {s} lives.",
            "These days {s} lives in {v}.",
        ],
        values: &[
            "Lisbon",
            "Berlin",
            "Toronto",
            "Osaka",
            "Nairobi",
            "Melbourne",
            "Oslo",
            "Denver",
            "Valparaiso",
            "Krakow",
            "Edinburgh",
            "Hanoi",
            "Montreal",
            "Seville",
            "Tallinn",
        ],
        question: "Where does {s} live?",
    },
    Attribute {
        forms: &[
            "{S} works as {v}.",
            "{S} is {v} by profession.",
            "{S}'s job: {v}.",
            "By trade, {s} is {v}.",
            "{S} earns a living as {v}.",
        ],
        values: &[
            "a nurse",
            "a software engineer",
            "a primary school teacher",
            "an architect",
            "a pastry chef",
            "a civil engineer",
            "a pharmacist",
            "a graphic designer",
            "a carpenter",
            "a data analyst",
            "a veterinarian",
            "a translator",
            "an accountant",
            "a physiotherapist",
            "a librarian",
        ],
        question: "What does {s} do for work?",
    },
    Attribute {
        forms: &[
            "{S} enjoys {v} in their free time.",
            "{S}'s hobby is {v}.",
            "In their spare time, {s} likes {v}.",
            "{S} spends many weekends {v}.",
            "{v} is {s}'s favourite pastime.",
            "{S} is really into {v}.",
        ],
        values: &[
            "rock climbing",
            "watercolour painting",
            "birdwatching",
            "woodworking",
            "salsa dancing",
            "gardening",
            "sea kayaking",
            "pottery",
            "chess",
            "baking sourdough",
            "trail running",
            "knitting",
            "photography",
            "surfing",
            "astronomy",
        ],
        question: "What hobby does {s} have?",
    },
    Attribute {
        forms: &[
            "{S} is allergic to {v}.",
            "{S} has an allergy to {v}.",
            "{v} gives {s} an allergic reaction.",
            "{S} reacts badly to {v} because of an allergy.",
            "{S} must avoid {v}: allergic.",
        ],
        values: &[
            "peanuts",
            "shellfish",
            "penicillin",
            "cat hair",
            "pollen",
            "gluten",
            "latex",
            "bee stings",
            "sesame",
            "soy",
            "dust mites",
            "eggs",
            "kiwi fruit",
        ],
        question: "What is {s} allergic to?",
    },
    Attribute {
        forms: &[
            "{S} plays {v}.",
            "{S} can play {v}.",
            "{S} has been playing {v} for years.",
            "The instrument {s} plays is {v}.",
            "{S} practises {v} most evenings.",
        ],
        values: &[
            "the piano",
            "the violin",
            "the cello",
            "the drums",
            "the saxophone",
            "the ukulele",
            "the trumpet",
            "the harp",
            "the bass guitar",
            "the flute",
            "the accordion",
            "the clarinet",
        ],
        question: "Which instrument does {s} play?",
    },
    Attribute {
        forms: &[
            "{S} speaks {v}.",
            "{S} is fluent in {v}.",
            "{S} can hold a conversation in {v}.",
            "{v} is a language {s} speaks well.",
            "{S} learned to speak {v}.",
        ],
        values: &[
            "Spanish",
            "Japanese",
            "Portuguese",
            "Swahili",
            "Mandarin",
            "Polish",
            "Arabic",
            "Italian",
            "Korean",
            "Dutch",
            "Greek",
            "Hindi",
            "Turkish",
        ],
        question: "What language does {s} speak?",
    },
    Attribute {
        forms: &[
            "{S} has {v}.",
            "{S} owns {v}.",
            "{S} shares the flat with {v}.",
            "At home, {s} looks after {v}.",
            "{S} adopted {v}.",
        ],
        values: &[
            "a golden retriever",
            "a tabby cat",
            "a grey parrot",
            "two rabbits",
            "a border collie",
            "a tortoise",
            "a pair of goldfish",
            "a husky",
            "a ferret",
            "a bearded dragon",
            "a Siamese cat",
            "a dachshund",
        ],
        question: "What pet does {s} have?",
    },
    Attribute {
        forms: &[
            "{S} wants to {v}.",
            "{S}'s goal is to {v}.",
            "{S} hopes to {v} one day.",
            "One of {s}'s ambitions is to {v}.",
            "{S} dreams of being able to {v}.",
            "{S} is planning to {v}.",
        ],
        values: &[
            "run a marathon",
            "learn to sail",
            "open a bakery",
            "write a novel",
            "climb Kilimanjaro",
            "learn to code",
            "visit Patagonia",
            "build a cabin",
            "get a pilot licence",
            "cycle across Europe",
            "start a podcast",
            "learn the tango",
        ],
        question: "What does {s} want to do?",
    },
    Attribute {
        forms: &[
            "{S}'s favourite author is {v}.",
            "{S} loves books by {v}.",
            "{S} reads everything {v} writes.",
            "The writer {s} likes best is {v}.",
            "{S} admires the novels of {v}.",
        ],
        values: &[
            "Ursula Le Guin",
            "Haruki Murakami",
            "Toni Morrison",
            "Italo Calvino",
            "Chimamanda Adichie",
            "Terry Pratchett",
            "Jane Austen",
            "Kazuo Ishiguro",
            "Octavia Butler",
            "Gabriel Marquez",
            "Isabel Allende",
            "Neil Gaiman",
        ],
        question: "Who is {s}'s favourite author?",
    },
    Attribute {
        forms: &[
            "{S} is afraid of {v}.",
            "{S} has a fear of {v}.",
            "{v} frighten {s}.",
            "{S} gets scared of {v}.",
            "{S} is terrified of {v}.",
        ],
        values: &[
            "heights",
            "spiders",
            "deep water",
            "thunderstorms",
            "flying",
            "snakes",
            "the dark",
            "crowds",
            "clowns",
            "dentists",
            "wasps",
            "elevators",
        ],
        question: "What is {s} afraid of?",
    },
    Attribute {
        forms: &[
            "{S} {v} every morning.",
            "Every morning, {s} {v}.",
            "{S}'s morning routine: {s} {v}.",
            "{S} starts each day and {v}.",
            "Each day begins the same: {s} {v}.",
        ],
        values: &[
            "goes for a run",
            "meditates",
            "does yoga",
            "swims laps",
            "reads the news",
            "walks the dog",
            "writes in a journal",
            "cycles to the lake",
            "stretches",
            "practises scales",
            "bakes bread",
            "waters the garden",
        ],
        question: "What does {s} do in the morning?",
    },
    Attribute {
        forms: &[
            "{S} runs {v} kilometres a week.",
            "Each week {s} runs about {v} kilometres.",
            "{S}'s weekly running distance is {v} kilometres.",
            "{S} covers {v} kilometres running every week.",
        ],
        values: &[
            "10", "15", "20", "25", "30", "35", "40", "45", "50", "60", "70", "80",
        ],
        question: "How far does {s} run each week?",
    },
    Attribute {
        forms: &[
            "{S} supports {v}.",
            "{S} is a fan of {v}.",
            "{S} cheers for {v}.",
            "The team {s} follows is {v}.",
            "{S} never misses a game of {v}.",
        ],
        values: &[
            "Benfica",
            "Celtic",
            "the Raptors",
            "Boca Juniors",
            "the Yankees",
            "Ajax",
            "the All Blacks",
            "Napoli",
            "the Packers",
            "Galatasaray",
            "Fenerbahce",
            "Porto",
        ],
        question: "Which team does {s} support?",
    },
];

/// Who a fact is about: the user, someone named by their relation to the user, or a
/// friend by name.
const SUBJECTS: &[&str] = &[
    "the user",
    "the user's sister",
    "the user's brother",
    "the user's mother",
    "the user's father",
    "the user's wife",
    "the user's husband",
    "the user's manager",
    "the user's best friend",
    "the user's son",
    "the user's daughter",
    "the user's neighbour",
    "Anna",
    "Marco",
    "Priya",
    "Tomasz",
    "Yuki",
    "Amara",
    "Lucas",
    "Ines",
    "Omar",
    "Freya",
    "Diego",
    "Mei",
    "Kofi",
    "Elena",
    "Rahul",
    "Sofia",
    "Jonas",
    "Leila",
    "Mateo",
    "Hana",
    "Nikolai",
    "Zara",
    "Felix",
    "Ayesha",
    "Bruno",
    "Chloe",
    "Idris",
    "Maja",
    "Aiko",
    "Bram",
    "Carmen",
    "Dario",
    "Esme",
    "Farid",
    "Greta",
    "Hugo",
    "Ilse",
    "Jamal",
    "Kira",
    "Lorenzo",
    "Malik",
    "Nadia",
    "Oskar",
    "Paula",
    "Quentin",
    "Rosa",
    "Samir",
    "Tove",
    "Umar",
    "Vera",
    "Wanda",
    "Xavier",
    "Yara",
    "Zeno",
    "Alba",
    "Bilal",
    "Cora",
    "Dmitri",
    "Eun",
    "Femi",
];

/// Words a restatement may add, which change nothing it says.
const FILLERS: &[(&str, &str)] = &[
    ("", ""),
    ("Apparently, ", ""),
    ("", " as far as I know"),
    ("Note: ", ""),
    ("", ", it seems"),
];

/// One memory of the corpus.
#[derive(Debug, Clone)]
pub struct CorpusMemory {
    /// The memory's text.
    pub content: String,
    /// The fact it states (memories of one fact form a group).
    pub fact: usize,
}

/// A question and the facts that answer it.
#[derive(Debug, Clone)]
pub struct CorpusQuery {
    /// The question.
    pub text: String,
    /// The facts whose memories answer it (every value the subject has for the attribute).
    pub facts: Vec<usize>,
}

/// The corpus: memories in the order they are remembered, and questions.
#[derive(Debug, Clone)]
pub struct Corpus {
    /// Memories, shuffled.
    pub memories: Vec<CorpusMemory>,
    /// How many memories each fact has.
    pub group_sizes: Vec<usize>,
    /// Questions about grouped and single facts.
    pub queries: Vec<CorpusQuery>,
}

impl Corpus {
    /// Pairs of memories of one fact: what a perfect consolidation merges.
    pub fn in_group_pairs(&self) -> u64 {
        self.group_sizes
            .iter()
            .map(|&n| (n * n.saturating_sub(1) / 2) as u64)
            .sum()
    }

    /// Memories that share their fact with another.
    pub fn grouped_memories(&self) -> usize {
        self.group_sizes.iter().filter(|&&n| n > 1).sum()
    }
}

/// `text` with its first letter in capitals.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// `form` filled with `subject` and `value`.
fn fill(form: &str, subject: &str, value: &str) -> String {
    let text = form
        .replace("{S}", &capitalised(subject))
        .replace("{s}", subject)
        .replace("{v}", value);
    capitalised(&text)
}

/// A corpus of about `memories` memories: `grouped` of the facts (a share) are restated
/// two to six times, each restatement in another form (with a filler once the forms run
/// out); every fact is a distinct (attribute, subject, value). `queries` questions ask
/// for an attribute of a subject, half about grouped facts.
pub fn generate(seed: u64, memories: usize, grouped: f64, queries: usize) -> Corpus {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut facts: Vec<(usize, usize, usize)> = Vec::new();
    for (a, attribute) in ATTRIBUTES.iter().enumerate() {
        for s in 0..SUBJECTS.len() {
            for v in 0..attribute.values.len() {
                facts.push((a, s, v));
            }
        }
    }
    // A stable shuffle of every possible fact; the corpus takes them in that order.
    for i in (1..facts.len()).rev() {
        let j = rng.random_range(0..=i);
        facts.swap(i, j);
    }
    let mut out = Vec::new();
    let mut group_sizes = Vec::new();
    let mut chosen: Vec<(usize, usize, usize)> = Vec::new();
    for &(a, s, v) in &facts {
        if out.len() >= memories {
            break;
        }
        let fact = chosen.len();
        chosen.push((a, s, v));
        let size = if rng.random_bool(grouped) {
            rng.random_range(2..=6)
        } else {
            1
        };
        let size = size.min(memories - out.len());
        let attribute = &ATTRIBUTES[a];
        let mut forms: Vec<&str> = attribute.forms.to_vec();
        for i in (1..forms.len()).rev() {
            let j = rng.random_range(0..=i);
            forms.swap(i, j);
        }
        for n in 0..size {
            let form = forms[n % forms.len()];
            let mut text = fill(form, SUBJECTS[s], attribute.values[v]);
            if n >= forms.len() || rng.random_bool(0.2) {
                let (before, after) = FILLERS.choose(&mut rng).copied().unwrap_or(("", ""));
                let body = text.trim_end_matches('.');
                let body = if before.is_empty() {
                    body.to_owned()
                } else {
                    let mut chars = body.chars();
                    match chars.next() {
                        // Keep a name's capital; lower an ordinary first word.
                        Some(first) if body.starts_with("The ") || body.starts_with("Each ") => {
                            first.to_lowercase().chain(chars).collect()
                        }
                        _ => body.to_owned(),
                    }
                };
                text = format!("{before}{body}{after}.");
            }
            out.push(CorpusMemory {
                content: text,
                fact,
            });
        }
        group_sizes.push(size);
    }
    for i in (1..out.len()).rev() {
        let j = rng.random_range(0..=i);
        out.swap(i, j);
    }
    // Questions: half about grouped facts, half about single ones; each is answered by
    // every chosen fact of that attribute and subject.
    let grouped_facts: Vec<usize> = (0..chosen.len()).filter(|&f| group_sizes[f] > 1).collect();
    let single_facts: Vec<usize> = (0..chosen.len()).filter(|&f| group_sizes[f] == 1).collect();
    let mut asked = Vec::new();
    for n in 0..queries {
        let pool = if n % 2 == 0 {
            &grouped_facts
        } else {
            &single_facts
        };
        let Some(&fact) = pool.choose(&mut rng) else {
            continue;
        };
        let (a, s, _) = chosen[fact];
        let answers: Vec<usize> = chosen
            .iter()
            .enumerate()
            .filter(|(_, (fa, fs, _))| *fa == a && *fs == s)
            .map(|(f, _)| f)
            .collect();
        asked.push(CorpusQuery {
            text: fill(ATTRIBUTES[a].question, SUBJECTS[s], ""),
            facts: answers,
        });
    }
    Corpus {
        memories: out,
        group_sizes,
        queries: asked,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_corpus_and_groups_are_a_third() {
        let a = generate(7, 3_000, 0.15, 50);
        let b = generate(7, 3_000, 0.15, 50);
        assert_eq!(a.memories.len(), 3_000);
        let texts = |c: &Corpus| {
            c.memories
                .iter()
                .map(|m| m.content.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(texts(&a), texts(&b));
        assert!(
            a.grouped_memories() * 3 >= a.memories.len(),
            "{}",
            a.grouped_memories()
        );
        assert!(a.group_sizes.iter().all(|&n| (1..=6).contains(&n)));
        assert_eq!(a.queries.len(), 50);
        assert_ne!(texts(&a), texts(&generate(8, 3_000, 0.15, 50)));
    }

    #[test]
    fn a_group_restates_one_fact_in_different_words() {
        let corpus = generate(1, 2_000, 0.3, 0);
        let fact = (0..corpus.group_sizes.len())
            .find(|&f| corpus.group_sizes[f] >= 3)
            .unwrap();
        let members: Vec<&str> = corpus
            .memories
            .iter()
            .filter(|m| m.fact == fact)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(members.len(), corpus.group_sizes[fact]);
        let distinct: std::collections::HashSet<&&str> = members.iter().collect();
        assert_eq!(distinct.len(), members.len(), "{members:?}");
    }
}
