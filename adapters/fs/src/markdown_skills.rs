use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use gray_matter::Matter;
use gray_matter::engine::YAML;
use memory_core::ports::{SkillStore, SkillSummary};
use memory_core::{MemoryError, Result};
use serde::Deserialize;
use tracing::warn;

use crate::error::io;

/// A directory of Markdown skills: `deploy.md` is the skill `deploy`, `ops/rollback.md` is
/// `ops/rollback`. The description comes from the front matter:
///
/// ```markdown
/// ---
/// description: How to ship a release
/// ---
/// # Deploy
/// ...
/// ```
///
/// `get` returns the document without its front matter; `put` writes one (creating folders).
#[derive(Debug, Clone)]
pub struct MarkdownSkills {
    root: PathBuf,
}

#[derive(Deserialize, Default)]
struct FrontMatter {
    description: Option<String>,
}

impl MarkdownSkills {
    /// Skills under `root` (created on the first `put` if missing).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The file of a key; keys are relative paths of plain names (no `..`, no leading `/`).
    fn path_of(&self, key: &str) -> Result<PathBuf> {
        let relative = Path::new(key);
        let valid = !key.is_empty()
            && relative
                .components()
                .all(|c| matches!(c, Component::Normal(part) if !part.to_string_lossy().starts_with('.')));
        if !valid {
            return Err(MemoryError::invalid(format!(
                "skill key {key:?} must be a relative path of plain names (letters, digits, '-', '_', '/')"
            )));
        }
        Ok(self.root.join(format!("{key}.md")))
    }

    /// The description from the front matter, and the body exactly as written after it.
    fn parse(text: &str) -> (Option<String>, String) {
        let Some(body) = body_after_front_matter(text) else {
            return (None, text.to_owned());
        };
        let matter = Matter::<YAML>::new();
        let description = match matter.parse::<FrontMatter>(text) {
            Ok(parsed) => parsed.data.and_then(|d| d.description),
            Err(error) => {
                warn!(%error, "unreadable front matter; no description");
                None
            }
        };
        (
            description.filter(|d| !d.trim().is_empty()),
            body.to_owned(),
        )
    }

    fn collect(dir: &Path, root: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir == root => return Ok(()),
            Err(e) => return Err(io(dir, e)),
        };
        for entry in entries {
            let entry = entry.map_err(|e| io(dir, e))?;
            let path = entry.path();
            if entry.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let kind = entry.file_type().map_err(|e| io(&path, e))?;
            if kind.is_dir() {
                Self::collect(&path, root, out)?;
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
        Ok(())
    }

    fn key_of(&self, path: &Path) -> Option<String> {
        let relative = path.strip_prefix(&self.root).ok()?.with_extension("");
        let parts: Vec<String> = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        Some(parts.join("/"))
    }
}

#[async_trait]
impl SkillStore for MarkdownSkills {
    async fn list(&self) -> Result<Vec<SkillSummary>> {
        let this = self.clone();
        let mut skills = tokio::task::spawn_blocking(move || -> Result<Vec<SkillSummary>> {
            let mut files = Vec::new();
            Self::collect(&this.root, &this.root, &mut files)?;
            let mut out = Vec::with_capacity(files.len());
            for file in files {
                let text = std::fs::read_to_string(&file).map_err(|e| io(&file, e))?;
                if let Some(key) = this.key_of(&file) {
                    out.push(SkillSummary {
                        key,
                        description: Self::parse(&text).0,
                    });
                }
            }
            Ok(out)
        })
        .await
        .map_err(crate::error::task)??;
        skills.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(skills)
    }

    async fn get(&self, key: &str) -> Result<Option<String>> {
        let path = self.path_of(key)?;
        match tokio::fs::read_to_string(&path).await {
            Ok(text) => Ok(Some(Self::parse(&text).1)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path, e)),
        }
    }

    async fn put(&self, key: &str, content: &str, description: Option<String>) -> Result<()> {
        let path = self.path_of(key)?;
        if let Some(dir) = path.parent() {
            tokio::fs::create_dir_all(dir)
                .await
                .map_err(|e| io(dir, e))?;
        }
        let mut text = String::new();
        if let Some(description) = description.filter(|d| !d.trim().is_empty()) {
            // A JSON string is a valid YAML double-quoted scalar.
            text.push_str("---\ndescription: ");
            text.push_str(&serde_json::to_string(&description)?);
            text.push_str("\n---\n");
        }
        text.push_str(content);
        // Write a sibling temp file, then rename: readers never see half a document.
        let temp = path.with_extension("md.tmp");
        tokio::fs::write(&temp, text)
            .await
            .map_err(|e| io(&temp, e))?;
        tokio::fs::rename(&temp, &path)
            .await
            .map_err(|e| io(&path, e))
    }

    async fn delete(&self, key: &str) -> Result<bool> {
        let path = self.path_of(key)?;
        match tokio::fs::remove_file(&path).await {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(io(&path, e)),
        }
    }
}

/// The text after a leading `---` front-matter block, or `None` without one.
fn body_after_front_matter(text: &str) -> Option<&str> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            return Some(&rest[offset..]);
        }
    }
    None
}
