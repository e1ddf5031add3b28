//! `response_format`: concise returns the high-signal fields, detailed the full payload. The
//! format is an explicit `response_format`, else the legacy `verbosity` alias (terse is concise,
//! full is detailed), else the operator default, else detailed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResponseFormat {
    /// Only the fields a caller acts on.
    Concise,
    /// The full payload.
    Detailed,
}

/// The legacy alias of `response_format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verbosity {
    /// Same as response_format concise.
    Terse,
    /// Same as response_format detailed.
    Full,
}

/// The format for a call: `response_format`, else `verbosity`, else `default`.
pub fn resolve(
    response_format: Option<ResponseFormat>,
    verbosity: Option<Verbosity>,
    default: ResponseFormat,
) -> ResponseFormat {
    match (response_format, verbosity) {
        (Some(format), _) => format,
        (None, Some(Verbosity::Terse)) => ResponseFormat::Concise,
        (None, Some(Verbosity::Full)) => ResponseFormat::Detailed,
        (None, None) => default,
    }
}

/// The name a unit enum variant is serialized as (a check's or flag's snake_case name).
pub fn variant_name(value: impl Serialize) -> String {
    serde_json::to_value(value).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_then_alias_then_default() {
        use ResponseFormat::{Concise, Detailed};
        assert_eq!(resolve(Some(Concise), Some(Verbosity::Full), Detailed), Concise);
        assert_eq!(resolve(None, Some(Verbosity::Terse), Detailed), Concise);
        assert_eq!(resolve(None, Some(Verbosity::Full), Concise), Detailed);
        assert_eq!(resolve(None, None, Concise), Concise);
    }
}
