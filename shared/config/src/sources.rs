use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::Config;

/// The prefix of every environment variable the configuration reads; `__` separates levels.
pub const ENV_PREFIX: &str = "OTC__";

/// Where one configuration value came from, so that an error can name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File { path: PathBuf, key: String },
    Env { var: String },
    Flag { flag: String },
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, key } => write!(f, "{key} (config file {})", path.display()),
            Origin::Env { var } => write!(f, "{var} (environment)"),
            Origin::Flag { flag } => write!(f, "{flag} (command line)"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("config file {} is not valid TOML: {message}", path.display())]
    Syntax { path: PathBuf, message: String },
    /// `key` names the source of the bad value: the environment variable, the flag or the file key.
    #[error("{key}: {message}")]
    Invalid { key: String, message: String },
}

/// The three layers, lowest first. Build one with [`Sources::new`], then add flags.
#[derive(Debug, Default, Clone)]
pub struct Sources {
    file: Option<PathBuf>,
    env: Vec<(String, String)>,
    flags: Vec<(String, String, String)>,
}

impl Sources {
    /// `file`: the config file, if any (it must exist). `env`: the process environment; only
    /// `OTC__` variables are read.
    pub fn new(file: Option<PathBuf>, env: impl IntoIterator<Item = (String, String)>) -> Self {
        let env = env.into_iter().filter(|(k, _)| k.starts_with(ENV_PREFIX)).collect();
        Self { file, env, flags: Vec::new() }
    }

    /// A value given on the command line: `key` is the dotted path (`server.listen`), `flag` the
    /// flag's own spelling for error messages (`--listen`).
    pub fn flag(mut self, key: &str, value: impl Into<String>, flag: &str) -> Self {
        self.flags.push((key.to_string(), value.into(), flag.to_string()));
        self
    }

    pub fn load(&self) -> Result<Loaded, ConfigError> {
        let mut tree = Table::new();
        let mut origins = BTreeMap::new();
        // Values from the environment and flags whose type was guessed from their text.
        let mut guessed = BTreeMap::new();

        if let Some(path) = &self.file {
            let text =
                std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.clone(), source })?;
            tree = text
                .parse::<Table>()
                .map_err(|e| ConfigError::Syntax { path: path.clone(), message: e.to_string() })?;
            record_file_origins(&tree, "", path, &mut origins);
        }
        for (var, raw) in &self.env {
            let key = env_key(var)?;
            let origin = Origin::Env { var: var.clone() };
            insert(&mut tree, &key, guess(raw), &origin)?;
            guessed.insert(key.clone(), raw.clone());
            origins.insert(key, origin);
        }
        for (key, raw, flag) in &self.flags {
            let origin = Origin::Flag { flag: flag.clone() };
            insert(&mut tree, key, guess(raw), &origin)?;
            guessed.insert(key.clone(), raw.clone());
            origins.insert(key.clone(), origin);
        }

        // A guessed number or boolean where the field wants text is retried as text.
        loop {
            let mut unknown: Vec<String> = Vec::new();
            let value = Value::Table(tree.clone());
            let mut on_ignored = |path: serde_ignored::Path<'_>| unknown.push(path.to_string());
            let result: Result<Config, _> =
                serde_path_to_error::deserialize(serde_ignored::Deserializer::new(value, &mut on_ignored));
            match result {
                Ok(config) => {
                    let unknown_keys = unknown
                        .into_iter()
                        .map(|key| {
                            let origin = origin_of(&origins, &key);
                            UnknownKey { key, origin }
                        })
                        .collect();
                    return Ok(Loaded { config, unknown_keys, origins, file: self.file.clone() });
                }
                Err(err) => {
                    let key = err.path().to_string();
                    let message = err.inner().to_string();
                    if message.starts_with("invalid type")
                        && let Some(raw) = guessed.remove(&key)
                    {
                        let origin = origins[&key].clone();
                        insert(&mut tree, &key, Value::String(raw), &origin)?;
                        continue;
                    }
                    return Err(ConfigError::Invalid { key: label(&origins, &key), message });
                }
            }
        }
    }
}

/// An accepted key that no part of the configuration reads (a typo, most often).
#[derive(Debug, Clone)]
pub struct UnknownKey {
    pub key: String,
    pub origin: Option<Origin>,
}

impl fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.origin {
            Some(origin) => write!(f, "unknown configuration key {origin}"),
            None => write!(f, "unknown configuration key {}", self.key),
        }
    }
}

/// A loaded configuration with what loading learnt about it.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    pub unknown_keys: Vec<UnknownKey>,
    pub file: Option<PathBuf>,
    origins: BTreeMap<String, Origin>,
}

impl Loaded {
    /// [`Config::validate`], with each problem naming where its value came from.
    pub fn validate(&self) -> Result<(), Vec<ConfigError>> {
        self.config.validate().map_err(|problems| {
            problems
                .into_iter()
                .map(|problem| match problem {
                    ConfigError::Invalid { key, message } => {
                        ConfigError::Invalid { key: label(&self.origins, &key), message }
                    }
                    other => other,
                })
                .collect()
        })
    }

    /// Where a dotted key's value came from; `None` means the built-in default.
    pub fn origin(&self, key: &str) -> Option<Origin> {
        origin_of(&self.origins, key)
    }
}

fn origin_of(origins: &BTreeMap<String, Origin>, key: &str) -> Option<Origin> {
    // The key itself, or the nearest enclosing key that was set as a whole.
    let mut probe = key;
    loop {
        if let Some(origin) = origins.get(probe) {
            return Some(origin.clone());
        }
        probe = probe.rsplit_once('.')?.0;
    }
}

fn label(origins: &BTreeMap<String, Origin>, key: &str) -> String {
    match origin_of(origins, key) {
        Some(origin) => origin.to_string(),
        None => key.to_string(),
    }
}

fn env_key(var: &str) -> Result<String, ConfigError> {
    let rest = &var[ENV_PREFIX.len()..];
    let parts: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
    if parts.iter().any(String::is_empty) {
        return Err(ConfigError::Invalid {
            key: var.to_string(),
            message: "expected OTC__SECTION__KEY (an empty name between `__` separators)".into(),
        });
    }
    Ok(parts.join("."))
}

/// The type a text value most likely has; a wrong guess is retried as text.
fn guess(raw: &str) -> Value {
    match raw {
        "true" => Value::Boolean(true),
        "false" => Value::Boolean(false),
        _ => {
            if let Ok(n) = raw.parse::<i64>() {
                Value::Integer(n)
            } else if raw.contains('.')
                && let Ok(x) = raw.parse::<f64>()
                && x.is_finite()
            {
                Value::Float(x)
            } else {
                Value::String(raw.to_string())
            }
        }
    }
}

fn insert(tree: &mut Table, key: &str, value: Value, origin: &Origin) -> Result<(), ConfigError> {
    let mut parts = key.split('.').peekable();
    let mut table = tree;
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            table.insert(part.to_string(), value);
            return Ok(());
        }
        let entry = table.entry(part.to_string()).or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            // A section given as a plain value by a lower layer: the more specific value wins.
            *entry = Value::Table(Table::new());
        }
        table = entry.as_table_mut().expect("just made a table");
    }
    Err(ConfigError::Invalid { key: origin.to_string(), message: "empty key".into() })
}

fn record_file_origins(table: &Table, prefix: &str, path: &Path, out: &mut BTreeMap<String, Origin>) {
    for (k, v) in table {
        let key = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        out.insert(key.clone(), Origin::File { path: path.to_path_buf(), key: key.clone() });
        if let Value::Table(inner) = v {
            record_file_origins(inner, &key, path, out);
        }
    }
}
