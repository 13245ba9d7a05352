//! The GitHub Actions workflows, checked without GitHub: both parse as
//! YAML; CI runs `.ci/run`; every `livesim` and `cargo` command they run
//! exists, with every flag they pass; the nightly soak's plan step (run
//! here with bash) makes shards 1..=N of N for any N it accepts, which
//! are disjoint and cover the night's seeds exactly; each shard uploads
//! its JUnit report and its new corpus entries, even when it fails; and
//! every long run the guide promises is there: the network tests with
//! `LIVESIM_SEEDS`, the property tests at `PROPTEST_CASES`, the soak over
//! the shard matrix, triaged against the previous night's (whose download,
//! run here with a stand-in `gh`, tolerates there being none), and the
//! corpus replay.

use std::path::{Path, PathBuf};
use std::process::Command;

use livesim::soak::Shard;
use yaml_rust2::{Yaml, YamlLoader};

// Scratch folders removed when each test ends, shared with the other test
// binaries rather than copied.
#[path = "common/scratch.rs"]
mod scratch;

use scratch::scratch;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn workflow(name: &str) -> Yaml {
    let path = repo().join(".github/workflows").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut docs = YamlLoader::load_from_str(&text)
        .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()));
    assert_eq!(docs.len(), 1, "{name}: one document");
    let doc = docs.remove(0);
    assert!(
        doc["jobs"].as_hash().is_some_and(|j| !j.is_empty()),
        "{name}: no jobs"
    );
    assert!(!doc["on"].is_badvalue(), "{name}: no triggers");
    doc
}

/// Every step of every job: (job, step).
fn steps(doc: &Yaml) -> Vec<(String, Yaml)> {
    let mut out = Vec::new();
    for (job, body) in doc["jobs"].as_hash().unwrap() {
        let job = job.as_str().unwrap().to_string();
        let list = body["steps"]
            .as_vec()
            .unwrap_or_else(|| panic!("job {job} has no steps"));
        for step in list {
            out.push((job.clone(), step.clone()));
        }
    }
    out
}

/// The shell commands of a `run` script: continuation lines joined, one
/// command per line or `&&`-separated part, as words with their quotes
/// taken off.
fn commands(script: &str) -> Vec<Vec<String>> {
    script
        .replace("\\\n", " ")
        .lines()
        .flat_map(|line| line.split("&&").map(str::to_string).collect::<Vec<_>>())
        .map(|command| {
            command
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// Runs a program; its exit success and its stdout.
fn output(program: impl AsRef<std::ffi::OsStr>, args: &[String]) -> (bool, String) {
    let out = Command::new(program)
        .args(args)
        .current_dir(repo())
        .output()
        .expect("the program runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The subcommands `livesim <path> --help` lists.
fn subcommands(path: &[String]) -> Vec<String> {
    let mut args = path.to_vec();
    args.push("--help".into());
    let (_, help) = output(env!("CARGO_BIN_EXE_livesim"), &args);
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// A `livesim` command line's words after the binary: its subcommands
/// exist, and the last one takes every flag given.
fn check_livesim(args: &[String], seen: &mut Vec<String>) {
    let mut path: Vec<String> = Vec::new();
    for word in args {
        if subcommands(&path).contains(word) {
            path.push(word.clone());
        } else {
            break;
        }
    }
    assert!(
        subcommands(&path).is_empty(),
        "`livesim {args:?}` names no command (after `{}`, one of {:?})",
        path.join(" "),
        subcommands(&path)
    );
    let mut help_args = path.clone();
    help_args.push("--help".into());
    let (ok, help) = output(env!("CARGO_BIN_EXE_livesim"), &help_args);
    assert!(
        ok,
        "`livesim {}` does not exist:\n{help}",
        help_args.join(" ")
    );
    for flag in args.iter().filter(|w| w.starts_with("--")) {
        let flag = flag.split('=').next().unwrap();
        assert!(
            help.contains(flag),
            "`livesim {}` has no {flag}:\n{help}",
            path.join(" ")
        );
    }
    seen.push(path.join(" "));
}

/// A `cargo` command line's words after `cargo`: the subcommand exists and
/// takes every flag; `--test` names a test target; what follows `--` is a
/// livesim command line (for `cargo run`) or the test harness's flags
/// (for `cargo test`).
fn check_cargo(args: &[String], installed: &[String], seen: &mut Vec<String>) {
    let (cargo_args, rest) = match args.iter().position(|w| w == "--") {
        Some(at) => (&args[..at], Some(&args[at + 1..])),
        None => (args, None),
    };
    let sub = &cargo_args[0];
    if installed.iter().any(|tool| *tool == format!("cargo-{sub}")) {
        // A subcommand the job installs first (it need not be here):
        // its flags are checked where it runs.
        seen.push(format!("cargo {sub} (installed by the job)"));
        return;
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let (ok, help) = output(&cargo, &[sub.clone(), "--help".into()]);
    assert!(ok, "`cargo {sub}` does not exist");
    for (i, flag) in cargo_args
        .iter()
        .enumerate()
        .filter(|(_, w)| w.starts_with("--"))
    {
        assert!(help.contains(flag.as_str()), "`cargo {sub}` has no {flag}");
        if flag == "--test" {
            let name = &cargo_args[i + 1];
            let tests = repo().join("tests");
            assert!(
                tests.join(format!("{name}.rs")).is_file()
                    || tests.join(name).join("main.rs").is_file(),
                "`--test {name}`: no such test target"
            );
        }
    }
    match rest {
        // The test harness's own flags, then a filter.
        Some(rest) if sub == "test" => {
            for flag in rest.iter().filter(|w| w.starts_with("--")) {
                assert!(
                    ["--ignored", "--include-ignored", "--nocapture", "--exact"]
                        .contains(&flag.as_str()),
                    "`cargo test -- {flag}`: not a flag of the test harness"
                );
            }
        }
        Some(rest) => {
            assert_eq!(
                sub, "run",
                "arguments after -- go to the program of `cargo run` (or the tests of `cargo test`)"
            );
            check_livesim(rest, seen);
        }
        None => {}
    }
    seen.push(format!("cargo {sub}"));
}

/// Checks every command of every `run` step; returns what was checked.
fn check_commands(doc: &Yaml) -> Vec<String> {
    let mut seen = Vec::new();
    // Tools an earlier step of the job installs (`taiki-e/install-action`).
    let mut installed: Vec<String> = Vec::new();
    let mut job_of_installed = String::new();
    for (job, step) in steps(doc) {
        if job != job_of_installed {
            installed.clear();
            job_of_installed = job.clone();
        }
        let Some(script) = step["run"].as_str() else {
            let uses = step["uses"].as_str();
            assert!(uses.is_some(), "a step neither runs nor uses: {step:?}");
            if uses.is_some_and(|u| u.starts_with("taiki-e/install-action"))
                && let Some(tool) = step["with"]["tool"].as_str()
            {
                installed.extend(tool.split(',').map(|t| t.trim().to_string()));
            }
            continue;
        };
        for words in commands(script) {
            if let Some(at) = words
                .iter()
                .position(|w| w == "livesim" || w.ends_with("/livesim"))
            {
                check_livesim(&words[at + 1..], &mut seen);
            } else if words[0] == "cargo" {
                check_cargo(&words[1..], &installed, &mut seen);
            }
        }
    }
    seen
}

#[test]
fn ci_runs_dot_ci_run() {
    let ci = workflow("ci.yml");
    let runs = |job: &str| -> Vec<String> {
        steps(&ci)
            .into_iter()
            .filter(|(j, _)| j == job)
            .filter_map(|(_, s)| s["run"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(runs("check"), ["bash .ci/run"]);
    assert!(repo().join(".ci/run").is_file());
    assert_eq!(ci["env"]["LIVESIM_REGRESSIONS"].as_str(), Some("read"));
    assert!(
        ci["on"]["pull_request"].as_hash().is_some() || !ci["on"]["pull_request"].is_badvalue()
    );
}

/// The MSRV job builds on exactly the Rust that Cargo.toml promises, with
/// the features a user can turn on (all defaults), never the test-only
/// `planted-bug`.
#[test]
fn the_msrv_job_checks_the_rust_version_cargo_toml_names() {
    let ci = workflow("ci.yml");
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    let promised = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("Cargo.toml names a rust-version")
        .trim_matches('"');
    let steps = ci["jobs"]["msrv"]["steps"].as_vec().expect("an msrv job");
    let toolchain = steps
        .iter()
        .find_map(|s| s["with"]["toolchain"].as_str())
        .expect("the msrv job picks a toolchain");
    assert_eq!(toolchain, promised);
    let runs: Vec<&str> = steps.iter().filter_map(|s| s["run"].as_str()).collect();
    assert!(runs.contains(&"cargo check --all-targets"), "{runs:?}");
    assert!(
        runs.iter()
            .all(|r| !r.contains("--all-features") && !r.contains("planted-bug")),
        "{runs:?}"
    );
    // Every feature but the test-only one is a default.
    let section: Vec<&str> = manifest
        .lines()
        .skip_while(|l| l.trim() != "[features]")
        .skip(1)
        .take_while(|l| !l.starts_with('['))
        .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
        .collect();
    let defaults = section
        .iter()
        .find_map(|l| l.strip_prefix("default = "))
        .expect("default features");
    for feature in section.iter().filter_map(|l| l.split(" = ").next()) {
        let quoted = format!("\"{feature}\"");
        assert!(
            feature == "default" || feature == "planted-bug" || defaults.contains(&quoted),
            "feature {feature} is not checked on the MSRV"
        );
    }
}

#[test]
fn every_command_the_workflows_run_exists() {
    let seen = check_commands(&workflow("nightly-soak.yml"));
    for command in [
        "sim soak",
        "sim replay",
        "cargo build",
        "cargo test",
        "cargo run",
    ] {
        assert!(
            seen.iter().any(|s| s == command),
            "{command} not checked: {seen:?}"
        );
    }
    check_commands(&workflow("ci.yml"));
}

/// The mutation run's shards cover every mutant once (`--shard K/16` for
/// K in 0..16), install cargo-mutants before they use it, and judge by
/// the soak the config names.
#[test]
fn the_mutation_run_covers_every_mutant_and_tallies_them() {
    let doc = workflow("nightly-mutants.yml");
    let seen = check_commands(&doc);
    assert!(
        seen.iter()
            .any(|s| s == "cargo mutants (installed by the job)"),
        "{seen:?}"
    );
    let shards: Vec<i64> = doc["jobs"]["shard"]["strategy"]["matrix"]["shard"]
        .as_vec()
        .expect("a shard matrix")
        .iter()
        .filter_map(Yaml::as_i64)
        .collect();
    assert_eq!(shards, (0..16).collect::<Vec<_>>());
    let (_, run) = step_running(&doc, "shard", "cargo mutants");
    assert!(run.contains("--shard ${{ matrix.shard }}/16"), "{run}");
    let config = std::fs::read_to_string(repo().join(".cargo/mutants.toml")).unwrap();
    assert!(config.contains("\"--test\", \"mutants\""), "{config}");
    let (_, tally) = step_running(&doc, "tally", "kill rate");
    assert!(
        tally.contains("missed.txt") && tally.contains("caught"),
        "{tally}"
    );
}

/// Runs the plan step's script as GitHub would, with `shards` and run
/// number 5: its outputs, or `None` if it refused.
fn plan(doc: &Yaml, shards: &str, seeds: &str) -> Option<Vec<(String, String)>> {
    let step = doc["jobs"]["plan"]["steps"][0].clone();
    assert_eq!(step["id"].as_str(), Some("plan"));
    assert_eq!(
        step["env"]["SHARDS"].as_str(),
        Some("${{ inputs.shards || '8' }}")
    );
    let script = step["run"].as_str().unwrap();
    let dir = scratch(&format!("plan-{shards}"));
    let out = dir.join("output");
    std::fs::write(&out, "").unwrap();
    let status = Command::new("bash")
        .args(["-c", script])
        .env("SHARDS", shards)
        .env("SEEDS", seeds)
        .env("GITHUB_RUN_NUMBER", "5")
        .env("GITHUB_OUTPUT", &out)
        .output()
        .unwrap();
    if !status.status.success() {
        return None;
    }
    Some(
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| {
                let (k, v) = l.split_once('=').unwrap();
                (k.to_string(), v.to_string())
            })
            .collect(),
    )
}

fn value<'a>(outputs: &'a [(String, String)], key: &str) -> &'a str {
    &outputs.iter().find(|(k, _)| k == key).unwrap().1
}

#[test]
fn the_nightly_matrix_covers_the_seeds_with_disjoint_shards() {
    let doc = workflow("nightly-soak.yml");
    let soak = &doc["jobs"]["soak"];
    assert_eq!(
        soak["strategy"]["matrix"]["shard"].as_str(),
        Some("${{ fromJSON(needs.plan.outputs.list) }}")
    );
    assert_eq!(
        soak["env"]["SHARD"].as_str(),
        Some("${{ matrix.shard }}/${{ needs.plan.outputs.of }}")
    );
    assert_eq!(soak["strategy"]["fail-fast"].as_bool(), Some(false));
    for n in [1u64, 3, 8, 64] {
        let outputs = plan(&doc, &n.to_string(), "").unwrap_or_else(|| panic!("{n} refused"));
        assert_eq!(value(&outputs, "of"), n.to_string());
        let list: Vec<u64> = serde_json::from_str(value(&outputs, "list")).unwrap();
        assert_eq!(list, (1..=n).collect::<Vec<_>>());
        assert_eq!(value(&outputs, "seeds"), "5000000..6000000");
        // Each job's --shard, over the night's seeds: disjoint, covering.
        let range = 5_000_000..6_000_000u64;
        let mut covered = 0u64;
        for k in &list {
            let shard: Shard = format!("{k}/{n}").parse().unwrap();
            let seeds: Vec<u64> = shard.seeds(range.clone()).collect();
            assert!(seeds.iter().all(|s| (s - range.start) % n == k - 1));
            covered += seeds.len() as u64;
        }
        assert_eq!(covered, range.end - range.start);
    }
    let given = plan(&doc, "4", "0..100").unwrap();
    assert_eq!(value(&given, "seeds"), "0..100");
    for bad in ["0", "65", "x", ""] {
        assert!(plan(&doc, bad, "").is_none(), "shards={bad:?} was accepted");
    }
}

#[test]
fn each_shard_keeps_its_report_and_new_entries_even_when_it_fails() {
    let doc = workflow("nightly-soak.yml");
    let soak_steps = doc["jobs"]["soak"]["steps"].as_vec().unwrap();
    let run = soak_steps
        .iter()
        .filter_map(|s| s["run"].as_str())
        .find(|r| r.contains("sim soak"))
        .unwrap();
    for flag in [
        "--shard \"$SHARD\"",
        "--duration",
        "--junit \"reports/",
        "--save new-seeds",
    ] {
        assert!(run.contains(flag), "{flag} missing from {run}");
    }
    let upload = soak_steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .expect("an upload step");
    assert_eq!(upload["if"].as_str(), Some("always()"));
    let paths = upload["with"]["path"].as_str().unwrap();
    assert!(
        paths.contains("reports/") && paths.contains("new-seeds/"),
        "{paths}"
    );
    assert!(Path::new(&repo()).join("seeds").is_dir());
}

/// Every program in `examples/` is run by `.ci/run` and listed in the
/// README's "Examples" section, so none goes stale unseen.
#[test]
fn every_example_is_run_by_ci_and_listed_in_the_readme() {
    let ci = std::fs::read_to_string(repo().join(".ci/run")).unwrap();
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let examples_section = readme
        .split("\n## Examples\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("README has an \"## Examples\" section");
    let mut names: Vec<String> = std::fs::read_dir(repo().join("examples"))
        .unwrap()
        .filter_map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".rs").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(!names.is_empty());
    for name in names {
        let run = ci.lines().any(|line| {
            line.contains(&format!("--example {name}"))
                || (line.starts_with("for example in")
                    && line
                        .split_whitespace()
                        .any(|w| w == name || w == format!("{name};")))
        });
        assert!(run, ".ci/run does not run the example {name}");
        assert!(
            examples_section.contains(&format!("--example {name}")),
            "the README's Examples section does not show how to run {name}"
        );
    }
}

/// The `run` script of the step of `job` whose script holds `needle`,
/// and the step.
fn step_running<'a>(doc: &'a Yaml, job: &str, needle: &str) -> (&'a Yaml, &'a str) {
    doc["jobs"][job]["steps"]
        .as_vec()
        .unwrap_or_else(|| panic!("no job {job}"))
        .iter()
        .find_map(|s| {
            s["run"]
                .as_str()
                .filter(|r| r.contains(needle))
                .map(|r| (s, r))
        })
        .unwrap_or_else(|| panic!("no step of job {job} runs {needle}"))
}

/// The long runs the guide's "The nightly soak" promises: the network
/// tests over `LIVESIM_SEEDS=1000`, the property tests at
/// `PROPTEST_CASES=2000`, the corpus replayed, the digest of the soak of
/// seeds 0..2000 compared.
#[test]
fn the_nightly_runs_the_network_tests_the_long_properties_and_the_corpus() {
    let doc = workflow("nightly-soak.yml");
    let (step, run) = step_running(&doc, "properties", "--test network");
    assert_eq!(run.trim(), "cargo test --release --locked --test network");
    assert_eq!(step["env"]["LIVESIM_SEEDS"].as_str(), Some("1000"));
    let properties = &doc["jobs"]["properties"];
    assert_eq!(properties["env"]["PROPTEST_CASES"].as_str(), Some("2000"));
    let (_, run) = step_running(&doc, "properties", "--test soak");
    for target in ["soak", "aggregation", "flow", "wire"] {
        assert!(run.contains(&format!("--test {target}")), "{run}");
    }
    let (_, run) = step_running(&doc, "properties", "sim replay");
    assert_eq!(
        run.trim(),
        "cargo run --release --locked -- sim replay seeds"
    );
    let (_, run) = step_running(&doc, "properties", "digest");
    assert_eq!(
        run.trim(),
        "cargo test --release --locked --test soak -- --ignored digest"
    );
    // What the guide says the nightly runs, it runs.
    let guide = std::fs::read_to_string(repo().join("docs/guide/soaking.md")).unwrap();
    let guide = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    for promise in [
        "LIVESIM_SEEDS=1000 cargo test --release --locked --test network",
        "PROPTEST_CASES=2000",
        "sim replay seeds",
        "--triage reports/triage-shard-K.json",
        "--ignored digest",
    ] {
        assert!(guide.contains(promise), "the guide does not say {promise}");
    }
}

/// Each shard writes its triage, compares it with the previous night's
/// when there is one, and reports to the step summary; the artifact it
/// uploads holds the triage for the next night.
#[test]
fn each_shard_triages_against_the_previous_night() {
    let doc = workflow("nightly-soak.yml");
    assert_eq!(doc["permissions"]["actions"].as_str(), Some("read"));
    let (_, run) = step_running(&doc, "soak", "sim soak");
    for flag in [
        "--shard \"$SHARD\"",
        "--triage \"reports/triage-shard-${{ matrix.shard }}.json\"",
        "${BASELINE:+--baseline \"$BASELINE\"}",
        "--step-summary \"$GITHUB_STEP_SUMMARY\"",
    ] {
        assert!(run.contains(flag), "{flag} missing from {run}");
    }
    let (_, help) = output(
        env!("CARGO_BIN_EXE_livesim"),
        &["sim".into(), "soak".into(), "--help".into()],
    );
    for flag in ["--triage", "--baseline", "--step-summary"] {
        assert!(help.contains(flag), "sim soak has no {flag}");
    }
    let (download, script) = step_running(&doc, "soak", "gh run download");
    assert_eq!(
        download["env"]["GH_TOKEN"].as_str(),
        Some("${{ github.token }}")
    );
    assert_eq!(download["env"]["K"].as_str(), Some("${{ matrix.shard }}"));
    // With a stand-in `gh`: run 42 has no artifact, run 41 has shard 3's.
    let dir = scratch("gh");
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    let gh = dir.join("bin/gh");
    std::fs::write(
        &gh,
        "#!/bin/sh\n\
         case \"$1 $2\" in\n\
         'run list') [ -n \"$RUNS\" ] && printf '42\\n41\\n' ;;\n\
         'run download') [ \"$3\" = 41 ] || exit 1; mkdir -p \"$7/reports\"; \
         echo '{}' > \"$7/reports/triage-shard-3.json\" ;;\n\
         esac\n",
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&gh).status().unwrap();
    let path = format!(
        "{}:{}",
        dir.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (runs, found) in [("", false), ("yes", true)] {
        let work = dir.join(format!("work-{found}"));
        std::fs::create_dir_all(&work).unwrap();
        let out = Command::new("bash")
            .args(["-e", "-c", script])
            .current_dir(&work)
            .env("PATH", &path)
            .env("K", "3")
            .env("RUNS", runs)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(work.join("baseline/triage-shard-3.json").is_file(), found);
    }
    // The next night's baseline is in this night's artifact.
    let upload = doc["jobs"]["soak"]["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("actions/upload-artifact@"))
        })
        .unwrap();
    assert_eq!(
        upload["with"]["name"].as_str(),
        Some("soak-shard-${{ matrix.shard }}")
    );
    assert!(
        upload["with"]["path"]
            .as_str()
            .unwrap()
            .contains("reports/")
    );
}
