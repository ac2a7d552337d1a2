//! How the builder steers extraction: instructions (what to keep, what to ignore), custom
//! categories the classifier labels memories with, and the language memories are written in.
//! A deployment sets defaults (`LongTermConfig::settings`, from `[memory]`); a profile may
//! set its own, stored in the deployment's key-value store beside the index outbox.

use memory_core::{MemoryError, Result, TextLanguage};
use serde::{Deserialize, Serialize};

use super::core::Core;

/// Key-value keys of profile settings live under this prefix and the profile name.
pub(super) const SETTINGS_PREFIX: &str = "profile-settings/";

/// The most characters of extraction instructions.
pub const MAX_INSTRUCTIONS_CHARS: usize = 4_000;

/// The most categories of a profile.
pub const MAX_CATEGORIES: usize = 32;

/// The metadata key an extracted or remembered memory's categories are stored under (a list
/// of category names), so they filter like any metadata: `{"categories": "travel"}`.
pub const CATEGORIES_KEY: &str = "categories";

/// A label the classifier may give memories, with what it means.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Category {
    /// Its name: 1 to 40 of `a-z 0-9 _ -`.
    pub name: String,
    /// What belongs in it, for the classifier (at most 200 characters).
    #[serde(default)]
    pub description: String,
}

/// Extraction steering of a deployment or a profile; every part is optional.
///
/// ```
/// use memory_engine::long_term::{Category, ProfileSettings};
/// let settings = ProfileSettings {
///     instructions: Some("Keep dietary needs; ignore small talk about the weather.".into()),
///     categories: vec![Category { name: "travel".into(), description: "trips and bookings".into() }],
///     language: None,
/// };
/// assert!(settings.validated().is_ok());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSettings {
    /// What to keep and what to ignore, in the builder's words; added to the extraction and
    /// verification prompts as data (at most [`MAX_INSTRUCTIONS_CHARS`] characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Labels the classifier chooses from (at most [`MAX_CATEGORIES`]); a memory keeps its
    /// kind and gets zero or more of these under the metadata key [`CATEGORIES_KEY`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<Category>,
    /// The language memories are written in ("English", "fr"); `None`: the language of the
    /// messages they came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl ProfileSettings {
    /// The settings, checked: instructions and language trimmed and bounded, category names
    /// well-formed and distinct. An error names what is wrong.
    pub fn validated(mut self) -> Result<Self> {
        self.instructions = self
            .instructions
            .map(|i| i.trim().to_owned())
            .filter(|i| !i.is_empty());
        if let Some(text) = &self.instructions
            && text.chars().count() > MAX_INSTRUCTIONS_CHARS
        {
            return Err(MemoryError::invalid(format!(
                "instructions have {} characters; at most {MAX_INSTRUCTIONS_CHARS}",
                text.chars().count()
            )));
        }
        if self.categories.len() > MAX_CATEGORIES {
            return Err(MemoryError::invalid(format!(
                "{} categories; at most {MAX_CATEGORIES}",
                self.categories.len()
            )));
        }
        let mut seen = std::collections::HashSet::new();
        for category in &mut self.categories {
            let name = &category.name;
            let well_formed = (1..=40).contains(&name.len())
                && name.bytes().all(|b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-'
                });
            if !well_formed {
                return Err(MemoryError::invalid(format!(
                    "category name {name:?}: 1 to 40 of a-z 0-9 _ -"
                )));
            }
            if !seen.insert(name.clone()) {
                return Err(MemoryError::invalid(format!(
                    "category {name:?} is listed twice"
                )));
            }
            category.description = category.description.trim().to_owned();
            if category.description.chars().count() > 200 {
                return Err(MemoryError::invalid(format!(
                    "category {name:?}: the description is longer than 200 characters"
                )));
            }
        }
        self.language = self
            .language
            .map(|l| l.trim().to_owned())
            .filter(|l| !l.is_empty());
        if let Some(language) = &self.language {
            let plain = language.chars().count() <= 40
                && language
                    .chars()
                    .all(|c| c.is_alphabetic() || c == ' ' || c == '-' || c == '_');
            if !plain {
                return Err(MemoryError::invalid(format!(
                    "language {language:?}: a language name or code such as \"English\" or \"fr\""
                )));
            }
        }
        Ok(self)
    }

    /// What applies to a profile: the deployment's instructions then the profile's (both
    /// are followed), the profile's categories and language where it has them, else the
    /// deployment's.
    pub fn layered(deployment: &Self, profile: &Self) -> Self {
        let instructions = match (&deployment.instructions, &profile.instructions) {
            (Some(d), Some(p)) => Some(format!("{d}\n{p}")),
            (d, p) => p.clone().or_else(|| d.clone()),
        };
        Self {
            instructions,
            categories: if profile.categories.is_empty() {
                deployment.categories.clone()
            } else {
                profile.categories.clone()
            },
            language: profile
                .language
                .clone()
                .or_else(|| deployment.language.clone()),
        }
    }

    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl Core {
    /// The profile's own settings (empty when it has none).
    pub(super) async fn profile_settings(&self, profile: &str) -> Result<ProfileSettings> {
        memory_core::validate_profile_name(profile)?;
        if !self.profiles.exists(profile).await? {
            return Err(MemoryError::not_found("profile", profile));
        }
        self.stored_settings(profile).await
    }

    /// The profile's stored settings, whether or not the profile exists yet (a first write
    /// to a new profile is steered by the deployment's alone).
    pub(super) async fn stored_settings(&self, profile: &str) -> Result<ProfileSettings> {
        match self
            .backends
            .outbox
            .get(&format!("{SETTINGS_PREFIX}{profile}"))
            .await?
        {
            Some(stored) => Ok(serde_json::from_str(&stored)?),
            None => Ok(ProfileSettings::default()),
        }
    }

    /// Replaces the profile's own settings (checked first; empty settings remove them). The
    /// profile is created if it does not exist, as a first write to it would.
    pub(super) async fn set_profile_settings(
        &self,
        profile: &str,
        settings: ProfileSettings,
    ) -> Result<ProfileSettings> {
        let settings = settings.validated()?;
        self.backends.store(profile).await?;
        let key = format!("{SETTINGS_PREFIX}{profile}");
        if settings.is_empty() {
            self.backends.outbox.delete(&key).await?;
        } else {
            self.backends
                .outbox
                .set(&key, &serde_json::to_string(&settings)?)
                .await?;
        }
        Ok(settings)
    }

    /// What steers extraction for the profile: the deployment's settings under its own.
    pub(super) async fn effective_settings(&self, profile: &str) -> Result<ProfileSettings> {
        memory_core::validate_profile_name(profile)?;
        let own = self.stored_settings(profile).await?;
        Ok(ProfileSettings::layered(&self.config.settings, &own))
    }
}

/// The text-index language a settings language names: a name the text index knows
/// ("french") or a two-letter code ("fr"; "zh", "ja" and "ko" name CJK); `None` otherwise.
///
/// ```
/// use memory_core::TextLanguage;
/// use memory_engine::long_term::text_language_named;
/// assert_eq!(text_language_named("French"), Some(TextLanguage::French));
/// assert_eq!(text_language_named("nl"), Some(TextLanguage::Dutch));
/// assert_eq!(text_language_named("Klingon"), None);
/// ```
pub fn text_language_named(name: &str) -> Option<TextLanguage> {
    let name = name.trim().to_lowercase();
    if let Ok(language) = name.parse::<TextLanguage>() {
        return Some(language);
    }
    Some(match name.as_str() {
        "ar" => TextLanguage::Arabic,
        "da" => TextLanguage::Danish,
        "nl" => TextLanguage::Dutch,
        "en" => TextLanguage::English,
        "fi" => TextLanguage::Finnish,
        "fr" => TextLanguage::French,
        "de" => TextLanguage::German,
        "el" => TextLanguage::Greek,
        "hu" => TextLanguage::Hungarian,
        "it" => TextLanguage::Italian,
        "no" | "nb" | "nn" => TextLanguage::Norwegian,
        "pt" => TextLanguage::Portuguese,
        "ro" => TextLanguage::Romanian,
        "ru" => TextLanguage::Russian,
        "es" => TextLanguage::Spanish,
        "sv" => TextLanguage::Swedish,
        "ta" => TextLanguage::Tamil,
        "tr" => TextLanguage::Turkish,
        "zh" | "ja" | "ko" | "chinese" | "japanese" | "korean" => TextLanguage::Cjk,
        _ => return None,
    })
}

impl Core {
    /// The languages a profile's relative dates are read in besides English: its text
    /// index's, and the one its settings name when the text index supports it.
    pub(super) async fn date_languages(
        &self,
        profile: &str,
        settings: &ProfileSettings,
    ) -> Result<Vec<TextLanguage>> {
        let index = self.backends.text.text_index(profile).await?;
        let mut languages = vec![index.capabilities().language];
        if let Some(named) = settings.language.as_deref().and_then(text_language_named) {
            languages.push(named);
        }
        languages.retain(|l| *l != TextLanguage::English);
        languages.dedup();
        Ok(languages)
    }
}
