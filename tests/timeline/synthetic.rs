//! A session-shaped trace of any length, for the size and speed checks:
//! turns two seconds apart, each with frames in and out, lane picks,
//! streamed text and its flush, a tool call whose task runs 250 ms, its
//! answer, flow decisions and state writes; telemetry every half second.
//! The run ends in a panic on the last turn's tool task.

use std::time::Duration;

use livesim::executor::Trace;

/// How long each synthetic tool call runs.
pub const TOOL_MS: u64 = 250;

/// A trace of exactly `entries` entries.
pub fn session_trace(entries: usize) -> Trace {
    let mut trace = Trace::with_capacity(entries);
    let ms = Duration::from_millis;
    trace.push(
        ms(0),
        "runtime".into(),
        "run seed=0x0 swarm: lanes=random yield=0.05x1",
    );
    let (mut frame_in, mut frame_out, mut seq) = (0u64, 0u64, 0u64);
    let mut turn = 0u64;
    let mut telemetry_at = 500u64;
    while trace.len() < entries {
        let start = turn * 2_000 + 10;
        while telemetry_at < start && trace.len() < entries {
            seq += 1;
            trace.push(
                ms(telemetry_at),
                "telemetry".into(),
                &format!("state session:elapsed_ms = {telemetry_at} (seq {seq})"),
            );
            telemetry_at += 500;
        }
        let call = format!("call-{turn}");
        let task = format!("tool:lookup({call})");
        let mut steps: Vec<(u64, &str, String, bool)> = Vec::new();
        for i in 0..20u64 {
            let at = start + i;
            steps.push((at, "wire", format!("deliver memory/b->a #{frame_in}"), true));
            frame_in += 1;
            steps.push((at, "fast", "picked".to_string(), true));
            steps.push((at, "fast", format!("text_delta \"word{i} \""), false));
        }
        steps.push((
            start + 20,
            "fast",
            "text_complete \"the whole turn's text\"".into(),
            false,
        ));
        steps.push((
            start + 21,
            "control",
            format!("tool_call lookup({call}) {{\"q\":{turn}}}"),
            false,
        ));
        seq += 1;
        steps.push((
            start + 21,
            "control",
            format!("state flow:tool_call = {{\"tool\":\"lookup\",\"id\":\"{call}\"}} (seq {seq})"),
            false,
        ));
        steps.push((start + 21, &task, "start {\"q\":1}".into(), false));
        steps.push((start + 21, &task, "waits".into(), false));
        steps.push((start + 21 + TOOL_MS, &task, "resumes".into(), false));
        steps.push((
            start + 21 + TOOL_MS,
            &task,
            "finish ok {\"found\":true}".into(),
            false,
        ));
        steps.push((
            start + 21 + TOOL_MS,
            "control",
            format!("tool_response lookup({call}) {{\"found\":true}}"),
            false,
        ));
        steps.push((
            start + 22 + TOOL_MS,
            "script:synthetic",
            format!("deliver memory/a->b #{frame_out}"),
            true,
        ));
        frame_out += 1;
        seq += 1;
        steps.push((
            start + 22 + TOOL_MS,
            "control",
            format!("state cart_total = {turn} (seq {seq})"),
            false,
        ));
        steps.push((
            start + 23 + TOOL_MS,
            "control",
            "turn_complete".into(),
            false,
        ));
        for (at, label, event, scheduling) in steps {
            if trace.len() >= entries {
                break;
            }
            if trace.len() == entries - 1 {
                trace.push(
                    ms(at),
                    task.as_str().into(),
                    "panic: the synthetic run ends here",
                );
                break;
            }
            if scheduling {
                trace.push_scheduling(ms(at), label.into(), format_args!("{event}"));
            } else {
                trace.push(ms(at), label.into(), &event);
            }
        }
        turn += 1;
    }
    trace
}
