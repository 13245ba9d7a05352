//! The in-memory pair: plain channels outside a simulation, seeded
//! deliveries (in order per direction) inside one.

use std::collections::BTreeSet;
use std::time::Duration;

use livesim::Seed;
use livesim::executor::{Simulation, Swarm, check_determinism, now};
use livesim::transport::memory::{self, Link};
use livesim::transport::{Transport, TransportError};
use livesim::wire::{CloseFrame, Frame};

fn text(t: &str) -> Frame {
    Frame::Text(t.into())
}

#[tokio::test]
async fn outside_a_simulation_it_is_an_in_order_channel() {
    let (mut a, mut b) = memory::pair();
    for i in 0..100 {
        a.send(text(&i.to_string())).await.unwrap();
    }
    for i in 0..100 {
        assert_eq!(b.recv().await.unwrap().unwrap(), text(&i.to_string()));
    }
}

#[tokio::test]
async fn closing_is_a_handshake() {
    let (mut a, mut b) = memory::pair();
    b.send(text("in flight")).await.unwrap();
    a.send(text("last words")).await.unwrap();
    a.close(Some(CloseFrame::new(1000, "bye"))).await.unwrap();
    a.close(None).await.unwrap(); // twice is fine
    assert_eq!(a.send(text("too late")).await, Err(TransportError::Closed));

    // The peer reads everything, then the close, then nothing.
    assert_eq!(b.recv().await.unwrap().unwrap(), text("last words"));
    assert_eq!(b.recv().await.unwrap().unwrap(), Frame::close(1000, "bye"));
    assert!(b.recv().await.is_none());
    assert_eq!(
        b.send(text("after close")).await,
        Err(TransportError::Closed)
    );

    // The closer reads what was in flight, the answering close, then nothing.
    assert_eq!(a.recv().await.unwrap().unwrap(), text("in flight"));
    assert_eq!(a.recv().await.unwrap().unwrap(), Frame::close(1000, "bye"));
    assert!(a.recv().await.is_none());
}

#[tokio::test]
async fn sending_a_close_frame_closes() {
    let (mut a, mut b) = memory::pair();
    a.send(Frame::Close(None)).await.unwrap();
    assert_eq!(b.recv().await.unwrap().unwrap(), Frame::Close(None));
    assert!(b.recv().await.is_none());
}

#[tokio::test]
async fn dropping_an_end_is_an_abrupt_disconnect() {
    let (a, mut b) = memory::pair();
    drop(a);
    let err = b.recv().await.unwrap().unwrap_err();
    assert!(matches!(err, TransportError::ConnectionLost { .. }));
    assert_eq!(err.as_closed().code, 1006);
    assert!(b.recv().await.is_none());
}

/// One end of an exchange: sends `sends` (text, at ms since start) while
/// receiving, closes when done sending, and returns what it received with
/// the virtual time each frame arrived.
async fn run_end(
    mut end: memory::MemoryTransport,
    sends: Vec<(u64, String)>,
) -> Vec<(String, Duration)> {
    let origin = tokio::time::Instant::now();
    let mut sends = sends.into_iter().peekable();
    let (mut got, mut closed) = (Vec::new(), false);
    loop {
        let next_send = sends
            .peek()
            .map(|(ms, _)| origin + Duration::from_millis(*ms));
        tokio::select! {
            biased;
            frame = end.recv() => match frame {
                Some(Ok(Frame::Text(t))) => got.push((t, now())),
                Some(Ok(_)) => {}
                Some(Err(e)) => panic!("{e}"),
                None => break,
            },
            () = async { if let Some(at) = next_send { tokio::time::sleep_until(at).await } }, if !closed => {
                match sends.next() {
                    Some((_, t)) => end.send(text(&t)).await.unwrap(),
                    None => {
                        end.close(None).await.unwrap();
                        closed = true;
                    }
                }
            }
        }
    }
    got
}

/// `a` sends a0..a19 at 0..19 ms, `b` sends b0, b3, … at the same times;
/// returns (what b received, what a received).
async fn exchange(latency_ms: u64) -> (Vec<(String, Duration)>, Vec<(String, Duration)>) {
    let (a, b) = memory::pair_with(Link {
        label: "exchange".into(),
        latency: Duration::ZERO..=Duration::from_millis(latency_ms),
    });
    let a_sends = (0..20).map(|i| (i, format!("a{i}"))).collect();
    let b_sends = (0..20)
        .filter(|i| i % 3 == 0)
        .map(|i| (i, format!("b{i}")))
        .collect();
    let (at_a, at_b) = tokio::join!(run_end(a, a_sends), run_end(b, b_sends));
    (at_b, at_a)
}

/// When each frame of `got` was sent, by its name (`a7` → 7 ms).
fn sent_at(name: &str) -> Duration {
    Duration::from_millis(name[1..].parse().unwrap())
}

#[test]
fn under_simulation_each_direction_keeps_its_order_at_seeded_times() {
    let mut timings = BTreeSet::new();
    for seed in 0..200 {
        let (at_b, at_a) = Simulation::new(Seed::new(seed))
            .run(|| exchange(20))
            .unwrap()
            .value;
        let names =
            |got: &[(String, Duration)]| got.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>();
        let sent_a: Vec<String> = (0..20).map(|i| format!("a{i}")).collect();
        let sent_b: Vec<String> = (0..20)
            .filter(|i| i % 3 == 0)
            .map(|i| format!("b{i}"))
            .collect();
        assert_eq!(names(&at_b), sent_a, "seed {seed}");
        assert_eq!(names(&at_a), sent_b, "seed {seed}");
        for got in [&at_a, &at_b] {
            assert!(
                got.windows(2).all(|w| w[0].1 <= w[1].1),
                "seed {seed}: {got:?}"
            );
            assert!(
                got.iter().all(|(name, at)| *at >= sent_at(name)),
                "seed {seed}: {got:?}"
            );
        }
        timings.insert(at_b.iter().map(|(_, t)| t.as_millis()).collect::<Vec<_>>());
    }
    assert!(
        timings.len() > 50,
        "seeds should vary arrival times: {}",
        timings.len()
    );
}

#[test]
fn a_calm_zero_latency_link_delivers_at_send_time() {
    let (at_b, _) = Simulation::new(Seed::new(1))
        .swarm(Swarm::calm())
        .run(|| exchange(0))
        .unwrap()
        .value;
    assert!(
        at_b.iter().all(|(name, at)| *at == sent_at(name)),
        "{at_b:?}"
    );
}

#[test]
fn the_same_seed_delivers_the_same_way() {
    for seed in [3, 17, 99] {
        check_determinism(&Simulation::new(Seed::new(seed)), || exchange(20)).unwrap();
    }
}

#[test]
fn recv_is_cancel_safe_under_simulation() {
    for seed in 0..50 {
        let got = Simulation::new(Seed::new(seed))
            .run(|| async {
                let (mut a, b) = memory::pair_with(Link {
                    label: "cancel".into(),
                    latency: Duration::ZERO..=Duration::from_millis(30),
                });
                for i in 0..30 {
                    a.send(text(&i.to_string())).await.unwrap();
                }
                a.close(None).await.unwrap();
                let mut b: Box<dyn Transport> = Box::new(b);
                let mut got = Vec::new();
                loop {
                    tokio::select! {
                        biased;
                        frame = b.recv() => match frame {
                            Some(Ok(Frame::Text(t))) => got.push(t),
                            Some(Ok(_)) => {}
                            Some(Err(e)) => panic!("{e}"),
                            None => break,
                        },
                        () = tokio::time::sleep(Duration::from_millis(1)) => {}
                    }
                }
                got
            })
            .unwrap()
            .value;
        assert_eq!(
            got,
            (0..30).map(|i| i.to_string()).collect::<Vec<_>>(),
            "seed {seed}"
        );
    }
}
