//! The query language of ranked search: words (any of them, ranked), `"quoted phrases"` (each
//! must occur, its words in order), `-word` and `-"phrase"` (notes holding them are left out),
//! `path:text` (the note's path contains it, any case; several are alternatives) and `tag:name`
//! (the note has the tag or one nested under it; several must all hold).

use crate::tokenize::terms;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Query {
    /// Ranked words (folded), without repeats.
    pub words: Vec<String>,
    /// Phrases that must occur, as their folded tokens (a word that folds into several
    /// tokens, such as `e-mail`, is a phrase too).
    pub phrases: Vec<Vec<String>>,
    /// Words and phrases whose notes are left out.
    pub excluded: Vec<Vec<String>>,
    pub paths: Vec<String>,
    pub tags: Vec<String>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum QueryError {
    #[error("the query has nothing to search for: give at least one word or quoted phrase")]
    Empty,
    #[error("a quote is not closed")]
    Unclosed,
    #[error("`{0}:` needs a value")]
    EmptyFilter(&'static str),
}

impl Query {
    pub fn parse(input: &str) -> Result<Self, QueryError> {
        let mut q = Query::default();
        let mut rest = input.trim_start();
        while !rest.is_empty() {
            let negated = rest.starts_with('-') && rest.len() > 1 && !rest[1..].starts_with(char::is_whitespace);
            if negated {
                rest = &rest[1..];
            }
            let item: String;
            let quoted = rest.starts_with('"');
            if quoted {
                let end = rest[1..].find('"').ok_or(QueryError::Unclosed)?;
                item = rest[1..1 + end].to_string();
                rest = &rest[end + 2..];
            } else {
                let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
                item = rest[..end].to_string();
                rest = &rest[end..];
            }
            rest = rest.trim_start();
            if !quoted && !negated {
                if let Some(v) = strip_prefix_ci(&item, "path:") {
                    if v.is_empty() {
                        return Err(QueryError::EmptyFilter("path"));
                    }
                    q.paths.push(v.to_lowercase());
                    continue;
                }
                if let Some(v) = strip_prefix_ci(&item, "tag:") {
                    let v = v.trim_start_matches('#');
                    if v.is_empty() {
                        return Err(QueryError::EmptyFilter("tag"));
                    }
                    q.tags.push(v.to_lowercase());
                    continue;
                }
            }
            // A possessive is its word: "Kelly's" searches kelly, not the phrase "kelly s".
            let item = if quoted {
                item
            } else {
                ["'s", "’s", "'S", "’S"].iter().find_map(|p| item.strip_suffix(p)).map_or(item.clone(), str::to_string)
            };
            let tokens = terms(&item);
            if tokens.is_empty() {
                continue;
            }
            if negated {
                q.excluded.push(tokens);
            } else if quoted || tokens.len() > 1 {
                for t in &tokens {
                    if !q.words.contains(t) {
                        q.words.push(t.clone());
                    }
                }
                q.phrases.push(tokens);
            } else if !q.words.contains(&tokens[0]) {
                q.words.push(tokens[0].clone());
            }
        }
        if q.words.is_empty() {
            return Err(QueryError::Empty);
        }
        Ok(q)
    }
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    (s.len() >= prefix.len() && s.is_char_boundary(prefix.len()) && s[..prefix.len()].eq_ignore_ascii_case(prefix))
        .then(|| &s[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_phrases_exclusions_and_filters() {
        let q = Query::parse(r#"Meeting "project plan" -draft -"old notes" path:Work/ tag:#Team e-mail"#).unwrap();
        assert_eq!(q.words, ["meeting", "project", "plan", "e", "mail"]);
        assert_eq!(q.phrases, [vec!["project", "plan"], vec!["e", "mail"]]);
        assert_eq!(q.excluded, [vec!["draft".to_string()], vec!["old".into(), "notes".into()]]);
        assert_eq!(q.paths, ["work/"]);
        assert_eq!(q.tags, ["team"]);
        assert_eq!(Query::parse("Kelly's law’s").unwrap().words, ["kelly", "law"]);
        assert!(Query::parse("Kelly's").unwrap().phrases.is_empty());
    }

    #[test]
    fn bad_queries() {
        assert_eq!(Query::parse(""), Err(QueryError::Empty));
        assert_eq!(Query::parse("-only path:x"), Err(QueryError::Empty));
        assert_eq!(Query::parse("\"open"), Err(QueryError::Unclosed));
        assert_eq!(Query::parse("x path:"), Err(QueryError::EmptyFilter("path")));
        // A lone dash is not an exclusion; punctuation alone is nothing.
        assert_eq!(Query::parse("- x !!").unwrap().words, ["x"]);
    }
}
