//! The values `livesim sim`'s flags take: jobs, seeds and durations, each
//! refused with what was wrong and what to write instead.

use std::time::Duration;

use livesim::executor::SeedPlan;
use livesim::soak::all_cores;

/// The most sessions run at once. Each job is a thread running a whole
/// simulation, and a soak hands out its seeds in batches of 256, so more
/// jobs would only wait (and many thousands of threads exhaust memory).
const MAX_JOBS: usize = 256;

/// The longest duration a flag takes: a hundred years, far beyond any
/// soak, and far inside what the clock's arithmetic can hold.
const MAX_DURATION: Duration = Duration::from_secs(100 * 365 * 24 * 3600);

/// A number of jobs, 1 to [`MAX_JOBS`] (`--jobs 0` would run nothing).
pub fn jobs(text: &str) -> Result<usize, String> {
    let too_many = || {
        format!(
            "more than {MAX_JOBS} jobs: give at most {MAX_JOBS} (each job is a thread, and \
             a soak hands out seeds {MAX_JOBS} at a time), or leave --jobs out to use every \
             core ({} here)",
            all_cores()
        )
    };
    let text = text.trim();
    match text.parse::<usize>() {
        Ok(0) => Err("0 jobs would run nothing: give at least 1".to_string()),
        Ok(n) if n > MAX_JOBS => Err(too_many()),
        Ok(n) => Ok(n),
        // Digits alone, too many for a number: too many jobs.
        Err(_) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => Err(too_many()),
        Err(_) => Err(format!("`{text}` is not a number of jobs (1, 2, …)")),
    }
}

/// The jobs a command runs: `--jobs`, else every core up to [`MAX_JOBS`].
pub fn jobs_or_all_cores(jobs: Option<usize>) -> usize {
    jobs.unwrap_or_else(|| all_cores().min(MAX_JOBS))
}

/// `--seeds`: N (0..N), A..B or A..=B; one seed is the range holding it.
pub fn parse_seeds(spec: &str) -> Result<std::ops::Range<u64>, String> {
    match SeedPlan::parse(spec)? {
        SeedPlan::Range(range) => Ok(range),
        SeedPlan::One(seed) => match seed.value().checked_add(1) {
            Some(end) => Ok(seed.value()..end),
            None => Err(format!(
                "the largest seed, {seed}, cannot be part of a range of seeds: run it alone with `sim run --seed {seed}`"
            )),
        },
    }
}

/// `90s`, `5m`, `1h`, `500ms`, or a number of seconds; more than zero.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let duration = parse_duration_or_zero(text)?;
    if duration.is_zero() {
        return Err(format!(
            "`{}`: the duration must be more than zero",
            text.trim()
        ));
    }
    Ok(duration)
}

/// Like [`parse_duration`], zero allowed (`0`, `0s`); at most
/// [`MAX_DURATION`].
pub fn parse_duration_or_zero(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration: write 90s, 5m or 1h"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("`{text}` is not a duration: write 90s, 5m or 1h")),
    };
    // Digits alone cannot be negative or NaN; too many of them are
    // infinite, which the bound refuses too.
    match Duration::try_from_secs_f64(seconds) {
        Ok(duration) if duration <= MAX_DURATION => Ok(duration),
        _ => Err(format!(
            "`{text}` is too long: a duration may be at most {}h (a hundred years)",
            MAX_DURATION.as_secs() / 3600
        )),
    }
}
