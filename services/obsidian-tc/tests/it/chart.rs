//! The Helm chart's checks (`scripts/chart-test`): lint, render over the values matrix, strict
//! Kubernetes schema validation, refusals of bad values, our policy checks and the alert
//! rules' own tests. Run here so the one test command covers them.

#[test]
fn the_chart_lints_renders_validates_and_passes_the_policy_checks() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(root.join("scripts/chart-test"))
        .current_dir(&root)
        .output()
        .expect("run scripts/chart-test");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "scripts/chart-test failed:\n{text}");
    let passed = text.lines().filter(|l| l.starts_with("ok")).count();
    assert!(passed >= 50, "only {passed} checks ran:\n{text}");
    assert!(!text.lines().any(|l| l.starts_with("FAIL")), "{text}");
}
