use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::tool::ToolPart;

/// One part of a message, discriminated by its JSON `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    /// `text`: what the user or model said. The only part full-text search indexes.
    Text(TextPart),
    /// `reasoning`: the model's visible reasoning.
    Reasoning(ReasoningPart),
    /// `tool-<name>`: a call of a statically known tool.
    Tool(ToolPart),
    /// `dynamic-tool`: a call of a tool known only at run time (`toolName` field).
    DynamicTool(ToolPart),
    /// `file`: an attachment by URL (often a data URL).
    File(FilePart),
    /// `source-url` / `source-document`: a citation.
    Source(SourcePart),
    /// `step-start`: a boundary between model steps. Any extra fields are kept.
    StepStart(Map<String, Value>),
    /// `data-<name>`: application data.
    Data(DataPart),
    /// Any other part type, kept verbatim (including its `type`).
    Unknown(Map<String, Value>),
}

/// A `text` part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextPart {
    /// The text.
    pub text: String,
    /// Other fields (`state`, `providerMetadata`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `reasoning` part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReasoningPart {
    /// The reasoning text.
    pub text: String,
    /// Other fields.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `file` part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FilePart {
    /// IANA media type.
    #[serde(rename = "mediaType")]
    pub media_type: String,
    /// Where the file is (URL or data URL).
    pub url: String,
    /// Other fields (`filename`, `providerMetadata`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `source-url` or `source-document` part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SourcePart {
    /// `url` or `document` (the part type without `source-`).
    #[serde(skip)]
    pub kind: String,
    /// The source's id.
    #[serde(rename = "sourceId")]
    pub source_id: String,
    /// Other fields (`url`, `title`, `mediaType`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `data-<name>` part.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataPart {
    /// The name after `data-`.
    #[serde(skip)]
    pub name: String,
    /// The payload.
    #[serde(
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub data: Option<Value>,
    /// Other fields (`id`, `transient`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Part {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text(TextPart {
            text: text.into(),
            extra: Map::new(),
        })
    }

    /// The part's JSON `type`.
    pub fn type_name(&self) -> String {
        match self {
            Part::Text(_) => "text".into(),
            Part::Reasoning(_) => "reasoning".into(),
            Part::Tool(t) => format!("tool-{}", t.tool_name),
            Part::DynamicTool(_) => "dynamic-tool".into(),
            Part::File(_) => "file".into(),
            Part::Source(s) => format!("source-{}", s.kind),
            Part::StepStart(_) => "step-start".into(),
            Part::Data(d) => format!("data-{}", d.name),
            Part::Unknown(map) => map
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        }
    }

    /// The tool part, for `tool-<name>` and `dynamic-tool`.
    pub fn as_tool(&self) -> Option<&ToolPart> {
        match self {
            Part::Tool(t) | Part::DynamicTool(t) => Some(t),
            _ => None,
        }
    }

    /// Mutable access to the tool part, for `tool-<name>` and `dynamic-tool`.
    pub fn as_tool_mut(&mut self) -> Option<&mut ToolPart> {
        match self {
            Part::Tool(t) | Part::DynamicTool(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct Tagged<'a, T: Serialize> {
    #[serde(rename = "type")]
    ty: &'a str,
    #[serde(flatten)]
    inner: &'a T,
}

#[derive(Serialize)]
struct TaggedDynamic<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    #[serde(rename = "toolName")]
    tool_name: &'a str,
    #[serde(flatten)]
    inner: &'a ToolPart,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        fn tagged<S: Serializer, T: Serialize>(
            s: S,
            ty: &str,
            inner: &T,
        ) -> Result<S::Ok, S::Error> {
            Tagged { ty, inner }.serialize(s)
        }
        match self {
            Part::Text(p) => tagged(serializer, "text", p),
            Part::Reasoning(p) => tagged(serializer, "reasoning", p),
            Part::Tool(p) => tagged(serializer, &format!("tool-{}", p.tool_name), p),
            Part::DynamicTool(p) => TaggedDynamic {
                ty: "dynamic-tool",
                tool_name: &p.tool_name,
                inner: p,
            }
            .serialize(serializer),
            Part::File(p) => tagged(serializer, "file", p),
            Part::Source(p) => tagged(serializer, &format!("source-{}", p.kind), p),
            Part::StepStart(extra) => tagged(serializer, "step-start", extra),
            Part::Data(p) => tagged(serializer, &format!("data-{}", p.name), p),
            Part::Unknown(map) => map.serialize(serializer),
        }
    }
}

/// Moves a required string field out of a part's map.
fn take_string<E: serde::de::Error>(
    map: &mut Map<String, Value>,
    key: &str,
    ty: &str,
) -> Result<String, E> {
    match map.remove(key) {
        Some(Value::String(s)) => Ok(s),
        Some(_) => Err(E::custom(format!(
            "invalid `{ty}` part: `{key}` must be a string"
        ))),
        None => Err(E::custom(format!(
            "invalid `{ty}` part: missing field `{key}`"
        ))),
    }
}

/// Moves an optional string field out; a non-string value stays in the map (kept verbatim).
fn take_optional_string(map: &mut Map<String, Value>, key: &str) -> Option<String> {
    match map.get(key) {
        Some(Value::String(_)) => match map.remove(key) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

fn tool_part<E: serde::de::Error>(
    mut map: Map<String, Value>,
    ty: &str,
    tool_name: String,
) -> Result<ToolPart, E> {
    Ok(ToolPart {
        tool_name,
        tool_call_id: take_string(&mut map, "toolCallId", ty)?,
        state: take_string::<E>(&mut map, "state", ty)?.into(),
        input: map.remove("input"),
        output: map.remove("output"),
        error_text: take_optional_string(&mut map, "errorText"),
        extra: map,
    })
}

impl<'de> Deserialize<'de> for Part {
    /// Parses the part's map once and moves its fields into the typed variant (no second
    /// pass through `serde_json::from_value`): history reads decode thousands of parts.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut map = Map::deserialize(deserializer)?;
        let ty = match map.remove("type") {
            Some(Value::String(ty)) => ty,
            Some(_) => return Err(D::Error::custom("part `type` must be a string")),
            None => return Err(D::Error::custom("part has no `type` field")),
        };
        let part = match ty.as_str() {
            "text" => Part::Text(TextPart {
                text: take_string(&mut map, "text", &ty)?,
                extra: map,
            }),
            "reasoning" => Part::Reasoning(ReasoningPart {
                text: take_string(&mut map, "text", &ty)?,
                extra: map,
            }),
            "file" => Part::File(FilePart {
                media_type: take_string(&mut map, "mediaType", &ty)?,
                url: take_string(&mut map, "url", &ty)?,
                extra: map,
            }),
            "step-start" => Part::StepStart(map),
            "dynamic-tool" => {
                let name = take_string(&mut map, "toolName", &ty)?;
                Part::DynamicTool(tool_part(map, &ty, name)?)
            }
            _ => {
                if let Some(name) = ty.strip_prefix("tool-") {
                    Part::Tool(tool_part(map, &ty, name.to_owned())?)
                } else if let Some(name) = ty.strip_prefix("data-") {
                    Part::Data(DataPart {
                        name: name.to_owned(),
                        data: map.remove("data"),
                        extra: map,
                    })
                } else if let Some(kind) = ty.strip_prefix("source-") {
                    Part::Source(SourcePart {
                        kind: kind.to_owned(),
                        source_id: take_string(&mut map, "sourceId", &ty)?,
                        extra: map,
                    })
                } else {
                    let mut unknown = Map::with_capacity(map.len() + 1);
                    unknown.insert("type".to_owned(), Value::String(ty));
                    unknown.extend(map);
                    Part::Unknown(unknown)
                }
            }
        };
        Ok(part)
    }
}
