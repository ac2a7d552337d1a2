//! The language a text index analyzes text as: which words count as one (stemming), which
//! are dropped (stop words), and how text without spaces between words is cut (CJK).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::MemoryError;

/// How a text index turns text into searchable words: a language with a stemmer, or
/// [`TextLanguage::Cjk`] for Chinese, Japanese and Korean (overlapping two-character pieces,
/// so a word is found without a dictionary to cut the text).
///
/// An index records its language when it is made; reopening it as another language is an
/// error (the stored words were cut differently), and a search is analyzed the same way.
///
/// ```
/// use memory_core::TextLanguage;
/// let french: TextLanguage = "french".parse().unwrap();
/// assert_eq!(french.name(), "french");
/// assert_eq!(TextLanguage::default(), TextLanguage::English);
/// assert!("klingon".parse::<TextLanguage>().unwrap_err().to_string().contains("english"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum TextLanguage {
    Arabic,
    Danish,
    Dutch,
    #[default]
    English,
    Finnish,
    French,
    German,
    Greek,
    Hungarian,
    Italian,
    Norwegian,
    Portuguese,
    Romanian,
    Russian,
    Spanish,
    Swedish,
    Tamil,
    Turkish,
    /// Chinese, Japanese and Korean: runs of CJK characters as overlapping two-character
    /// pieces (a lone character as itself), other words lowercased and unstemmed.
    Cjk,
}

impl TextLanguage {
    /// Every language, in the order of [`TextLanguage::name`]s shown to users.
    pub const ALL: [TextLanguage; 19] = [
        Self::Arabic,
        Self::Danish,
        Self::Dutch,
        Self::English,
        Self::Finnish,
        Self::French,
        Self::German,
        Self::Greek,
        Self::Hungarian,
        Self::Italian,
        Self::Norwegian,
        Self::Portuguese,
        Self::Romanian,
        Self::Russian,
        Self::Spanish,
        Self::Swedish,
        Self::Tamil,
        Self::Turkish,
        Self::Cjk,
    ];

    /// The name used in configuration (`english`, `french`, ..., `cjk`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Arabic => "arabic",
            Self::Danish => "danish",
            Self::Dutch => "dutch",
            Self::English => "english",
            Self::Finnish => "finnish",
            Self::French => "french",
            Self::German => "german",
            Self::Greek => "greek",
            Self::Hungarian => "hungarian",
            Self::Italian => "italian",
            Self::Norwegian => "norwegian",
            Self::Portuguese => "portuguese",
            Self::Romanian => "romanian",
            Self::Russian => "russian",
            Self::Spanish => "spanish",
            Self::Swedish => "swedish",
            Self::Tamil => "tamil",
            Self::Turkish => "turkish",
            Self::Cjk => "cjk",
        }
    }
}

impl fmt::Display for TextLanguage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TextLanguage {
    type Err = MemoryError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|l| l.name()).collect();
                MemoryError::invalid(format!(
                    "unknown text language {s:?}; one of: {}",
                    names.join(", ")
                ))
            })
    }
}
