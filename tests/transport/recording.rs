//! Recording: what a wire log holds, in time, and when writing fails.

use std::io;
use std::time::{Duration, UNIX_EPOCH};

use livesim::Seed;
use livesim::executor::{Simulation, Swarm};
use livesim::transport::Transport;
use livesim::transport::memory::{self, Link};
use livesim::transport::recording::{MemorySink, Recording, WireLogWriter};
use livesim::transport::wire_log::{Direction, LineType, WireLog};
use livesim::wire::{CloseFrame, Frame, Secret};
use serde_json::json;

fn zero_latency() -> (memory::MemoryTransport, memory::MemoryTransport) {
    memory::pair_with(Link {
        label: "recorded".into(),
        latency: Duration::ZERO..=Duration::ZERO,
    })
}

#[test]
fn frames_are_stamped_with_virtual_time_since_the_recording_started() {
    let sink = MemorySink::new();
    let written = sink.clone();
    Simulation::new(Seed::new(1))
        .swarm(Swarm::calm())
        .run(move || async move {
            tokio::time::sleep(Duration::from_secs(5)).await; // before recording: not counted
            let log = WireLogWriter::builder(written)
                .model("models/test")
                .started_at(UNIX_EPOCH + Duration::from_millis(1_764_460_800_000))
                .start()
                .unwrap();
            let (client, mut server) = zero_latency();
            let mut client = Recording::new(client, log);
            client
                .send(Frame::Text(r#"{"setup":{"model":"models/test"}}"#.into()))
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(250)).await;
            server
                .send(Frame::Binary(br#"{"setupComplete":{}}"#.to_vec()))
                .await
                .unwrap();
            client.recv().await.unwrap().unwrap();
            tokio::time::sleep(Duration::from_millis(1500)).await;
            server
                .close(Some(CloseFrame::new(1011, "Internal error encountered.")))
                .await
                .unwrap();
            client.recv().await.unwrap().unwrap();
            assert!(client.recv().await.is_none());
            assert_eq!(client.log().frames_written(), 3);
        })
        .unwrap();
    let log = WireLog::parse("memory", &sink.contents()).unwrap();
    assert_eq!(log.header.model.as_deref(), Some("models/test"));
    assert_eq!(log.header.started_at_ms, 1_764_460_800_000);
    let summary: Vec<_> = log
        .frames
        .iter()
        .map(|f| (f.dir, f.t_ms, f.line_type))
        .collect();
    assert_eq!(
        summary,
        [
            (Direction::Out, 0, LineType::Text),
            (Direction::In, 250, LineType::Binary),
            (Direction::In, 1750, LineType::Close),
        ]
    );
    assert_eq!(
        log.frames[2].close.as_ref().unwrap().reason,
        "Internal error encountered."
    );
    assert_eq!(log.frames[1].json, Some(json!({"setupComplete": {}})));
}

#[tokio::test]
async fn a_file_log_reads_back_into_the_frames_that_moved() {
    let path =
        std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("recording-roundtrip.jsonl");
    let file = std::fs::File::create(&path).unwrap();
    let tick = std::sync::atomic::AtomicU64::new(0);
    let log = WireLogWriter::builder(file)
        .clock(move || tick.fetch_add(10, std::sync::atomic::Ordering::Relaxed))
        .start()
        .unwrap();
    let (client, mut server) = memory::pair();
    let mut client = Recording::new(client, log);
    let sent = [
        Frame::Text(r#"{"clientContent":{"turns":[{"role":"user","parts":[{"text":"hi"}]}],"turnComplete":true}}"#.into()),
        Frame::Text("plain text, not JSON".into()),
        Frame::Binary(vec![0xff, 0xfe, 0x00]),
    ];
    for frame in &sent {
        client.send(frame.clone()).await.unwrap();
    }
    server
        .send(Frame::Binary(
            br#"{"serverContent":{"turnComplete":true}}"#.to_vec(),
        ))
        .await
        .unwrap();
    client.recv().await.unwrap().unwrap();
    drop(server); // abrupt: recorded as an error line
    assert!(client.recv().await.unwrap().is_err());
    client.close(None).await.unwrap();

    let log = WireLog::read(&path).unwrap();
    let times: Vec<u64> = log.frames.iter().map(|f| f.t_ms).collect();
    assert_eq!(times, [0, 10, 20, 30, 40, 50]);
    for (line, frame) in log.frames.iter().zip(&sent) {
        assert_eq!(line.dir, Direction::Out);
        assert_eq!(&line.to_frame().unwrap(), frame);
    }
    assert_eq!(log.frames[1].raw.as_deref(), Some("plain text, not JSON"));
    assert_eq!(log.frames[2].raw_base64.as_deref(), Some("//4A"));
    assert_eq!(log.frames[3].dir, Direction::In);
    assert_eq!(log.frames[4].line_type, LineType::Error);
    assert!(
        log.frames[4]
            .error
            .as_ref()
            .unwrap()
            .starts_with("connection lost")
    );
    assert_eq!(log.frames[5].to_frame(), Some(Frame::Close(None)));
}

#[tokio::test]
async fn resumption_handles_become_stable_placeholders() {
    let sink = MemorySink::new();
    let log = WireLogWriter::builder(sink.clone()).start().unwrap();
    let (client, mut server) = memory::pair();
    let mut client = Recording::new(client, log);
    for handle in ["HANDLE-AAA", "HANDLE-BBB", "HANDLE-AAA"] {
        server
            .send(Frame::Binary(
                format!(
                    r#"{{"sessionResumptionUpdate":{{"newHandle":"{handle}","resumable":true}}}}"#
                )
                .into_bytes(),
            ))
            .await
            .unwrap();
        client.recv().await.unwrap().unwrap();
    }
    client
        .send(Frame::Text(
            r#"{"setup":{"model":"m","sessionResumption":{"handle":"HANDLE-BBB"}}}"#.into(),
        ))
        .await
        .unwrap();
    let bytes = sink.contents();
    assert!(!String::from_utf8_lossy(&bytes).contains("HANDLE-"));
    let log = WireLog::parse("handles", &bytes).unwrap();
    let handles: Vec<_> = log.frames[..3]
        .iter()
        .map(|f| f.json.as_ref().unwrap()["sessionResumptionUpdate"]["newHandle"].clone())
        .collect();
    assert_eq!(
        handles,
        [
            json!("<handle-1>"),
            json!("<handle-2>"),
            json!("<handle-1>")
        ]
    );
    assert_eq!(
        log.frames[3].json.as_ref().unwrap()["setup"]["sessionResumption"]["handle"],
        "<handle-2>"
    );
}

/// A sink that accepts `budget` bytes, then fails.
struct FailingSink {
    budget: usize,
}

impl io::Write for FailingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.len() > self.budget {
            return Err(io::Error::other("disk full"));
        }
        self.budget -= buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_failed_write_stops_recording_but_not_the_session() {
    let log = WireLogWriter::builder(FailingSink { budget: 200 })
        .start()
        .unwrap();
    let (client, mut server) = memory::pair();
    let mut client = Recording::new(client, log);
    for i in 0..10 {
        client
            .send(Frame::Text(format!(
                r#"{{"realtimeInput":{{"text":"chunk {i}"}}}}"#
            )))
            .await
            .unwrap();
    }
    for i in 0..10 {
        assert_eq!(
            server.recv().await.unwrap().unwrap(),
            Frame::Text(format!(r#"{{"realtimeInput":{{"text":"chunk {i}"}}}}"#))
        );
    }
    assert_eq!(client.log().error(), Some("disk full"));
    assert!(client.log().frames_written() < 10);
}

/// A binary frame that is not UTF-8 is written as base64 with the
/// recording's secrets taken out of its bytes: the key a client put in
/// it is not in the log, decoded or not.
#[tokio::test]
async fn a_binary_frame_is_recorded_without_its_secrets() {
    let key = "AIzaSyRecordedKey-0123456789abcdef";
    let sink = MemorySink::new();
    let log = WireLogWriter::builder(sink.clone())
        .secret(&Secret::new(key))
        .start()
        .expect("the log starts");
    let (client, _server) = memory::pair();
    let mut client = Recording::new(client, log);
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend_from_slice(key.as_bytes());
    bytes.push(0x00);
    client
        .send(Frame::Binary(bytes))
        .await
        .expect("the frame goes");
    let text = String::from_utf8(sink.contents()).expect("the log is text");
    let log = WireLog::parse("memory", text.as_bytes()).expect("the log reads");
    let Some(Frame::Binary(recorded)) = log.frames[0].to_frame() else {
        panic!("not a binary line: {:?}", log.frames[0])
    };
    assert!(
        !recorded.windows(key.len()).any(|w| w == key.as_bytes()),
        "the key is in the recorded bytes"
    );
    assert_eq!(&recorded[..2], [0xff, 0xfe], "the rest is kept");
    assert!(!text.contains(key));
}

/// A frame whose sending failed did not move: it is not in the log (a
/// frame after the client's own close fails; the close is its one line).
#[tokio::test]
async fn a_frame_that_failed_to_go_is_not_recorded() {
    let sink = MemorySink::new();
    let log = WireLogWriter::builder(sink.clone())
        .start()
        .expect("the log starts");
    let (client, _server) = memory::pair();
    let mut client = Recording::new(client, log);
    client.close(None).await.expect("the close goes");
    let sent = client.send(Frame::Text(r#"{"realtimeInput":{"text":"hi"}}"#.into()));
    assert!(sent.await.is_err(), "a frame after the close fails");
    assert_eq!(client.log().frames_written(), 1);
    let log = WireLog::parse("memory", &sink.contents()).expect("the log reads");
    let kinds: Vec<LineType> = log.frames.iter().map(|f| f.line_type).collect();
    assert_eq!(kinds, [LineType::Close]);
}
