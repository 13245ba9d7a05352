//! Redaction throughput on adversarial and on ordinary text.
//!
//! Inputs of 1 MB each:
//!
//! * `adversarial_key_param`: `?key=` repeated, the input that made the
//!   old scrubber quadratic (128 KB took 13 s);
//! * `adversarial_markers`: every built-in marker and the secret's prefix,
//!   interleaved, so the scan finds (and rejects) a candidate every few
//!   bytes;
//! * `ordinary`: a wire log's worth of JSON and English text with a few
//!   real credentials in it.
//!
//! Each is scrubbed by a `Redactor` that knows one secret (`scrub`: the
//! secret, then the built-in patterns) and, as the baseline measured in the
//! same run, lowercased with `str::to_ascii_lowercase` (one allocating
//! pass over the text, the least any scan that ignores case does).
//! Throughput is in bytes, so criterion reports MB/s; ratios are recorded
//! in benches/README.md.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use livesim::wire::{Redactor, Secret};

const SECRET: &str = "FAKE-KEY-bench-0123456789abcdef";
const SIZE: usize = 1 << 20;

fn fill(piece: &str) -> String {
    let mut text = piece.repeat(SIZE / piece.len() + 1);
    text.truncate(SIZE);
    text
}

fn inputs() -> Vec<(&'static str, String)> {
    let ordinary = format!(
        "{{\"dir\":\"in\",\"t_ms\":41,\"type\":\"binary\",\"json\":{{\"serverContent\":{{\"modelTurn\":\
         {{\"parts\":[{{\"text\":\"The forecast for Oslo is light snow, turning to sleet by evening; \
         bring a coat.\"}}]}}}}}}}}\nGET /ws/Bidi?alt=json&key={SECRET} HTTP/1.1 \
         Authorization: Bearer ya29.a0AfH6SMB token=abc monkey=banana\n"
    );
    vec![
        ("adversarial_key_param", fill("?key=")),
        (
            "adversarial_markers",
            fill("?ke&key=;Bearer x-goog-api-key:auth_tokens/monkey=FAKE-KEY-bench-0123"),
        ),
        ("ordinary", fill(&ordinary)),
    ]
}

fn redact(c: &mut Criterion) {
    let redactor = Redactor::new().with_secret(&Secret::new(SECRET));
    for (name, text) in inputs() {
        let mut group = c.benchmark_group(format!("redact/{name}"));
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.measurement_time(Duration::from_secs(4));
        group.warm_up_time(Duration::from_secs(1));
        group.sample_size(30);
        group.bench_function("scrub", |b| {
            b.iter(|| redactor.scrub(black_box(&text)).len())
        });
        group.bench_function("lowercase_baseline", |b| {
            b.iter(|| black_box(&text).to_ascii_lowercase().len())
        });
        group.finish();
    }
}

criterion_group!(benches, redact);
criterion_main!(benches);
