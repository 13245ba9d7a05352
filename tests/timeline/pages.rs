//! The pages in a real headless Chromium: what a person sees. Each test
//! counts the lanes drawn, measures a tool span against its virtual
//! duration, finds the failure mark, hovers and clicks like a person,
//! saves a screenshot under the target directory, and fails on any
//! console error (a script error, a Content Security Policy violation).
//!
//! `#[ignore]`d because they need Chromium: `.ci/run` runs them with
//! `cargo test --test timeline -- --include-ignored`, installing
//! Chromium first when it is missing; without a browser they fail and say
//! how to install one.

use std::path::Path;

use livesim::soak::{Agent, Soak};
use livesim::timeline::{SoakPage, Timeline};
use serde_json::Value;

use super::browser::Browser;
use super::model::{HOSTILE, hostile_timeline};
use super::{artifacts, failing_weather, first_failing_seed, lookup_report, synthetic};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Opens `page` (after writing `html` there) and returns the browser.
async fn open(html: &str, page: &Path) -> Browser {
    std::fs::write(page, html).unwrap();
    let mut browser = Browser::launch().await.unwrap_or_else(|e| panic!("{e}"));
    browser.open(page).await.unwrap_or_else(|e| panic!("{e}"));
    browser
}

async fn eval(browser: &mut Browser, js: &str) -> Value {
    browser.eval(js).await.unwrap_or_else(|e| panic!("{e}"))
}

/// The lanes the chart draws, by name.
async fn lanes_drawn(browser: &mut Browser) -> Vec<String> {
    let names = eval(
        browser,
        "Array.from(document.querySelectorAll('svg.names text')).map(t => t.lastChild.textContent)",
    )
    .await;
    let groups = eval(browser, "document.querySelectorAll('#chart g.lane').length").await;
    let names: Vec<String> = serde_json::from_value(names).unwrap();
    assert_eq!(groups, names.len(), "a name for every lane drawn");
    names
}

/// The drawn width of the span of call `id`, and what its duration says
/// it should be at the chart's scale.
async fn span_width(browser: &mut Browser, id: &str, duration_ms: f64) -> (f64, f64) {
    let js = format!(
        "(() => {{ const r = document.querySelector('rect.span[data-call=\"{id}\"]'); \
         return [r.getBoundingClientRect().width, Number(document.getElementById('chart').dataset.pxPerMs)]; }})()"
    );
    let got = eval(browser, &js).await;
    let (width, scale) = (got[0].as_f64().unwrap(), got[1].as_f64().unwrap());
    (width, duration_ms * scale)
}

/// Moves the mouse to the middle of `selector` and clicks there; returns
/// the tooltip's and the panel's text.
async fn hover_and_click(browser: &mut Browser, selector: &str) -> (String, String) {
    let js = format!(
        "(() => {{ const el = document.querySelector('{selector}'); el.scrollIntoView({{inline: 'center', block: 'center'}}); \
         const r = el.getBoundingClientRect(); \
         const at = {{clientX: r.left + r.width / 2, clientY: r.top + r.height / 2, bubbles: true}}; \
         el.dispatchEvent(new MouseEvent('mousemove', at)); \
         const tip = document.getElementById('tip'); const shown = getComputedStyle(tip).display; \
         el.dispatchEvent(new MouseEvent('click', at)); \
         return [shown === 'none' ? '' : tip.textContent, document.getElementById('detail').textContent]; }})()"
    );
    let got = eval(browser, &js).await;
    (
        got[0].as_str().unwrap().to_string(),
        got[1].as_str().unwrap().to_string(),
    )
}

async fn finish(mut browser: Browser, shot: &str) {
    let path = artifacts().join(shot);
    browser
        .screenshot(&path)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        std::fs::metadata(&path).unwrap().len() > 5_000,
        "{}",
        path.display()
    );
    let errors = browser.errors().to_vec();
    browser.close().await;
    assert!(errors.is_empty(), "console errors: {errors:#?}");
}

/// A failing test's page: one lane per lane of the trace, the lookup's
/// span as wide as its virtual duration, the panic marked on the lane
/// that panicked, hover and click showing the trace entries.
#[test]
#[ignore = "needs Chromium: .ci/run runs it (cargo test --test timeline -- --include-ignored)"]
fn a_failing_tests_page_shows_its_lanes_span_and_failure() {
    let timeline = Timeline::of_report(&lookup_report());
    let page = artifacts().join("failing-test.html");
    runtime().block_on(async {
        let mut browser = open(&timeline.html(), &page).await;
        let names = lanes_drawn(&mut browser).await;
        let expected: Vec<String> = timeline.lanes.iter().map(|l| l.name.clone()).collect();
        assert_eq!(names, expected);
        assert!(names.iter().any(|n| n.starts_with("tool:lookup(")), "{names:?}");
        let span = &timeline.spans[0];
        let duration = span.duration().as_secs_f64() * 1000.0;
        let (width, wanted) = span_width(&mut browser, &span.call, duration).await;
        assert!((width - wanted).abs() <= 0.5, "span {width} px, {duration} ms → {wanted} px");
        assert!(width >= 250.0 * 0.99 * wanted / duration, "at least the tool's 250 ms");
        let failure = eval(
            &mut browser,
            "(() => { const f = document.getElementById('failure'); \
             return f && [f.dataset.kind, Number(f.dataset.lane), f.getBoundingClientRect().width > 0]; })()",
        )
        .await;
        let lane = timeline.failure.as_ref().unwrap().lane.unwrap();
        assert_eq!(failure, serde_json::json!(["panic", lane, true]));
        // On load, the panel shows the failure's trace entry.
        let panel = eval(&mut browser, "document.getElementById('detail').textContent").await;
        assert!(panel.as_str().unwrap().contains("panic: "), "{panel}");
        let (tip, panel) =
            hover_and_click(&mut browser, &format!("rect.span[data-call=\"{}\"]", span.call)).await;
        assert!(tip.contains("lookup(") && tip.contains(" ok: "), "{tip}");
        assert!(panel.contains("| start ") && panel.contains("| finish ok "), "{panel}");
        finish(browser, "failing-test.png").await;
    });
}

/// A soak failure's page: the failure mark on the span of the call the
/// invariant names, the span as wide as the record says the tool ran.
#[test]
#[ignore = "needs Chromium: .ci/run runs it (cargo test --test timeline -- --include-ignored)"]
fn a_soak_failures_page_marks_the_call_that_broke_it() {
    let agent = failing_weather("page-soak-run");
    let soak = Soak::agent(&Agent::load(&agent).unwrap());
    let (seed, run) = first_failing_seed(&soak);
    let timeline = Timeline::of_seed(&soak, seed, &run);
    let failure = timeline.failure.clone().unwrap();
    let span = timeline.spans[failure.span.unwrap()].clone();
    let record = run.record.as_ref().unwrap();
    let execution = record
        .executions
        .iter()
        .find(|e| e.call_id.as_deref() == Some(span.call.as_str()))
        .unwrap();
    let ran = execution.finished.unwrap() - execution.started;
    runtime().block_on(async {
        let page = artifacts().join("soak-failure.html");
        let mut browser = open(&timeline.html(), &page).await;
        let names = lanes_drawn(&mut browser).await;
        assert_eq!(names.len(), timeline.lanes.len());
        let (width, wanted) =
            span_width(&mut browser, &span.call, ran.as_secs_f64() * 1000.0).await;
        assert!(
            (width - wanted).abs() <= 0.5,
            "{width} px for {ran:?}, wanted {wanted}"
        );
        let mark = eval(
            &mut browser,
            "(() => { const f = document.getElementById('failure'); \
             return [Number(f.dataset.lane), !!f.querySelector('rect.span-outline'), \
             document.getElementById('banner').textContent]; })()",
        )
        .await;
        assert_eq!(mark[0], span.lane);
        assert_eq!(mark[1], true, "the span is outlined");
        assert!(
            mark[2]
                .as_str()
                .unwrap()
                .contains("before(get_forecast, get_weather)")
        );
        finish(browser, "soak-failure.png").await;
    });
}

/// The soak's page: a bar per goal, never-reached goals flagged, a
/// histogram per measured latency, the rate over the run, and a working
/// link to each failure's timeline.
#[test]
#[ignore = "needs Chromium: .ci/run runs it (cargo test --test timeline -- --include-ignored)"]
fn the_soak_page_charts_goals_and_links_failure_timelines() {
    let agent = failing_weather("page-soak");
    let agent = Agent::load(&agent).unwrap();
    let summary = *Soak::agent(&agent)
        .sometimes("a-goal-no-run-reaches", |_| false)
        .seeds(livesim::soak::GOALS_JUDGED_FROM)
        .jobs(1)
        .keep(false) // it fails on purpose: keep nothing
        .try_run()
        .expect_err("the invariant breaks");
    assert!(!summary.never_reached().is_empty());
    let soaks = [Soak::agent(&agent)];
    let dir = artifacts().join("soak");
    let _ = std::fs::remove_dir_all(&dir);
    let path = dir.join("soak.html");
    let mut page = SoakPage::new(&summary);
    let written = page.write(&path, &soaks).unwrap();
    let shown = summary.agents[0]
        .failures
        .len()
        .min(livesim::timeline::FAILURES_SHOWN);
    assert!(!written.is_empty() && written.len() <= shown);
    runtime().block_on(async {
        let mut browser = Browser::launch().await.unwrap_or_else(|e| panic!("{e}"));
        browser.open(&path).await.unwrap_or_else(|e| panic!("{e}"));
        let seen = eval(
            &mut browser,
            "[document.querySelectorAll('svg.goals rect[data-goal]').length, \
              document.querySelectorAll('svg.goals rect.goal-never[data-goal]').length, \
              document.querySelectorAll('#rate rect.rate').length, \
              Array.from(document.querySelectorAll('a.timeline-link')).map(a => a.href)]",
        )
        .await;
        let goals: usize = summary.agents.iter().map(|a| a.goals.len()).sum();
        assert_eq!(seen[0], goals);
        assert_eq!(
            seen[1],
            summary.never_reached().len(),
            "each never-reached goal flagged"
        );
        assert!(seen[2].as_u64().unwrap() >= 1);
        let links = seen[3].as_array().unwrap();
        assert_eq!(links.len(), shown);
        // A histogram per measured latency, every bar drawn, titled with
        // the worst run's seed; its bars add up to the samples.
        let charts = eval(
            &mut browser,
            "Array.from(document.querySelectorAll('figure.histogram')).map(f => [\
               f.dataset.measure, \
               f.querySelectorAll('rect.bin').length, \
               f.querySelector('figcaption').textContent, \
               Array.from(f.querySelectorAll('rect.bin')).filter(r => r.height.baseVal.value > 0).length])",
        )
        .await;
        let measured: Vec<_> = summary.agents[0]
            .latencies
            .iter()
            .filter(|d| d.count() > 0)
            .collect();
        let charts = charts.as_array().unwrap();
        assert_eq!(charts.len(), measured.len(), "{charts:?}");
        for (chart, d) in charts.iter().zip(measured) {
            assert_eq!(chart[0], d.measure().name());
            assert_eq!(chart[1], livesim::timeline::HISTOGRAM_BINS);
            let caption = chart[2].as_str().unwrap();
            let seed = d.worst_seed().unwrap().to_string();
            assert!(caption.contains(&format!("seed {seed}")), "{caption}");
            assert!(chart[3].as_u64().unwrap() >= 1, "some bar has height");
        }
        browser
            .screenshot(&artifacts().join("soak-page.png"))
            .await
            .unwrap();
        // The first link opens a timeline with its failure marked.
        let first = links[0].as_str().unwrap().strip_prefix("file://").unwrap();
        browser
            .open(Path::new(first))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let kind = eval(
            &mut browser,
            "document.getElementById('failure').dataset.kind",
        )
        .await;
        assert_eq!(kind, "invariant");
        finish(browser, "soak-first-failure.png").await;
    });
}

/// Hostile text is shown, never run: no injected element, no script ran,
/// and a click on the hostile lane shows the text as it was.
#[test]
#[ignore = "needs Chromium: .ci/run runs it (cargo test --test timeline -- --include-ignored)"]
fn hostile_text_is_shown_never_run() {
    let timeline = hostile_timeline();
    runtime().block_on(async {
        let page = artifacts().join("hostile.html");
        let mut browser = open(&timeline.html(), &page).await;
        let seen = eval(
            &mut browser,
            "[typeof window.__pwned, document.querySelectorAll('img').length, \
              document.scripts.length, document.title, \
              document.querySelectorAll('svg.names text').length]",
        )
        .await;
        assert_eq!(seen[0], "undefined", "an injected script ran");
        assert_eq!(seen[1], 0, "an injected element");
        assert_eq!(seen[2], 2);
        assert_eq!(seen[3], format!("livesim timeline: {}", HOSTILE[0]));
        assert_eq!(seen[4], timeline.lanes.len());
        let (_, panel) = hover_and_click(&mut browser, "rect.span[data-call=\"call-1\"]").await;
        assert!(panel.contains(&format!("start {}", HOSTILE[1])), "{panel}");
        finish(browser, "hostile.png").await;
    });
}

/// 1,000 and 100,000 entries: every lane and span drawn, spans as wide
/// as their duration. (How fast: `cargo bench --bench timeline`, figures
/// in benches/README.md.)
#[test]
#[ignore = "needs Chromium: .ci/run runs it (cargo test --test timeline -- --include-ignored)"]
fn a_hundred_thousand_entries_draw_every_lane_and_span() {
    runtime().block_on(async {
        for entries in [1_000, 100_000] {
            let timeline = Timeline::from_trace(&synthetic::session_trace(entries));
            let page = artifacts().join(format!("synthetic-{entries}.html"));
            let mut browser = open(&timeline.html(), &page).await;
            assert_eq!(lanes_drawn(&mut browser).await.len(), timeline.lanes.len());
            let spans = eval(
                &mut browser,
                "document.querySelectorAll('rect.span').length",
            )
            .await;
            assert_eq!(spans, timeline.spans.len());
            let (width, wanted) =
                span_width(&mut browser, "call-0", synthetic::TOOL_MS as f64).await;
            assert!(
                (width - wanted).abs() <= 0.5,
                "{entries}: {width} vs {wanted}"
            );
            finish(browser, &format!("synthetic-{entries}.png")).await;
        }
    });
}

/// The console check can fail: a page whose script was changed after
/// its hash was taken is refused by the Content Security Policy, and a
/// script that throws is an uncaught error; both are reported.
#[test]
#[ignore = "needs Chromium: .ci/run runs it (cargo test --test timeline -- --include-ignored)"]
fn the_console_check_sees_a_refused_script_and_an_exception() {
    let html = Timeline::of_report(&lookup_report()).html();
    let tampered = html.replacen(
        "\"use strict\";",
        "\"use strict\"; window.__tampered = 1;",
        1,
    );
    assert_ne!(tampered, html);
    let throwing = "<!doctype html><title>t</title><script>null.boom()</script>";
    runtime().block_on(async {
        for (name, page, expected) in [
            (
                "tampered.html",
                tampered.as_str(),
                "Content Security Policy",
            ),
            ("throwing.html", throwing, "uncaught"),
        ] {
            let mut browser = open(page, &artifacts().join(name)).await;
            let ran = eval(&mut browser, "typeof window.__tampered").await;
            assert_eq!(ran, "undefined", "{name}: the tampered script ran");
            let errors = browser.errors().join("\n");
            browser.close().await;
            assert!(errors.contains(expected), "{name}: {errors:?}");
        }
    });
}
