//! The session's own secrets, taken out of everything the server sends.
//!
//! A server may echo the key it was given (an error message quoting the
//! request, a close reason, a hostile fake). The session knows its key, so
//! every inbound frame and transport error passes through [`Redacted`]
//! before anything decodes, formats or stores it: decode warnings, setup
//! failures, in-band error reasons, `Disconnected` reasons, events and
//! the session log never hold it.

use futures::FutureExt;
use futures::future::BoxFuture;

use crate::transport::{CloseFrame, Frame, Transport, TransportError};
use crate::wire::Redactor;

/// A transport whose inbound frames and errors are scrubbed of the
/// session's secrets.
pub(crate) struct Redacted<T> {
    inner: T,
    redactor: Redactor,
}

impl<T: Transport> Redacted<T> {
    pub fn new(inner: T, redactor: Redactor) -> Self {
        Redacted { inner, redactor }
    }

    fn frame(&self, frame: Frame) -> Frame {
        if !self.redactor.knows_secrets() {
            return frame;
        }
        match frame {
            // Only the exact secrets: a server's text may say "bearer".
            Frame::Text(text) => match self.redactor.scrub_secrets(&text) {
                std::borrow::Cow::Borrowed(_) => Frame::Text(text),
                std::borrow::Cow::Owned(clean) => Frame::Text(clean),
            },
            Frame::Binary(bytes) if self.redactor.finds_secret_in_bytes(&bytes) => {
                Frame::Binary(self.redactor.scrub_bytes(&bytes))
            }
            Frame::Binary(bytes) => Frame::Binary(bytes),
            Frame::Close(close) => Frame::Close(close.map(|c| CloseFrame {
                code: c.code,
                reason: self.redactor.scrub(&c.reason).into_owned(),
            })),
        }
    }
}

impl<T: Transport> Transport for Redacted<T> {
    fn send(&mut self, frame: Frame) -> BoxFuture<'_, Result<(), TransportError>> {
        async move {
            let sent = self.inner.send(frame).await;
            sent.map_err(|e| e.redacted(&self.redactor))
        }
        .boxed()
    }

    fn recv(&mut self) -> BoxFuture<'_, Option<Result<Frame, TransportError>>> {
        async move {
            let received = self.inner.recv().await?;
            Some(match received {
                Ok(frame) => Ok(self.frame(frame)),
                Err(error) => Err(error.redacted(&self.redactor)),
            })
        }
        .boxed()
    }

    fn close(&mut self, close: Option<CloseFrame>) -> BoxFuture<'_, Result<(), TransportError>> {
        async move {
            let closed = self.inner.close(close).await;
            closed.map_err(|e| e.redacted(&self.redactor))
        }
        .boxed()
    }
}
