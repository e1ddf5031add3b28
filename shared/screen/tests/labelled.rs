//! The labelled set: missed injections and flagged benign notes, measured.
//!
//! `cargo test -p otc-screen --test labelled -- --nocapture` prints the rates and every miss.

use otc_screen::screen;

fn samples(file: &str) -> Vec<String> {
    let path = format!("{}/testdata/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| l.replace("\\n", "\n")).collect()
}

#[test]
fn labelled_set_error_rates() {
    let injections = samples("injections.txt");
    let benign = samples("benign.txt");
    assert!(injections.len() >= 220 && benign.len() >= 220, "{} / {}", injections.len(), benign.len());
    let distinct = |v: &[String]| v.iter().collect::<std::collections::HashSet<_>>().len();
    assert_eq!(distinct(&injections), injections.len(), "duplicate injection samples");
    assert_eq!(distinct(&benign), benign.len(), "duplicate benign samples");

    let mut missed = Vec::new();
    let mut suspect_only = 0;
    for text in &injections {
        let s = screen(text);
        if s.refused.is_none() && s.suspects.is_empty() {
            missed.push(text);
        } else if s.refused.is_none() {
            suspect_only += 1;
        }
    }
    let mut benign_refused = Vec::new();
    let mut benign_flagged = Vec::new();
    for text in &benign {
        let s = screen(text);
        if let Some(kind) = s.refused {
            benign_refused.push((text, kind));
        }
        if s.refused.is_some() || !s.suspects.is_empty() {
            benign_flagged.push((text, s.refused, s.suspects));
        }
    }

    let pct = |n: usize, of: usize| 100.0 * n as f64 / of as f64;
    let (ni, nb) = (injections.len(), benign.len());
    eprintln!(
        "injections missed: {}/{ni} ({:.1}%); caught only as suspect: {suspect_only}",
        missed.len(),
        pct(missed.len(), ni)
    );
    eprintln!("benign refused:    {}/{nb} ({:.1}%)", benign_refused.len(), pct(benign_refused.len(), nb));
    eprintln!("benign flagged:    {}/{nb} ({:.1}%)", benign_flagged.len(), pct(benign_flagged.len(), nb));
    for text in &missed {
        eprintln!("  missed: {text:?}");
    }
    for (text, refused, suspects) in &benign_flagged {
        eprintln!("  benign flagged ({refused:?}, {suspects:?}): {text:?}");
    }

    assert!(pct(missed.len(), ni) <= 5.0, "too many injections missed");
    assert!(pct(benign_refused.len(), nb) <= 1.0, "too many benign notes refused");
    assert!(pct(benign_flagged.len(), nb) <= 5.0, "too many benign notes flagged");
}
