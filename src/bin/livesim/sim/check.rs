//! `livesim sim check`: each seed run twice in this process, its traces
//! compared entry by entry, and once in a child process (this same binary
//! with the hidden `--hashes`), its trace hash compared.

use std::process::ExitCode;

use livesim::soak::{Checks, Progress, check_determinism};

use super::progress::Display;
use super::{CheckArgs, jobs_or_all_cores, load_agents, parse_seeds, soaks, usage};

pub fn run(args: CheckArgs) -> ExitCode {
    let agents = match load_agents(args.dir.as_deref()) {
        Ok(agents) => agents,
        Err(message) => return usage("check", &message),
    };
    let seeds = match parse_seeds(&args.seeds) {
        Ok(seeds) => seeds,
        Err(message) => return usage("check", &format!("--seeds {message}")),
    };
    let jobs = jobs_or_all_cores(args.jobs);
    let soaks = soaks(&agents, Checks::default());
    if args.hashes {
        let report = check_determinism(&soaks, seeds, 1, jobs, &|_, _| {});
        for hash in report.hashes {
            say!("{} {} {:#018x}", hash.agent, hash.seed, hash.hash);
        }
        return ExitCode::SUCCESS;
    }
    // The budget here is the user's patience; it times nothing in a run.
    #[allow(clippy::disallowed_methods)]
    let started = std::time::Instant::now();
    let total = seeds
        .end
        .saturating_sub(seeds.start)
        .saturating_mul(soaks.len() as u64);
    let display = Display::new("check", Some(total));
    let report = check_determinism(&soaks, seeds.clone(), 2, jobs, &|done, total| {
        display.update(Progress {
            done,
            total: Some(total),
            failures: 0,
        })
    });
    display.finish();
    // The child runs after this process's runs: both use every core.
    let child = match std::env::current_exe() {
        Ok(exe) => {
            let mut command = std::process::Command::new(exe);
            command.args(["sim", "check"]);
            if let Some(dir) = &args.dir {
                command.arg(dir);
            }
            command.args([
                "--seeds",
                &args.seeds,
                "--jobs",
                &jobs.to_string(),
                "--hashes",
            ]);
            // The bound this process uses: a bad LIVESIM_HANG was warned
            // of here, and the child need not warn again.
            let hang = livesim::executor::hang_bound();
            command.env(
                livesim::executor::HANG_VARIABLE,
                format!("{}ms", hang.as_millis()),
            );
            command.stdout(std::process::Stdio::piped());
            command.stderr(std::process::Stdio::inherit());
            command.spawn().and_then(|c| c.wait_with_output())
        }
        Err(e) => Err(e),
    };
    let mut divergent = false;
    if let Some(first) = report.divergences.first() {
        divergent = true;
        say!(
            "DIVERGED {} seed {}: two runs in this process left different traces ({} seeds diverged in all)",
            first.agent,
            first.seed,
            report.divergences.len()
        );
        say!("  {}", first.detail.replace('\n', "\n  "));
    }
    match child {
        Ok(output) if output.status.success() => {
            let theirs = String::from_utf8_lossy(&output.stdout);
            let ours: Vec<String> = report
                .hashes
                .iter()
                .map(|h| format!("{} {} {:#018x}", h.agent, h.seed, h.hash))
                .collect();
            let theirs: Vec<&str> = theirs.lines().collect();
            if let Some(i) = (0..ours.len().max(theirs.len()))
                .find(|&i| ours.get(i).map(String::as_str) != theirs.get(i).copied())
            {
                divergent = true;
                say!(
                    "DIVERGED between processes: this process says `{}`, a child process says `{}`",
                    ours.get(i).map_or("(nothing)", String::as_str),
                    theirs.get(i).unwrap_or(&"(nothing)")
                );
                say!(
                    "  compare the two runs' traces with `livesim sim run AGENT --seed S --trace`"
                );
            }
        }
        Ok(output) => {
            note!(
                "livesim sim check: the child process failed ({})",
                output.status
            );
            return ExitCode::from(2);
        }
        Err(e) => {
            note!("livesim sim check: cannot start the child process: {e}");
            return ExitCode::from(2);
        }
    }
    let names: Vec<&str> = agents.agents.iter().map(|a| a.name.as_str()).collect();
    say!(
        "sim check: {} × seeds {}..{}: {} traces, each run twice here and once in a child \
         process, in {:.1}s: {}",
        names.join(", "),
        seeds.start,
        seeds.end,
        report.hashes.len(),
        started.elapsed().as_secs_f64(),
        if divergent {
            "DIVERGED"
        } else {
            "no divergence"
        }
    );
    if divergent {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
