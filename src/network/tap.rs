//! What crossed the simulated network at the session's end of it.
//!
//! On a network, what the server wrote is not what the session got: a
//! frame in flight when a connection dies is lost, in either direction.
//! Checks that judge the session by what it was told must read what
//! reached it, so the session's connections are tapped below the session
//! (at the transport, the session's own input): every frame received, in
//! order, with the virtual time the session read it, and every frame the
//! session wrote, with its connection's number and how that connection
//! ended.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::transport::connector::BoxedTransport;
use crate::transport::{CloseFrame, Frame, Transport, TransportError};

/// The session's end of the network, recorded.
#[derive(Clone, Debug, Default)]
pub struct Heard {
    /// Every frame the session received, connection by connection (each
    /// connection's in order, the connections in the order they were
    /// opened): the order the session handles them in, since during a
    /// `goAway` move the new connection's first frames wait until the old
    /// one is left.
    pub received: Vec<Frame>,
    /// When the session read each frame of `received` (virtual time since
    /// the run began, one entry a frame, in the same order).
    pub received_at: Vec<Duration>,
    /// Every frame the session wrote: its connection (numbered from 1 in
    /// the order they were opened) and the frame.
    pub written: Vec<(u32, Frame)>,
    /// The connections that ended without a close frame either way (a
    /// drop, a keepalive that went unanswered, a reset): frames in flight
    /// on them may be lost.
    pub died: Vec<u32>,
}

/// A shared record of what the session's connections carried.
#[derive(Clone, Debug, Default)]
pub struct Tap {
    wire: Arc<Mutex<Wire>>,
}

/// What the tap has seen, as it arrives.
#[derive(Debug, Default)]
struct Wire {
    /// What each connection received (index: its number less one), and
    /// when.
    received: Vec<Vec<(Frame, Duration)>>,
    written: Vec<(u32, Frame)>,
    died: Vec<u32>,
}

impl Tap {
    /// What has been heard so far.
    pub fn heard(&self) -> Heard {
        let wire = self.lock();
        let received = wire.received.iter().flatten();
        Heard {
            received: received.clone().map(|(frame, _)| frame.clone()).collect(),
            received_at: received.map(|(_, at)| *at).collect(),
            written: wire.written.clone(),
            died: wire.died.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Wire> {
        self.wire.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `transport`, recorded as the next connection.
    pub(super) fn wrap(&self, transport: BoxedTransport) -> BoxedTransport {
        let connection = {
            let mut wire = self.lock();
            wire.received.push(Vec::new());
            u32::try_from(wire.received.len()).unwrap_or(u32::MAX)
        };
        Box::new(Tapped {
            inner: transport,
            tap: self.clone(),
            connection,
            ended: false,
        })
    }
}

struct Tapped {
    inner: BoxedTransport,
    tap: Tap,
    connection: u32,
    ended: bool,
}

impl Tapped {
    fn died(&mut self) {
        if !self.ended {
            self.ended = true;
            self.tap.lock().died.push(self.connection);
        }
    }
}

/// A connection the session let go of without a close, or that ended
/// under it, died.
impl Drop for Tapped {
    fn drop(&mut self) {
        self.died();
    }
}

impl Transport for Tapped {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        if matches!(frame, Frame::Close(_)) {
            self.ended = true;
        }
        self.tap
            .lock()
            .written
            .push((self.connection, frame.clone()));
        self.inner.send(frame)
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            let got = self.inner.recv().await;
            match &got {
                Some(Ok(frame)) => {
                    if matches!(frame, Frame::Close(_)) {
                        self.ended = true;
                    }
                    let at = usize::try_from(self.connection - 1).unwrap_or(usize::MAX);
                    let now = crate::executor::now();
                    if let Some(received) = self.tap.lock().received.get_mut(at) {
                        received.push((frame.clone(), now));
                    }
                }
                Some(Err(_)) | None => self.died(),
            }
            got
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        self.ended = true;
        self.tap
            .lock()
            .written
            .push((self.connection, Frame::Close(close.clone())));
        self.inner.close(close)
    }
}
