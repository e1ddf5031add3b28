//! `FROM` sources: which pages a source selects, and `[[]]` bound to the page a query runs in.

use super::{Page, Source, Src};

/// Whether `target` (a link's text, `Alpha` or `Projects/Alpha.md`) names the note at `path`,
/// as Obsidian resolves links (case-insensitive, `.md` optional, by name or by path suffix).
pub(super) fn link_names(target: &str, path: &str) -> bool {
    let target = target.trim().to_lowercase();
    let path = path.to_lowercase();
    let t = target.strip_suffix(".md").unwrap_or(&target);
    let p = path.strip_suffix(".md").unwrap_or(&path);
    !t.is_empty() && (p == t || p.ends_with(&format!("/{t}")))
}

pub(super) fn src_matches(src: &Src, page: &Page) -> bool {
    match src {
        Src::Tag(tag) => page.tags.iter().any(|t| {
            let t = t.trim_start_matches('#').to_lowercase();
            t == *tag || t.starts_with(&format!("{tag}/"))
        }),
        Src::Folder(folder) => {
            folder.is_empty()
                || page.path == *folder
                || page.path == format!("{folder}.md")
                || page.path.starts_with(&format!("{folder}/"))
        }
        Src::LinksTo(target) => page.outlinks.iter().any(|o| link_names(target, o)),
        Src::LinkedFrom(target) => page.inlinks.iter().any(|i| link_names(target, i)),
        Src::Not(inner) => !src_matches(inner, page),
        Src::And(a, b) => src_matches(a, page) && src_matches(b, page),
        Src::Or(a, b) => src_matches(a, page) || src_matches(b, page),
    }
}

/// Whether the page is in the `FROM` clause's set: a tag (nested tags included, any case), a
/// folder (or the note itself, with or without `.md`), pages linking to `[[note]]`, pages
/// `outgoing([[note]])` links to (read from the page's `inlinks`), combined with and/or/not.
/// `[[]]` (the current note) matches nothing here; [`run`](super::run) binds it to `this`.
pub fn source_matches(source: &Source, page: &Page) -> bool {
    src_matches(&source.0, page)
}

pub(super) fn bind_this(src: &Src, this: &str) -> Src {
    match src {
        Src::LinksTo(t) if t.is_empty() => Src::LinksTo(this.to_string()),
        Src::LinkedFrom(t) if t.is_empty() => Src::LinkedFrom(this.to_string()),
        Src::Not(a) => Src::Not(Box::new(bind_this(a, this))),
        Src::And(a, b) => Src::And(Box::new(bind_this(a, this)), Box::new(bind_this(b, this))),
        Src::Or(a, b) => Src::Or(Box::new(bind_this(a, this)), Box::new(bind_this(b, this))),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dql::testing::*;
    use crate::dql::value::basename;
    use crate::dql::{parse, run};

    #[test]
    fn from_sources() {
        let names = |dql: &str| go(dql).rows.iter().map(|r| basename(&r.path).to_string()).collect::<Vec<_>>();
        assert_eq!(names("LIST FROM #project"), ["Alpha", "Beta", "Gamma"]);
        assert_eq!(names("LIST FROM #PROJECT/alpha"), ["Alpha"]);
        assert_eq!(names("LIST FROM #work AND \"Notes\""), ["Ideas"]);
        assert_eq!(names("LIST FROM #work or #daily"), ["Alpha", "2024-01-05", "Ideas"]);
        assert_eq!(names("LIST FROM \"Projects\" and -#project/alpha"), ["Beta", "Gamma"]);
        assert_eq!(names("LIST FROM [[Alpha]]"), ["2024-01-05"]);
        assert_eq!(names("LIST FROM outgoing([[Projects/Alpha]])"), ["Beta", "Bob"]);
        assert_eq!(names("LIST FROM \"Projects/Alpha\""), ["Alpha"]);
        assert_eq!(names("LIST FROM !(\"Projects\" or #daily)"), ["Bob", "Inbox", "Reading", "Ideas"]);
        let q = parse("LIST FROM [[]]").unwrap();
        let pages = vault();
        let out = run(&q, &pages, Some(&pages[0]), today(), now()).unwrap();
        assert_eq!(paths(&out), ["Daily/2024-01-05.md"]);
        let source = parse("LIST FROM #person or \"Inbox\"").unwrap();
        let source = source.source().unwrap();
        assert!(
            source_matches(source, &pages[3])
                && source_matches(source, &pages[5])
                && !source_matches(source, &pages[0])
        );
    }
}
