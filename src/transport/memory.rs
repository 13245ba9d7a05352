//! Two connected in-memory transports.
//!
//! Under the simulated runtime each frame goes through the executor's
//! seeded [`Deliveries`] queue: it is scheduled a seeded latency after it
//! was sent (plus the swarm's delivery jitter), so frames arrive at
//! virtual times that vary by seed. Order within a direction is kept, as
//! on a TCP stream: a frame is never handed over before every frame sent
//! before it, so its arrival is `max(previous frame's arrival, sent + own
//! delay)`. The two directions are independent of each other.
//!
//! Outside a simulation each direction is a plain unbounded channel.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::{CloseFrame, Frame, Transport, TransportError};
use crate::executor::{self, Deliveries};

/// The seeded decision a frame's latency is (see
/// [`Schedule`](crate::executor::Schedule)): `link-latency#n` delays the
/// `n`-th frame sent over in-memory links beyond the link's shortest
/// latency.
pub const LINK_LATENCY: &str = "link-latency";

/// How a [`pair`] behaves under simulation.
#[derive(Clone, Debug)]
pub struct Link {
    /// Names the queues (`<label>/a->b`, `<label>/b->a`) in the trace and
    /// the latency stream (`transport/<label>`); give each pair in a run
    /// its own so their draws are independent.
    pub label: String,
    /// Each frame's delay is drawn uniformly from this range (whole ms).
    pub latency: RangeInclusive<Duration>,
}

impl Default for Link {
    /// Label `memory`, latency 0–2 ms.
    fn default() -> Self {
        Link {
            label: "memory".into(),
            latency: Duration::ZERO..=Duration::from_millis(2),
        }
    }
}

/// Two connected transports with the default [`Link`]: what one sends,
/// the other receives.
///
/// ```
/// use std::time::Duration;
/// use livesim::Seed;
/// use livesim::executor::Simulation;
/// use livesim::transport::{Transport, memory};
/// use livesim::wire::Frame;
///
/// let arrivals = Simulation::new(Seed::new(3)).run(|| async {
///     let (mut a, mut b) = memory::pair_with(memory::Link {
///         label: "demo".into(),
///         latency: Duration::from_millis(5)..=Duration::from_millis(50),
///     });
///     for i in 0..3 {
///         a.send(Frame::Text(i.to_string())).await.unwrap();
///     }
///     let mut got = Vec::new();
///     for _ in 0..3 {
///         let frame = b.recv().await.unwrap().unwrap();
///         got.push((frame, livesim::executor::now()));
///     }
///     got
/// }).unwrap().value;
/// // In order, at seeded virtual times that never go backwards.
/// let texts: Vec<_> = arrivals.iter().map(|(f, _)| f.clone()).collect();
/// assert_eq!(texts, ["0", "1", "2"].map(|t| Frame::Text(t.into())));
/// assert!(arrivals.windows(2).all(|w| w[0].1 <= w[1].1));
/// assert!(arrivals[0].1 >= Duration::from_millis(5));
/// ```
pub fn pair() -> (MemoryTransport, MemoryTransport) {
    pair_with(Link::default())
}

/// Two connected transports over `link`.
pub fn pair_with(link: Link) -> (MemoryTransport, MemoryTransport) {
    if executor::is_simulated() {
        // Joined rather than formatted: every simulated connection builds
        // these three.
        let a_to_b = Deliveries::new([link.label.as_str(), "/a->b"].concat());
        let b_to_a = Deliveries::new([link.label.as_str(), "/b->a"].concat());
        let stream = ["transport/", link.label.as_str()].concat();
        let end = |out: &Deliveries<Item>, inbox: &Deliveries<Item>| {
            MemoryTransport::new(
                Sender::Scheduled {
                    queue: out.clone(),
                    stream: stream.clone(),
                    latency: link.latency.clone(),
                    last_at: None,
                    next_seq: 0,
                },
                Receiver::Scheduled {
                    queue: inbox.clone(),
                    held: BTreeMap::new(),
                    next_seq: 0,
                },
            )
        };
        (end(&a_to_b, &b_to_a), end(&b_to_a, &a_to_b))
    } else {
        let (a_tx, b_rx) = mpsc::unbounded_channel();
        let (b_tx, a_rx) = mpsc::unbounded_channel();
        (
            MemoryTransport::new(Sender::Channel(a_tx), Receiver::Channel(a_rx)),
            MemoryTransport::new(Sender::Channel(b_tx), Receiver::Channel(b_rx)),
        )
    }
}

/// One end of a [`pair`].
pub struct MemoryTransport {
    /// `None` once our sending side is closed.
    out: Option<Sender>,
    inbox: Receiver,
    /// We sent a close frame (first, or in answer to the peer's).
    sent_close: bool,
    /// `recv` is over: it returns `None` from now on.
    finished: bool,
}

struct Item {
    seq: u64,
    frame: Frame,
}

enum Sender {
    Channel(mpsc::UnboundedSender<Item>),
    Scheduled {
        queue: Deliveries<Item>,
        stream: String,
        latency: RangeInclusive<Duration>,
        last_at: Option<Instant>,
        next_seq: u64,
    },
}

enum Receiver {
    Channel(mpsc::UnboundedReceiver<Item>),
    Scheduled {
        queue: Deliveries<Item>,
        /// Frames that arrived ahead of an earlier one, by sequence number.
        held: BTreeMap<u64, Frame>,
        next_seq: u64,
    },
}

impl Sender {
    fn push(&mut self, frame: Frame) {
        match self {
            Sender::Channel(tx) => {
                // The peer may be gone; like a socket, the frame is lost.
                let _ = tx.send(Item { seq: 0, frame });
            }
            Sender::Scheduled {
                queue,
                stream,
                latency,
                last_at,
                next_seq,
            } => {
                let drawn =
                    executor::draw(stream, |s| s.millis(latency.clone())).unwrap_or(Duration::ZERO);
                // Calm: the link's shortest latency.
                let delay = if executor::decide(LINK_LATENCY, drawn > *latency.start()) {
                    drawn
                } else {
                    *latency.start()
                };
                let at = (Instant::now() + delay).max(last_at.unwrap_or_else(Instant::now));
                *last_at = Some(at);
                let seq = *next_seq;
                *next_seq += 1;
                queue.push_at(at, Item { seq, frame });
            }
        }
    }

    fn finish(self) {
        match self {
            Sender::Channel(tx) => drop(tx),
            Sender::Scheduled { queue, .. } => queue.close(),
        }
    }
}

impl Receiver {
    /// The next frame in send order; `None` when the peer's side is done.
    /// Cancel-safe: a popped frame is stored before any await.
    async fn next(&mut self) -> Option<Frame> {
        match self {
            Receiver::Channel(rx) => rx.recv().await.map(|item| item.frame),
            Receiver::Scheduled {
                queue,
                held,
                next_seq,
            } => loop {
                if let Some(frame) = held.remove(next_seq) {
                    *next_seq += 1;
                    return Some(frame);
                }
                match queue.pop().await {
                    Some(item) => {
                        held.insert(item.seq, item.frame);
                    }
                    // Every pushed item has been popped, so nothing is
                    // missing; hand over whatever is still held.
                    None => return held.pop_first().map(|(_, frame)| frame),
                }
            },
        }
    }
}

impl MemoryTransport {
    fn new(out: Sender, inbox: Receiver) -> Self {
        MemoryTransport {
            out: Some(out),
            inbox,
            sent_close: false,
            finished: false,
        }
    }

    fn send_close(&mut self, close: Option<CloseFrame>) {
        if let Some(mut out) = self.out.take() {
            out.push(Frame::Close(close));
            out.finish();
        }
        self.sent_close = true;
    }

    fn send_now(&mut self, frame: Frame) -> Result<(), TransportError> {
        if let Frame::Close(close) = frame {
            self.send_close(close);
            return Ok(());
        }
        match self.out.as_mut() {
            Some(out) if !self.sent_close => {
                out.push(frame);
                Ok(())
            }
            _ => Err(TransportError::Closed),
        }
    }

    pub(crate) async fn recv_next(&mut self) -> Option<Result<Frame, TransportError>> {
        if self.finished {
            return None;
        }
        match self.inbox.next().await {
            Some(Frame::Close(close)) => {
                self.finished = true;
                if !self.sent_close {
                    // Answer the closing handshake, as a WebSocket does.
                    self.send_close(close.clone());
                }
                Some(Ok(Frame::Close(close)))
            }
            Some(frame) => Some(Ok(frame)),
            None => {
                self.finished = true;
                if self.sent_close {
                    None
                } else {
                    Some(Err(TransportError::ConnectionLost {
                        problem: "the other end of the in-memory pair was dropped".into(),
                    }))
                }
            }
        }
    }
}

impl Drop for MemoryTransport {
    /// Dropping an end without closing it is an abrupt disconnect: the peer
    /// sees the connection lost, as with a dropped socket.
    fn drop(&mut self) {
        if let Some(out) = self.out.take() {
            out.finish();
        }
    }
}

impl Transport for MemoryTransport {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        futures::future::ready(self.send_now(frame)).boxed()
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        self.recv_next().boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.send_close(close);
        futures::future::ready(Ok(())).boxed()
    }
}
