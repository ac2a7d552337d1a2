//! A profile's extraction settings: instructions (what to keep, what to ignore), custom
//! categories and the language memories are written in.

use axum::Extension;
use axum::Json;
use axum::extract::Path;
use memory_engine::long_term::{Category, ProfileSettings};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::{ApiResult, ErrorBody};
use crate::state::AppState;

/// A category the classifier may give memories.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CategoryBody {
    /// 1 to 40 of `a-z 0-9 _ -`.
    pub name: String,
    /// What belongs in it (at most 200 characters).
    #[serde(default)]
    pub description: String,
}

/// Extraction settings; every part is optional.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Settings {
    /// What to keep and what to ignore (at most 4,000 characters), added to the extraction
    /// and verification prompts as data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Labels the classifier chooses from (at most 32); a memory gets the ones that fit in
    /// its metadata under `categories`, so `{"categories": "travel"}` filters by them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<CategoryBody>,
    /// The language memories are written in ("English", "fr"); absent: the language of
    /// the messages they come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
}

impl From<Settings> for ProfileSettings {
    fn from(body: Settings) -> Self {
        Self {
            instructions: body.instructions,
            categories: body
                .categories
                .into_iter()
                .map(|c| Category {
                    name: c.name,
                    description: c.description,
                })
                .collect(),
            language: body.language,
        }
    }
}

impl From<ProfileSettings> for Settings {
    fn from(settings: ProfileSettings) -> Self {
        Self {
            instructions: settings.instructions,
            categories: settings
                .categories
                .into_iter()
                .map(|c| CategoryBody {
                    name: c.name,
                    description: c.description,
                })
                .collect(),
            language: settings.language,
        }
    }
}

/// The profile's own settings and what applies (the deployment's beneath them).
#[derive(Debug, Serialize, ToSchema)]
pub struct SettingsView {
    /// The profile's own.
    pub settings: Settings,
    /// What extraction uses: the deployment's instructions then the profile's; the profile's
    /// categories and language where set, else the deployment's.
    pub effective: Settings,
}

async fn view(state: &AppState, profile: &str) -> ApiResult<Json<SettingsView>> {
    Ok(Json(SettingsView {
        settings: state.memory.profile_settings(profile).await?.into(),
        effective: state.memory.effective_settings(profile).await?.into(),
    }))
}

/// The profile's extraction settings.
#[utoipa::path(get, path = "/v1/profiles/{profile}/settings", tag = "long-term",
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 200, description = "Its own and the effective settings", body = SettingsView),
        (status = 404, description = "No such profile", body = ErrorBody)))]
pub async fn get_settings(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
) -> ApiResult<Json<SettingsView>> {
    view(&state, &profile).await
}

/// Replaces the profile's extraction settings (an empty object removes them); the profile
/// is created if needed. Ingest jobs use them from their next stage on.
#[utoipa::path(put, path = "/v1/profiles/{profile}/settings", tag = "long-term",
    request_body = Settings,
    params(("profile" = String, Path, description = "Profile name")),
    responses(
        (status = 200, description = "Stored", body = SettingsView),
        (status = 400, description = "Invalid settings", body = ErrorBody)))]
pub async fn put_settings(
    Extension(state): Extension<AppState>,
    Path(profile): Path<String>,
    Json(body): Json<Settings>,
) -> ApiResult<Json<SettingsView>> {
    state
        .memory
        .set_profile_settings(&profile, body.into())
        .await?;
    view(&state, &profile).await
}
